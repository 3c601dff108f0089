// The demo project of `ralphd demo`: a small beads project in a scratch git
// repository, and a scripted agent that works it, so a whole BUILD loop can
// be watched with no account and no network.
//
// The scripted agent (runScriptedDemoAgent) runs each attempt's steps and
// prints them as Claude-style stream-json. The end-to-end tests drive the
// real Claude Code through the same steps against a scripted model API.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/proc"
)

// demoPrefix is the demo tracker's issue prefix.
const demoPrefix = "demo"

// demoStep is one agent action: a shell command, or (Command empty) text.
type demoStep struct {
	Text    string
	Command string
}

// demoIssue is one demo issue and what the agent does on each attempt.
type demoIssue struct {
	ID, Title, Description, Acceptance string
	Priority                           int
	DependsOn                          string
	Attempts                           [][]demoStep // steps per attempt, 1-based order
}

func sh(cmd string) demoStep { return demoStep{Command: cmd} }
func say(t string) demoStep  { return demoStep{Text: t} }
func table(rows ...string) string {
	return "| criterion | command | expected exit |\n|---|---|---|\n" + strings.Join(rows, "\n")
}

// demoIssues is the demo project: four issues, one blocked by another, one that
// fails until its second attempt, and one whose work tempts the agent into
// a bd command BUILD mode may not run. Their priorities differ, so bd's
// order (priority, then newest first, at whole seconds) is the same on
// every run: demo-1, demo-2 twice, demo-4, demo-3.
func demoIssues() []demoIssue {
	return []demoIssue{
		{
			ID: "demo-1", Title: "Add a greeting", Priority: 0,
			Description: "Write greet.txt with a friendly greeting.",
			Acceptance:  table("| greeting exists | `test -s greet.txt` | 0 |"),
			Attempts: [][]demoStep{{
				sh("bd show demo-1 --json"),
				sh("echo 'Hello from the Ralph loop' > greet.txt && git add greet.txt && git commit -qm 'demo-1: add greeting'"),
				sh("test -s greet.txt && echo 'check passed'"),
				sh(`bd close demo-1 --reason "test -s greet.txt passes (exit 0); committed greet.txt"`),
				say("Closed demo-1: the greeting exists and its check passes."),
			}},
		},
		{
			ID: "demo-2", Title: "Parse the config file", Priority: 1,
			Description: "config.ini must hold a name= line; check-config.sh verifies it.",
			Acceptance:  table("| config parses | `sh check-config.sh` | 0 |"),
			Attempts: [][]demoStep{
				{
					sh("bd show demo-2 --json"),
					sh("sh check-config.sh"),
					say("check-config.sh fails: config.ini is missing. I could not finish this attempt; leaving demo-2 open."),
				},
				{
					sh("printf 'name=demo\\n' > config.ini && git add config.ini && git commit -qm 'demo-2: add config'"),
					sh("sh check-config.sh"),
					sh(`bd close demo-2 --reason "sh check-config.sh passes (exit 0); added config.ini"`),
					say("Closed demo-2 on the second attempt: the previous attempt's failure showed config.ini was missing."),
				},
			},
		},
		{
			ID: "demo-3", Title: "Tidy the backlog", Priority: 3,
			Description: "Look over the open demoIssues. demo-4 feels urgent.",
			Attempts: [][]demoStep{{
				say("demo-4 looks urgent; raising its priority."),
				sh("bd update demo-4 --priority 0"),
				say("BUILD mode may not change priorities. Leaving a note for PLANNING instead."),
				sh(`bd update demo-3 --append-notes "demo-4 looks more urgent than P2; PLANNING should re-prioritise it"`),
				sh(`bd close demo-3 --reason "reviewed the backlog; ran bd update --append-notes (exit 0) to leave the note for PLANNING"`),
			}},
		},
		{
			ID: "demo-4", Title: "Write release notes", Priority: 2, DependsOn: "demo-1",
			Description: "List what changed in NOTES.md. Needs the greeting first.",
			Acceptance:  table("| notes exist | `test -s NOTES.md` | 0 |"),
			Attempts: [][]demoStep{{
				sh("echo '- a greeting (demo-1)' > NOTES.md && git add NOTES.md && git commit -qm 'demo-4: release notes'"),
				sh(`bd close demo-4 --reason "test -s NOTES.md passes (exit 0); committed NOTES.md"`),
				say("Closed demo-4."),
			}},
		},
	}
}

const checkConfig = `#!/bin/sh
# Succeeds when config.ini has a name= line.
if [ ! -f config.ini ]; then
	echo "check-config.sh: config.ini: no such file or directory" >&2
	exit 1
fi
grep -q '^name=' config.ini || { echo "check-config.sh: no name= line" >&2; exit 1; }
echo "config ok"
`

// setUpDemoProject creates the demo project in dir (a new directory): a git
// repository with a committed work tree and a beads tracker holding the
// demo issues, created with bd (an absolute path).
func setUpDemoProject(ctx context.Context, dir, bd string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	run := func(name string, args ...string) error {
		if name == "git" {
			// A ~/.gitconfig the demo does not control may set hooks,
			// filters or an fsmonitor: none of them runs.
			_, err := git.Output(ctx, dir, args...)
			return err
		}
		cmd := proc.Command(ctx, time.Second, name, args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "BD_NON_INTERACTIVE=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
		}
		return nil
	}
	demoSteps := [][]string{
		{"git", "init", "-q"},
		{"git", "config", "user.name", "ralphd demo"},
		{"git", "config", "user.email", "demo@ralphd.invalid"},
		{"git", "config", "commit.gpgsign", "false"},
		{bd, "init", "--prefix", demoPrefix, "--quiet", "--non-interactive", "--skip-agents", "--skip-hooks"},
	}
	for _, s := range demoSteps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "check-config.sh"), []byte(checkConfig), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# ralphd demo project\n\nMade by `ralphd demo`.\n"), 0o644); err != nil {
		return err
	}
	for _, is := range demoIssues() {
		args := []string{"create", is.Title, "--id", is.ID, "-p", strconv.Itoa(is.Priority), "-d", is.Description, "--quiet"}
		if is.Acceptance != "" {
			args = append(args, "--acceptance", is.Acceptance)
		}
		if err := run(bd, args...); err != nil {
			return err
		}
		if is.DependsOn != "" {
			if err := run(bd, "dep", "add", is.ID, is.DependsOn, "--quiet"); err != nil {
				return err
			}
		}
	}
	for _, s := range [][]string{{"git", "add", "-A"}, {"git", "commit", "-qm", "demo project", "--no-verify"}} {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// demoSteps returns what the agent does on an attempt at an issue.
func demoSteps(id string, attempt int) []demoStep {
	for _, is := range demoIssues() {
		if is.ID == id {
			if attempt < 1 {
				attempt = 1
			}
			if attempt > len(is.Attempts) {
				attempt = len(is.Attempts)
			}
			return is.Attempts[attempt-1]
		}
	}
	return []demoStep{say("There is no script for " + id + ".")}
}

// runScriptedDemoAgent is the built-in scripted agent, for machines without claude:
// it runs the steps for $RALPH_ISSUE_ID's attempt $RALPH_ATTEMPT with sh
// in dir and prints them as Claude Code stream-json, so the run log reads
// like a real agent's. It returns the process exit code.
func runScriptedDemoAgent(ctx context.Context, dir string, getenv func(string) string, stdout io.Writer) int {
	attempt, _ := strconv.Atoi(getenv("RALPH_ATTEMPT"))
	id := getenv("RALPH_ISSUE_ID")
	session := fmt.Sprintf("demo-%s-%d", id, attempt)
	enc := json.NewEncoder(stdout)
	emit := func(v map[string]any) { v["session_id"] = session; _ = enc.Encode(v) }
	emit(map[string]any{"type": "system", "subtype": "init", "model": "ralphd-demo-agent", "tools": []string{"Bash"}})
	var final string
	for i, s := range demoSteps(id, attempt) {
		if s.Command == "" {
			final = s.Text
			emit(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": s.Text}}}})
			continue
		}
		toolID := fmt.Sprintf("toolu_demo_%d", i)
		emit(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": toolID, "name": "Bash", "input": map[string]any{"command": s.Command}},
		}}})
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		cmd := proc.Command(cctx, time.Second, "sh", "-c", s.Command)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": toolID, "content": strings.TrimSpace(string(out)), "is_error": err != nil},
		}}})
	}
	if final == "" {
		final = "Done."
	}
	emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": final, "num_turns": 1})
	return 0
}

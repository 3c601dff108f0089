//go:build linux

package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// fakeAgent is a stand-in for an agent CLI: it records its argv, stdin and
// environment in $REC, copies the policy file it was given, prints a
// recorded stream and runs the bd command that stream shows, as the real
// agent would have.
const fakeAgent = `#!/bin/sh
printf '%%s\n' "$@" > "$REC/argv"
cat > "$REC/stdin"
env > "$REC/env"
if [ -n "$CODEX_HOME" ]; then cat "$CODEX_HOME/rules/ralphd.rules" > "$REC/policy"; fi
prev=
for a in "$@"; do
  if [ "$prev" = --policy ]; then cat "$a" > "$REC/policy"; fi
  prev=$a
done
cat %q
%s
exit %d
`

// TestScenarioFakeAgents runs every backend through Run against a fake
// binary of its name found on PATH. The bd it calls must be the guard's
// (first on PATH through RunOptions.PathPrefix), not the one next to the
// agent, and the Outcome must be the fixture's.
func TestScenarioFakeAgents(t *testing.T) {
	tests := []struct {
		name    string
		b       Backend
		fixture string
		exit    int
		runsBD  bool // the fixture shows `bd close ...`
		status  Status
		text    string
		command string   // the shell command the outcome must list
		argv    []string // the argv the fake agent must get
		policy  string   // a substring of the compiled policy the agent could see
	}{
		{name: "codex ok", b: Codex{Now: clock}, fixture: "codex-success.jsonl", runsBD: true, status: StatusOK, text: promiseText,
			command: `bash -lc 'bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"'`,
			argv:    []string{"exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "-c", "sandbox_workspace_write.network_access=true", "-"},
			policy:  `pattern = ["bd", "delete"]`},
		{name: "codex usage limit", b: Codex{Now: clock}, fixture: "codex-usage-limit.jsonl", exit: 1, status: StatusRateLimited,
			argv: []string{"exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "-c", "sandbox_workspace_write.network_access=true", "-"}, policy: "forbidden"},
		{name: "opencode ok", b: Opencode{Now: clock}, fixture: "opencode-success.jsonl", runsBD: true, status: StatusOK, text: promiseText,
			command: closeCmd, argv: []string{"run", "--format", "json"}, policy: `"bd delete *":"deny"`},
		{name: "gemini ok", b: Gemini{Now: clock}, fixture: "gemini-success.jsonl", runsBD: true, status: StatusOK, text: promiseText,
			command: closeCmd, argv: []string{"--output-format", "stream-json", "--approval-mode", "yolo", "--policy"},
			policy: `commandPrefix = "bd delete"`},
		{name: "gemini quota", b: Gemini{Now: clock}, fixture: "gemini-error-quota.jsonl", exit: 1, status: StatusRateLimited,
			argv: []string{"--output-format", "stream-json", "--approval-mode", "yolo", "--policy"}, policy: "deny"},
		{name: "amp ok", b: Amp{Now: clock}, fixture: "amp-success.jsonl", runsBD: true, status: StatusOK, text: promiseText,
			command: closeCmd, argv: []string{"-x", "--stream-json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			rec, agentDir, guardDir := t.TempDir(), t.TempDir(), t.TempDir()
			fixture, err := filepath.Abs(filepath.Join("testdata", tt.fixture))
			is.NoErr(err)
			bdLine := ""
			if tt.runsBD {
				bdLine = `bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"`
			}
			script := fmt.Sprintf(fakeAgent, fixture, bdLine, tt.exit)
			is.NoErr(os.WriteFile(filepath.Join(agentDir, tt.b.Binary()), []byte(script), 0o755))
			// The real bd sits next to the agent; the guard's must shadow it.
			is.NoErr(os.WriteFile(filepath.Join(agentDir, "bd"), []byte("#!/bin/sh\ntouch \"$REC/real-bd\"\n"), 0o755))
			is.NoErr(os.WriteFile(filepath.Join(guardDir, "bd"),
				[]byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$REC/bd\"\necho \"✓ Closed $2\"\n"), 0o755))

			inv := Invocation{Mode: "build", IssueID: "bd-a1b2", Iteration: 3, Attempt: 1, Prompt: "work on bd-a1b2",
				Dir: t.TempDir(), ScratchDir: t.TempDir(), DenyBash: []string{"bd delete", "bd dep remove"}}
			t.Setenv("CODEX_HOME", filepath.Join(t.TempDir(), "absent")) // never touch a real ~/.codex
			var c collector
			out, err := Run(t.Context(), tt.b, inv, c.opts(RunOptions{
				Env:        []string{"PATH=" + agentDir + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "LC_ALL=C"},
				PathPrefix: guardDir,
				ExtraEnv:   []string{"REC=" + rec},
			}))
			is.NoErr(err)
			is.Equal(out.Status, tt.status)
			is.Equal(out.ExitCode, tt.exit)
			is.Equal(out.ResultText, tt.text)
			if tt.command != "" {
				is.Equal(out.Commands, []string{tt.command})
			}

			argv, err := os.ReadFile(filepath.Join(rec, "argv"))
			is.NoErr(err)
			is.True(strings.HasPrefix(string(argv), strings.Join(tt.argv, "\n")+"\n")) // argv
			stdin, err := os.ReadFile(filepath.Join(rec, "stdin"))
			is.NoErr(err)
			is.Equal(string(stdin), "work on bd-a1b2") // the prompt arrives on stdin
			env, err := os.ReadFile(filepath.Join(rec, "env"))
			is.NoErr(err)
			is.True(strings.Contains(string(env), "RALPH_ISSUE_ID=bd-a1b2\n"))
			is.True(strings.Contains(string(env), "PATH="+guardDir+":"+agentDir)) // the guard comes first
			if tt.policy != "" {
				policy := string(env)
				if data, err := os.ReadFile(filepath.Join(rec, "policy")); err == nil {
					policy = string(data)
				}
				if !strings.Contains(policy, tt.policy) {
					t.Errorf("the agent saw no policy with %q", tt.policy)
				}
			}

			_, err = os.Stat(filepath.Join(rec, "real-bd"))
			is.True(os.IsNotExist(err)) // the real bd was never called directly
			bd, err := os.ReadFile(filepath.Join(rec, "bd"))
			if !tt.runsBD {
				is.True(os.IsNotExist(err))
				return
			}
			is.NoErr(err)
			is.Equal(string(bd), "close\nbd-a1b2\n--reason\nImplemented retry backoff; tests pass\n")
			is.True(len(c.events) > 0)
			is.Equal(c.events[0].Kind, EventInit)
		})
	}
}

// TestScenarioMissingAgents checks that a missing agent binary is a fatal
// setup error whose reason says how to install it.
func TestScenarioMissingAgents(t *testing.T) {
	tests := []struct {
		b    Backend
		hint string
	}{
		{Codex{}, "npm install -g @openai/codex"},
		{Opencode{}, "npm install -g opencode-ai"},
		{Gemini{}, "npm install -g @google/gemini-cli"},
		{Amp{}, "npm install -g @sourcegraph/amp"},
	}
	for _, tt := range tests {
		t.Run(tt.b.Name(), func(t *testing.T) {
			is := is.New(t)
			out, err := Run(t.Context(), tt.b, Invocation{Prompt: "p"}, RunOptions{Env: []string{"PATH=" + t.TempDir()}})
			is.NoErr(err)
			is.Equal(out.Status, StatusFatal)
			is.True(strings.Contains(out.Reason, tt.b.Binary()+" not found on PATH"))
			is.True(strings.Contains(out.Reason, tt.hint)) // says how to install it
		})
	}
}

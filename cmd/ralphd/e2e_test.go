package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// The end-to-end suite runs ralphd with the real Claude Code CLI, the
// stand-in bd, and a scripted Messages API: the model is the only fake.
// It needs claude (scripts/install-claude puts the pinned version in
// .tools/, and scripts/test runs that): without it the suite skips, unless
// CI is set, where it must run.

func claudeOrSkip(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	p, err := scriptedapi.FindClaude(wd)
	if err != nil || p == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but claude is not installed (%v): scripts/test installs it with scripts/install-claude", err)
		}
		t.Skip("claude is not installed; run scripts/install-claude to run the end-to-end suite")
	}
	return p
}

// e2e is one end-to-end scenario: a scratch project with the stand-in bd,
// a scripted model, and the real claude.
type e2e struct {
	t     *testing.T
	home  string
	repo  string
	state string
	env   []string
	srv   *scriptedapi.Server
}

func newE2E(t *testing.T, subscription bool, scripts ...scriptedapi.Script) *e2e {
	t.Helper()
	t.Parallel() // each scenario has its own dirs and model: they mostly wait on claude
	claude := claudeOrSkip(t)
	bdDir := standinBin(t)
	work := t.TempDir()
	e := &e2e{t: t, home: work, repo: filepath.Join(work, "repo"), state: filepath.Join(work, "state")}
	e.srv = scriptedapi.New(scripts...)
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Close)
	auth := e.srv.Env()
	if subscription {
		auth = e.srv.SubscriptionEnv()
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "CLAUDE_CODE_OAUTH") {
			env = append(env, kv)
		}
	}
	e.env = append(env, auth...)
	e.env = append(e.env,
		"PATH="+bdDir+string(os.PathListSeparator)+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+work, "XDG_CONFIG_HOME="+filepath.Join(work, "config"), "RALPH_STATE_DIR="+e.state,
		"GIT_AUTHOR_NAME=Test User", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test User", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_NOSYSTEM=1",
		"BEADS_ACTOR=Test User", "NO_COLOR=1",
		"CLAUDE_CODE_MAX_RETRIES=0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	)
	if os.Getenv("CI") != "" {
		// CI runs the whole suite sandboxed, or fails (scripts/test
		// installs bubblewrap).
		e.env = append(e.env, "RALPH_SANDBOX=bwrap")
	}
	if err := os.Mkdir(e.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	e.run("git", "init", "-q")
	e.bd("init", "--prefix", "e2e", "--quiet", "--non-interactive")
	return e
}

func (e *e2e) run(name string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = e.repo, e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func (e *e2e) bd(args ...string) string {
	e.t.Helper()
	return e.run(filepath.Join(standinBin(e.t), "bd"), args...)
}

// ralphd runs ralphd and returns its stdout, stderr and exit code.
func (e *e2e) ralphd(args ...string) (string, string, int) {
	e.t.Helper()
	// A safety net for a stuck run, not a timing assertion.
	ctx, cancel := context.WithTimeout(e.t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ralphd", args...)
	cmd.Dir, cmd.Env = e.repo, e.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func (e *e2e) agentRequests() int {
	n := 0
	for _, r := range e.srv.Requests() {
		if r.Kind == scriptedapi.KindAgent {
			n++
		}
	}
	return n
}

func forIssue(id string, turns ...scriptedapi.Turn) scriptedapi.Script {
	return scriptedapi.Script{Name: id, Match: scriptedapi.PromptContains("**ID:** " + id), Turns: turns}
}

// The agent reads its issue, runs a check, and closes it citing the check:
// the issue is closed, attempts are reset, and the log holds both ralphd's
// events and Claude's own stream-json lines, and renders.
func TestE2ECloseWithEvidence(t *testing.T) {
	is := is.New(t)
	e := newE2E(t, false, forIssue("e2e-a",
		// A turn's checks look at the tool results of the turn before it.
		scriptedapi.Bash("bd show e2e-a --json"),
		scriptedapi.Bash("echo hi > hello.txt && test -s hello.txt && echo check passed").Expect(scriptedapi.Contains(`"id": "e2e-a"`)),
		scriptedapi.Bash(`bd close e2e-a --reason "test -s hello.txt passes (exit 0)"`).Expect(scriptedapi.Contains("check passed")),
		scriptedapi.Say("Closed e2e-a. <promise>COMPLETE</promise>").Expect(scriptedapi.Succeeded()),
	))
	e.bd("create", "Say hello", "--id", "e2e-a", "-p", "1", "--quiet")

	out, stderr, code := e.ralphd("build", "5", "--agent", "claude", "--log")
	is.Equal(code, 0) // all work done
	is.True(strings.Contains(out, "closed: 1 of 1 tried"))
	is.NoErr(e.srv.Verify()) // the model's script ran to its end, every check held
	is.True(strings.Contains(e.bd("show", "e2e-a", "--json"), `"status": "closed"`))
	status, _, _ := e.ralphd("status", "--json")
	is.True(strings.Contains(status, `"attempts": []`)) // reset on close

	raw, _, _ := e.ralphd("logs", "last", "--raw")
	var meta, claudeInit, claudeResult int
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		is.True(json.Valid([]byte(line))) // every line is JSON
		switch {
		case strings.HasPrefix(line, `{"type":"loop_meta"`):
			meta++
		case strings.HasPrefix(line, `{"type":"system","subtype":"init"`) && strings.Contains(line, `"claude_code_version":"2.1.197"`):
			claudeInit++ // Claude's own line, not re-encoded
		case strings.HasPrefix(line, `{"type":"result"`):
			claudeResult++
		}
	}
	is.True(meta >= 4) // run_start, iteration_start, bd_calls, iteration_end, run_end
	is.Equal(claudeInit, 1)
	is.Equal(claudeResult, 1)
	rendered, _, _ := e.ralphd("logs", "last")
	is.True(strings.Contains(rendered, `$ bd close e2e-a --reason "test -s hello.txt passes (exit 0)"`))
	is.True(strings.Contains(rendered, "iteration 1: closed"))
	_ = stderr
}

// The agent fails twice, then succeeds on its third attempt.
func TestE2EFailTwiceThenSucceed(t *testing.T) {
	is := is.New(t)
	fail := func() scriptedapi.Script {
		return forIssue("e2e-a", scriptedapi.Bash("sh -c 'echo tests fail; exit 1'"), scriptedapi.Say("Tests fail; leaving it open.").Expect(scriptedapi.Failed()))
	}
	e := newE2E(t, false, fail(), fail(), forIssue("e2e-a",
		scriptedapi.Bash(`bd close e2e-a --reason "go test ./... passes (exit 0)"`),
		scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
	))
	e.bd("create", "Flaky", "--id", "e2e-a", "-p", "1", "--quiet")
	out, stderr, code := e.ralphd("build", "5", "--agent", "claude")
	is.Equal(code, 0)
	is.True(strings.Contains(out, "iterations: 3, closed: 1 of 1 tried"))
	is.True(strings.Contains(stderr, "iteration 3: e2e-a \"Flaky\" (attempt 3/3)"))
	is.NoErr(e.srv.Verify())
	status, _, _ := e.ralphd("status", "--json")
	is.True(strings.Contains(status, `"attempts": []`))
}

// In BUILD mode the agent tries `bd dep remove` and `bd update --priority`:
// both are refused, the refusal reaches the model as the tool result, and
// nothing changes in bd.
func TestE2EForbiddenCommandsRefused(t *testing.T) {
	is := is.New(t)
	refused := []scriptedapi.Check{scriptedapi.Failed(), scriptedapi.Contains("BUILD mode")}
	e := newE2E(t, false, forIssue("e2e-a",
		scriptedapi.Bash("bd dep remove e2e-b e2e-c"),
		scriptedapi.Bash("bd update e2e-b --priority 0").Expect(refused...),
		scriptedapi.Say("Both were refused; leaving a note for PLANNING.").Expect(refused...),
	))
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	e.bd("create", "Later", "--id", "e2e-b", "-p", "2", "--quiet")
	e.bd("create", "Blocker", "--id", "e2e-c", "-p", "3", "--quiet")
	e.bd("dep", "add", "e2e-b", "e2e-c", "--quiet")

	_, _, code := e.ralphd("build", "1", "--agent", "claude")
	is.Equal(code, 3) // one iteration, work left
	is.NoErr(e.srv.Verify())
	results := e.srv.ToolResults()
	is.Equal(len(results), 2)
	for _, r := range results {
		is.True(r.IsError)                                 // the model was told it failed...
		is.True(strings.Contains(r.Content, "BUILD mode")) // ...and why
	}
	b := e.bd("show", "e2e-b", "--json")
	is.True(strings.Contains(b, `"priority": 2`))
	is.True(strings.Contains(b, `"id": "e2e-c"`)) // the dependency is still there
}

// In a sandboxed BUILD, the model asks to run the real bd by its absolute
// path to change a priority, and to edit the tracker's files directly. Both
// fail inside the sandbox at the moment they are tried (nothing to revert
// later), the failure reaches the model as the tool result, and the
// tracker is unchanged.
func TestE2ESandboxStopsWritesAroundTheBroker(t *testing.T) {
	is := is.New(t)
	realBD := filepath.Join(standinBin(t), "bd")
	readOnly := []scriptedapi.Check{scriptedapi.Failed(), scriptedapi.Matches("(?i)read-only file system")}
	e := newE2E(t, false, forIssue("e2e-a",
		// Through a script, so that the PreToolUse hook does not see the
		// call: the sandbox is what stops it.
		scriptedapi.Bash("printf '#!/bin/sh\\nexec "+realBD+" update e2e-b --priority 0\\n' > p.sh && sh p.sh"),
		scriptedapi.Bash("echo '{}' > .beads/metadata.json").Expect(readOnly...),
		scriptedapi.Bash("bd show e2e-b --json").Expect(readOnly...),
		scriptedapi.Say("Both were refused; leaving it for PLANNING.").Expect(scriptedapi.Contains(`"priority": 2`)),
	))
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	e.bd("create", "Later", "--id", "e2e-b", "-p", "2", "--quiet")
	meta, err := os.ReadFile(filepath.Join(e.repo, ".beads", "metadata.json"))
	is.NoErr(err)

	_, stderr, code := e.ralphd("build", "1", "--agent", "claude", "--sandbox", "bwrap", "--log")
	is.Equal(code, 3) // one iteration, work left
	is.NoErr(e.srv.Verify())
	results := e.srv.ToolResults()
	is.Equal(len(results), 3)
	for _, r := range results[:2] {
		is.True(r.IsError)                                                             // the model was told it failed...
		is.True(strings.Contains(strings.ToLower(r.Content), "read-only file system")) // ...and why
	}
	is.True(strings.Contains(e.bd("show", "e2e-b", "--json"), `"priority": 2`)) // the tracker is unchanged
	after, err := os.ReadFile(filepath.Join(e.repo, ".beads", "metadata.json"))
	is.NoErr(err)
	is.Equal(string(after), string(meta))
	is.True(!strings.Contains(stderr, "forbidden change reverted")) // nothing got through to revert
	raw, _, _ := e.ralphd("logs", "last", "--raw")
	is.True(strings.Contains(raw, `"sandbox":"bwrap"`)) // the log says the agent ran sandboxed
	status, _, _ := e.ralphd("status")
	is.True(strings.Contains(status, "BUILD agent sandboxed (bwrap)"))
}

// A sandboxed Claude Code, told to plant what the next unsandboxed claude
// (PLANNING, or your own session) would run: a hook in its settings, a
// settings file and a hooks dir where there were none, an MCP server in
// ~/.claude.json, and an object in the XDG cache, where a build cache
// would hand it to your next build. The settings that exist are
// read-only at the moment it tries; what it made is moved aside after the
// iteration, as a violation; ~/.claude.json and the cache were copies of
// its own. Everything of yours is as it was.
func TestE2ESandboxKeepsAgentConfig(t *testing.T) {
	is := is.New(t)
	readOnly := []scriptedapi.Check{scriptedapi.Failed(), scriptedapi.Matches("(?i)read-only file system")}
	hook := `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}`
	// Scripts, so that Claude Code's own permission layer, which asks
	// before a command writes its settings, does not see the writes: the
	// sandbox is what stops them.
	e := newE2E(t, false, forIssue("e2e-a",
		scriptedapi.Bash("sh plant-settings.sh"),
		scriptedapi.Bash("sh plant-new.sh").Expect(readOnly...),
		scriptedapi.Bash("sh plant-copies.sh").Expect(scriptedapi.Contains("planted")),
		scriptedapi.Bash(`bd close e2e-a --reason "test -s hello.txt passes (exit 0)"`).Expect(scriptedapi.Contains("copies")),
		scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
	))
	for name, script := range map[string]string{
		"plant-settings.sh": "echo '" + hook + "' > ~/.claude/settings.json\n",
		"plant-new.sh":      "echo '" + hook + "' > ~/.claude/settings.local.json && mkdir -p ~/.claude/hooks && echo evil > ~/.claude/hooks/h.sh && echo planted\n",
		"plant-copies.sh": "echo '{\"mcpServers\":{\"x\":{\"command\":\"sh\"}}}' > ~/.claude.json && echo poison > ~/.cache/go-build-poison && " +
			"mkdir -p ~/.claude/session-env/s && echo evil > ~/.claude/session-env/s/sessionstart-hook-0.sh && echo copies\n",
	} {
		is.NoErr(os.WriteFile(filepath.Join(e.repo, name), []byte(script), 0o644))
	}
	e.run("git", "add", "-A")
	e.run("git", "commit", "-qm", "scripts")
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	settings := filepath.Join(e.home, ".claude", "settings.json")
	is.NoErr(os.MkdirAll(filepath.Dir(settings), 0o700))
	is.NoErr(os.WriteFile(settings, []byte(`{"env":{"MINE":"1"}}`), 0o600))
	state := filepath.Join(e.home, ".claude.json")
	is.NoErr(os.WriteFile(state, []byte(`{"numStartups":1}`), 0o600))

	_, stderr, code := e.ralphd("build", "1", "--agent", "claude", "--sandbox", "bwrap", "--log")
	t.Logf("ralphd build: exit %d\n%s", code, stderr)
	is.NoErr(e.srv.Verify())
	is.Equal(code, 3)                                                              // a violation: the close is undone, work left
	is.True(strings.Contains(e.bd("show", "e2e-a", "--json"), `"status": "open"`)) // reopened: closed among forbidden changes
	b, err := os.ReadFile(settings)
	is.NoErr(err)
	is.Equal(string(b), `{"env":{"MINE":"1"}}`) // read-only when the agent tried
	b, err = os.ReadFile(state)
	is.NoErr(err)
	is.Equal(string(b), `{"numStartups":1}`) // the agent wrote its copy
	for _, gone := range []string{".claude/settings.local.json", ".claude/hooks", ".cache/go-build-poison"} {
		_, err := os.Lstat(filepath.Join(e.home, gone))
		is.True(errors.Is(err, os.ErrNotExist)) // moved aside, or never there
	}
	moved, _ := filepath.Glob(filepath.Join(e.home, ".claude", "*.ralphd-moved-*"))
	is.Equal(len(moved), 2) // settings.local.json and hooks, kept beside
	is.True(strings.Contains(stderr, "BUILD changed an agent CLI's configuration: put back"))
	raw, _, _ := e.ralphd("logs", "last", "--raw")
	is.True(strings.Contains(raw, `"kind":"agent_config_changed"`))
	cached, _ := filepath.Glob(filepath.Join(e.home, ".cache", "ralph", "sandbox", "*", "go-build-poison"))
	is.Equal(len(cached), 1) // in the agent's own cache
	_, err = os.Lstat(filepath.Join(e.home, ".claude", "session-env", "s"))
	is.True(errors.Is(err, os.ErrNotExist)) // a session env script never reaches the user's...
	private, _ := filepath.Glob(filepath.Join(e.home, ".cache", "ralph", "sandbox", "*.private", e.home, ".claude", "session-env", "s", "sessionstart-hook-0.sh"))
	is.Equal(len(private), 1) // ...but the agent's own dir
}

// With the default network=allowlist, the sandboxed claude reaches its
// scripted model on the host's loopback only through ralphd's proxy (the
// sandbox has a network namespace of its own: the model's 127.0.0.1 is
// not the sandbox's). Another port on the same loopback, a stand-in for
// the Dolt server or any service of the user's, gets the proxy's 403,
// which ralphd logs with the host and counts; bypassing the proxy
// reaches nothing.
func TestE2ESandboxNetworkAllowlist(t *testing.T) {
	is := is.New(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "secret") }))
	defer other.Close()
	e := newE2E(t, false, forIssue("e2e-a",
		scriptedapi.Bash("curl -sS -w ' %{http_code}\\n' "+other.URL+"/steal"),
		scriptedapi.Bash("curl -sS --noproxy '*' --max-time 5 "+other.URL+"/steal").Expect(
			scriptedapi.Contains("is not on the sandbox's network allowlist"), scriptedapi.Contains(" 403")),
		scriptedapi.Say("Refused, as it should be.").Expect(scriptedapi.Failed()),
	))
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	_, stderr, code := e.ralphd("build", "1", "--agent", "claude", "--sandbox", "bwrap")
	is.Equal(code, 3)        // one iteration, work left
	is.NoErr(e.srv.Verify()) // the model was reached, through the proxy, and every check held
	for _, r := range e.srv.ToolResults() {
		is.True(!strings.Contains(r.Content, "secret")) // the other service never answered
	}
	host := strings.TrimPrefix(other.URL, "http://")
	is.True(strings.Contains(stderr, "the sandbox refused a connection")) // logged...
	is.True(strings.Contains(stderr, host))                               // ...with the host
	is.True(strings.Contains(stderr, "count=1"))                          // and counted
}

// The API answers 401: the agent is unusable, so ralphd stops at once with
// exit 5 after that one agent run, counting no attempt.
func TestE2EInvalidKey(t *testing.T) {
	is := is.New(t)
	e := newE2E(t, false, forIssue("e2e-a", scriptedapi.Fail(scriptedapi.InvalidKey())))
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	_, stderr, code := e.ralphd("build", "5", "--agent", "claude")
	is.Equal(code, 5)
	is.True(strings.Contains(stderr, "Invalid API key"))
	is.Equal(e.agentRequests(), 1) // no retry burned on it
	status, _, _ := e.ralphd("status", "--json")
	is.True(strings.Contains(status, `"attempts": []`))
}

// A subscription usage limit with a reset time: no attempt is counted,
// ralphd waits (capped by quota_backoff_max) and goes on.
func TestE2EUsageLimitWaits(t *testing.T) {
	is := is.New(t)
	e := newE2E(t, true,
		forIssue("e2e-a", scriptedapi.Fail(scriptedapi.UsageLimit("five_hour", time.Now().Add(time.Hour), time.Hour))),
		forIssue("e2e-a",
			scriptedapi.Bash(`bd close e2e-a --reason "go test ./... passes (exit 0)"`),
			scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
		),
	)
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	out, stderr, code := e.ralphd("build", "5", "--agent", "claude", "--quota-backoff-max", "1s")
	is.Equal(code, 0)
	is.True(strings.Contains(stderr, "agent rate-limited; waiting"))
	is.True(strings.Contains(stderr, `iteration 1: e2e-a "Work" (attempt 1/3)`)) // the limited run gave its attempt back
	is.True(!strings.Contains(stderr, "attempt 2/3"))
	is.True(strings.Contains(out, "iterations: 1, closed: 1 of 1 tried"))
	is.NoErr(e.srv.Verify())
}

// The API hangs: the iteration timeout stops claude's whole process tree.
func TestE2EHangTimesOut(t *testing.T) {
	is := is.New(t)
	e := newE2E(t, false, forIssue("e2e-a", scriptedapi.Fail(scriptedapi.Hang())))
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	_, stderr, code := e.ralphd("build", "1", "--agent", "claude", "--iteration-timeout", "4s", "--stop-grace", "1s")
	is.Equal(code, 3)
	is.True(strings.Contains(stderr, "outcome=timeout"))
	is.Equal(len(agentProcesses(e.home)), 0) // nothing of claude's tree survived
}

// `ralphd demo --agent claude` with the real Claude Code against the
// scripted model, through the same steps the built-in agent runs.
func TestE2EDemo(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	claude := claudeOrSkip(t)
	bdDir := standinBin(t)
	srv := scriptedapi.New(demoScripts()...)
	is.NoErr(srv.Start())
	t.Cleanup(srv.Close)
	cmd := exec.Command("ralphd", "demo", "--agent", "claude")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+bdDir+string(os.PathListSeparator)+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NO_COLOR=1", "HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, srv.Env()...)
	out, err := cmd.CombinedOutput()
	is.NoErr(err) // the demo exits 0
	s := string(out)
	is.True(strings.Contains(s, "the agent is the real Claude Code"))
	is.True(strings.Contains(s, "closed: 4 of 4 tried"))
	is.True(strings.Contains(s, "PreToolUse:Bash hook error")) // the hook refused the priority change
}

// demoScripts is the demo for the scripted Messages API: one conversation per
// attempt, matched to the issue by its id in the prompt, in attempt order.
func demoScripts() []scriptedapi.Script {
	var out []scriptedapi.Script
	for _, is := range demoIssues() {
		for n, attempt := range is.Attempts {
			var turns []scriptedapi.Turn
			var text string
			for _, s := range attempt {
				if s.Command == "" {
					text = strings.TrimSpace(text + " " + s.Text)
					continue
				}
				t := scriptedapi.Bash(s.Command)
				if text != "" {
					t = t.Saying(text)
					text = ""
				}
				turns = append(turns, t)
			}
			if text == "" {
				text = "Done."
			}
			turns = append(turns, scriptedapi.Say(text))
			out = append(out, scriptedapi.Script{
				Name:  fmt.Sprintf("%s attempt %d", is.ID, n+1),
				Match: scriptedapi.PromptContains("**ID:** " + is.ID),
				Turns: turns,
			})
		}
	}
	return out
}

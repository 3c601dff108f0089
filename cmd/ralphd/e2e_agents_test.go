package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// The end-to-end suite of a list of agents (config agents): the real
// Claude Code and Codex under one `ralphd build --agents claude,codex`,
// each against the scripted model API in its own wire format. The
// scripts are consumed in order, so the first agent to ask for an issue
// gets the first script for it.
//
// The runs are not sandboxed (--sandbox off): under bwrap here, Codex
// reaches neither the scripted API on the loopback nor ralphd's bd broker,
// with one agent as with several (TestE2ECLICloseWithEvidence/codex fails
// alike). Which backend's hosts and dirs the sandbox of an iteration gets
// is tested in internal/modes (TestRotaSandboxFollowsTheAgent).

// newAgentsE2E is newCLIE2E for Codex with Claude Code beside it, both
// pointed at the one scripted server; subscription picks Claude's
// subscription login (whose limits are usage limits) over an API key.
func newAgentsE2E(t *testing.T, subscription bool, scripts ...scriptedapi.Script) *e2e {
	t.Helper()
	t.Parallel()
	claude := cliOrSkip(t, "claude")
	var codex cliBackend
	for _, b := range cliBackends {
		if b.name == "codex" {
			codex = b
		}
	}
	e := newCLIE2E(t, codex, scripts...)
	auth := e.srv.Env()
	if subscription {
		auth = e.srv.SubscriptionEnv()
	}
	path := ""
	for _, kv := range e.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v // the last one is the one that applies
		}
	}
	e.env = append(e.env, auth...)
	e.env = append(e.env, "PATH="+filepath.Dir(claude)+string(os.PathListSeparator)+path,
		"CLAUDE_CODE_MAX_RETRIES=0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	return e
}

// agentOf returns which CLI sent a scripted request, by the API it spoke.
func agentOf(r scriptedapi.Request) string {
	switch {
	case strings.HasSuffix(r.Path, "/messages"):
		return "claude"
	case strings.HasSuffix(r.Path, "/responses"):
		return "codex"
	}
	return r.Path
}

// scriptedBy lists, in order, which CLI asked for each script's first
// turn.
func scriptedBy(e *e2e) []string {
	var out []string
	for _, r := range e.srv.Requests() {
		if r.Kind == scriptedapi.KindAgent && r.Turn == 0 {
			out = append(out, r.Script+" "+agentOf(r))
		}
	}
	return out
}

// Claude hits its usage limit on the first issue: Codex takes that issue
// up at once, with no wait and no attempt counted, and closes it. Codex
// takes longer than Claude's limit (capped at 5 s), so the second issue
// goes back to Claude, the first in the list.
func TestE2EAgentsFallBackOnUsageLimit(t *testing.T) {
	is := is.New(t)
	closeA := `bd close e2e-a --reason "go test ./... passes (exit 0)"`
	closeB := `bd close e2e-b --reason "go test ./... passes (exit 0)"`
	e := newAgentsE2E(t, true,
		scriptedapi.Script{Name: "a limited", Match: scriptedapi.PromptContains("**ID:** e2e-a"),
			Turns: []scriptedapi.Turn{scriptedapi.Fail(scriptedapi.UsageLimit("five_hour", time.Now().Add(time.Hour), time.Hour))}},
		scriptedapi.Script{Name: "a closed", Match: scriptedapi.PromptContains("**ID:** e2e-a"), Turns: []scriptedapi.Turn{
			scriptedapi.Bash("sleep 6"),
			scriptedapi.Bash(closeA),
			scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
		}},
		scriptedapi.Script{Name: "b closed", Match: scriptedapi.PromptContains("**ID:** e2e-b"), Turns: []scriptedapi.Turn{
			scriptedapi.Bash(closeB),
			scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
		}},
	)
	e.bd("create", "First", "--id", "e2e-a", "-p", "1", "--quiet")
	e.bd("create", "Second", "--id", "e2e-b", "-p", "2", "--quiet")
	out, stderr, code := e.ralphd("build", "5", "--agents", "claude,codex", "--sandbox", "off", "--log", "--quota-backoff-max", "5s")
	t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	is.NoErr(e.srv.Verify())
	is.Equal(code, 0)
	is.Equal(scriptedBy(e), []string{"a limited claude", "a closed codex", "b closed claude"}) // Claude, Codex, Claude again
	is.True(strings.Contains(out, "iterations: 2, closed: 2 of 2 tried"))                      // the limited run was no iteration
	is.True(!strings.Contains(stderr, "attempt 2/3"))                                          // nor an attempt
	is.True(!strings.Contains(stderr, "agent rate-limited; waiting"))                          // and cost no wait
	is.True(strings.Contains(out, "agents: claude 2 iterations, codex 1 iteration"))
	raw, _, _ := e.ralphd("logs", "last", "--raw")
	is.True(regexp.MustCompile(`"event":"iteration_end".*"issue_id":"e2e-a".*"issue_closed":true.*"agent":"codex"`).MatchString(raw))
	is.True(regexp.MustCompile(`"event":"iteration_end".*"issue_id":"e2e-b".*"issue_closed":true.*"agent":"claude"`).MatchString(raw))
	status, _, _ := e.ralphd("status", "--json")
	is.True(strings.Contains(status, `"name": "codex"`)) // the last run's iterations by agent
}

// Claude's key is refused: it is out for the run and Codex does the work.
// With Codex's refused too, no agent is left: exit 5, as with one agent.
func TestE2EAgentsInvalidKey(t *testing.T) {
	t.Run("one", func(t *testing.T) {
		is := is.New(t)
		e := newAgentsE2E(t, false,
			forIssue("e2e-a", scriptedapi.Fail(scriptedapi.InvalidKey())),
			forIssue("e2e-a",
				scriptedapi.Bash(`bd close e2e-a --reason "go test ./... passes (exit 0)"`),
				scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
			),
		)
		e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
		out, stderr, code := e.ralphd("build", "5", "--agents", "claude,codex", "--sandbox", "off", "--log")
		t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		is.NoErr(e.srv.Verify())
		is.Equal(code, 0)
		is.Equal(scriptedBy(e), []string{"e2e-a claude", "e2e-a codex"})
		is.True(regexp.MustCompile(`dropped agent claude: .*cannot authenticate`).MatchString(out)) // the summary says who and why
		is.True(strings.Contains(out, "iterations: 1, closed: 1 of 1 tried"))
		raw, _, _ := e.ralphd("logs", "last", "--raw")
		is.True(strings.Contains(raw, `"decision":"drop_agent"`))
	})
	t.Run("all", func(t *testing.T) {
		is := is.New(t)
		e := newAgentsE2E(t, false,
			forIssue("e2e-a", scriptedapi.Fail(scriptedapi.InvalidKey())),
			forIssue("e2e-a", scriptedapi.Fail(scriptedapi.InvalidKey())),
		)
		e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
		out, stderr, code := e.ralphd("build", "5", "--agents", "claude,codex", "--sandbox", "off")
		t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		is.NoErr(e.srv.Verify())
		is.Equal(code, 5)
		is.Equal(scriptedBy(e), []string{"e2e-a claude", "e2e-a codex"}) // one run each, no retry burned
		is.True(strings.Contains(stderr, "cannot authenticate"))
		status, _, _ := e.ralphd("status", "--json")
		is.True(strings.Contains(status, `"attempts": []`))
	})
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// Resuming an interrupted session, with the real Claude Code and Codex
// against the scripted APIs: the first run does some work (a command that
// prints first-marker), then hangs on the model; ralphd times it out, or
// is SIGKILLed. The next iteration resumes the same session, and the
// model sees the earlier conversation (first-marker) and ralphd's resume
// prompt in the request it answers, then closes the issue. The attempt is
// counted once.

// resumeCLI is one CLI that resumes, and how to start its end-to-end run.
type resumeCLI struct {
	name    string
	timeout string // an iteration timeout that lets the CLI start and reach the model
	start   func(t *testing.T, scripts ...scriptedapi.Script) *e2e
}

var resumeCLIs = []resumeCLI{
	{name: "claude", timeout: "25s", start: func(t *testing.T, s ...scriptedapi.Script) *e2e { return newE2E(t, false, s...) }},
	{name: "codex", timeout: "40s", start: func(t *testing.T, s ...scriptedapi.Script) *e2e {
		t.Parallel()
		return newCLIE2E(t, cliBackends[0], s...)
	}},
	// opencode resumes its run's own database (OPENCODE_DB) and sends the
	// same session id (X-Session-Id): the same conversation goes on.
	{name: "opencode", timeout: "60s", start: func(t *testing.T, s ...scriptedapi.Script) *e2e {
		t.Parallel()
		return newCLIE2E(t, cliBackends[1], s...)
	}},
}

// resumeScript is the model's side: work, hang, then (resumed) close.
func resumeScript() scriptedapi.Script {
	return forIssue("e2e-a",
		scriptedapi.Bash("echo first-marker"),
		scriptedapi.Fail(scriptedapi.Hang()),
		scriptedapi.Bash(`bd close e2e-a --reason "echo first-marker passes (exit 0)"`),
		scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
	)
}

// checkResumed asserts that the model answered the resumed session: one
// fresh start only, and the request after the hang carries the earlier
// conversation and ralphd's resume prompt.
func checkResumed(t *testing.T, e *e2e, why string) {
	t.Helper()
	is := is.New(t)
	var fresh int
	var resumed *scriptedapi.Request
	for _, r := range e.srv.Requests() {
		if r.Kind != scriptedapi.KindAgent || r.Script != "e2e-a" {
			continue
		}
		if r.Turn == 0 {
			fresh++
		}
		if r.Turn == 2 {
			resumed = &r
		}
	}
	is.Equal(fresh, 1)      // one fresh session, no restart from nothing
	is.True(resumed != nil) // the session went on
	raw := string(resumed.Raw)
	is.True(strings.Contains(raw, "first-marker"))          // the earlier conversation
	is.True(strings.Contains(raw, "this session on e2e-a")) // ralphd's resume prompt
	is.True(strings.Contains(raw, why))                     // says what happened
	is.True(strings.Contains(raw, "no forbidden change"))   // and what ralphd found
	raw2, _, _ := e.ralphd("logs", "last", "--raw")
	var starts int
	for _, line := range strings.Split(raw2, "\n") {
		if !strings.Contains(line, `"event":"iteration_start"`) {
			continue
		}
		var ev struct {
			Data struct {
				Resumed   bool   `json:"resumed"`
				SessionID string `json:"session_id"`
			} `json:"data"`
		}
		is.NoErr(json.Unmarshal([]byte(line), &ev))
		if ev.Data.Resumed {
			starts++
			is.True(ev.Data.SessionID != "")
		}
	}
	is.Equal(starts, 1) // the run log says which iteration resumed, and which session
	is.True(strings.Contains(e.bd("show", "e2e-a", "--json"), `"status": "closed"`))
}

func TestE2EResumeAfterTimeout(t *testing.T) {
	for _, c := range resumeCLIs {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			start := time.Now()
			e := c.start(t, resumeScript())
			e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
			out, stderr, code := e.ralphd("build", "2", "--agent", c.name, "--log", "--iteration-timeout", c.timeout, "--stop-grace", "1s")
			t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			is.NoErr(e.srv.Verify())
			is.Equal(code, 0)
			is.True(strings.Contains(stderr, "outcome=timeout"))
			is.True(strings.Contains(stderr, "resuming session"))
			is.True(!strings.Contains(stderr, "attempt 2/3")) // the timed-out attempt and its resume are one
			checkResumed(t, e, "iteration timeout")
			t.Logf("%s resume after timeout took %s", c.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestE2EResumeAfterSIGKILL(t *testing.T) {
	for _, c := range resumeCLIs {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			start := time.Now()
			e := c.start(t, resumeScript())
			e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
			e.killWhenHung(3*time.Minute, "build", "1", "--agent", c.name, "--log")
			out, stderr, code := e.ralphd("build", "1", "--agent", c.name, "--log")
			t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			is.NoErr(e.srv.Verify())
			is.Equal(code, 0)
			is.True(strings.Contains(stderr, "previous ralphd died"))
			is.True(strings.Contains(stderr, `(attempt 1/3, resuming session`)) // the killed attempt was given back: one attempt
			checkResumed(t, e, "ralphd itself stopped")
			t.Logf("%s resume after SIGKILL took %s", c.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// killWhenHung runs ralphd with args in e's repository and SIGKILLs it
// once the agent has worked and waits on the model for its second turn,
// and its session's file is written; ralphd ending first, or not getting
// there within the time given, fails the test.
func (e *e2e) killWhenHung(within time.Duration, args ...string) {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ralphd", args...)
	cmd.Dir, cmd.Env = e.repo, e.env
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	for !hung(e.srv) {
		select {
		case <-exited:
			t.Fatalf("ralphd ended before the agent reached its second turn:\n%s", buf.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	time.Sleep(time.Second) // the session's file is written
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	t.Logf("killed ralphd:\n%s", buf.String())
}

// hung reports whether the model holds the agent's second request.
func hung(srv *scriptedapi.Server) bool {
	for _, r := range srv.Requests() {
		if r.Kind == scriptedapi.KindAgent && r.Script == "e2e-a" && r.Turn == 1 {
			return true
		}
	}
	return false
}

// A resume that fails (the session ralphd kept cannot be read by the CLI:
// here its transcript was emptied in the state dir while ralphd was not
// running) gives way to a fresh session in the same iteration, which
// closes the issue.
func TestE2EResumeFailsFallsBackToFresh(t *testing.T) {
	is := is.New(t)
	e := newE2E(t, false, resumeScript(), forIssue("e2e-a",
		scriptedapi.Bash(`bd close e2e-a --reason "echo passes (exit 0)"`),
		scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
	))
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	out, stderr, code := e.ralphd("build", "1", "--agent", "claude", "--log", "--iteration-timeout", "25s", "--stop-grace", "1s")
	t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	is.True(strings.Contains(stderr, "kept the interrupted session"))
	// The kept session's transcript, emptied: the CLI finds no conversation.
	paths, _ := filepath.Glob(filepath.Join(e.state, "projects", "*", "attempts", "e2e-a.session"))
	is.Equal(len(paths), 1)
	path := paths[0]
	data, err := os.ReadFile(path)
	is.NoErr(err)
	var rec map[string]any
	is.NoErr(json.Unmarshal(data, &rec))
	files := rec["session"].(map[string]any)["files"].([]any)
	files[0].(map[string]any)["data"] = []byte("not a transcript\n")
	data, err = json.Marshal(rec)
	is.NoErr(err)
	is.NoErr(os.WriteFile(path, data, 0o600))

	out, stderr, code = e.ralphd("build", "1", "--agent", "claude", "--log")
	t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	is.Equal(code, 0)
	is.True(strings.Contains(stderr, "could not resume the session; starting a fresh one"))
	is.True(strings.Contains(e.bd("show", "e2e-a", "--json"), `"status": "closed"`))
	is.True(!strings.Contains(stderr, "attempt 2/3")) // the timed-out attempt, its failed resume and the fresh session are one
}

// A worker's iteration (--workers) interrupted by a SIGKILLed ralphd is
// resumed like the single loop's: the next start's sweep keeps the
// worker's Claude session, and the next attempt on the issue, by whichever
// worker takes it, resumes it and closes the issue, as one attempt.
func TestE2EResumeWorkerAfterSIGKILL(t *testing.T) {
	is := is.New(t)
	e := newE2E(t, false, resumeScript())
	e.run("sh", "-c", "echo work > README.md && git add README.md && git commit -q -m init") // workers branch off a commit
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	e.killWhenHung(3*time.Minute, "build", "1", "--agent", "claude", "--log", "--workers", "2")
	out, stderr, code := e.ralphd("build", "1", "--agent", "claude", "--log", "--workers", "2")
	t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	is.NoErr(e.srv.Verify())
	is.Equal(code, 0)
	is.True(regexp.MustCompile(`worker w\d: previous ralphd died`).MatchString(stderr)) // the workers' sweep settled it
	is.True(strings.Contains(stderr, `(attempt 1/3, resuming session`))                 // the killed attempt was given back: one attempt
	checkResumed(t, e, "ralphd itself stopped")
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// A resume the real CLI refuses, its session gone: ralphd's record says
// what a timed-out attempt leaves (attempt 1, still counted) and names a
// session the CLI has no trace of where it looks. The CLI fails before it
// asks the model; the iteration falls back to a fresh session, which
// closes the issue, and the attempt is still the one counted: attempt
// 1/3 throughout, one iteration.
//
// The record is written through the state package, as ralphd writes it,
// while ralphd is not running: no first run needs to time out, so each
// case costs two CLI starts.
func TestE2EResumeRefusedFallsBackToFresh(t *testing.T) {
	const id = "5b0c1f4e-9a3d-4c2b-8e7f-0d1a2b3c4d5e"
	for _, c := range []struct {
		name  string
		start func(t *testing.T, s ...scriptedapi.Script) *e2e
		// file is a session file ralphd puts back, where the CLI does not
		// look for the session.
		file string
	}{
		{"claude", func(t *testing.T, s ...scriptedapi.Script) *e2e { return newE2E(t, false, s...) },
			"projects/-gone/" + id + ".jsonl"},
		{"codex", func(t *testing.T, s ...scriptedapi.Script) *e2e {
			t.Parallel()
			return newCLIE2E(t, cliBackends[0], s...)
		}, "gone/" + id + ".jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			start := time.Now()
			e := c.start(t, forIssue("e2e-a",
				scriptedapi.Bash(`bd close e2e-a --reason "true passes (exit 0)"`),
				scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
			))
			e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
			plantResume(t, e, state.Resume{
				IssueID: "e2e-a", Agent: c.name, Attempt: 1, Counted: true,
				Why: "the iteration timeout (25s) ended it", SavedAt: time.Now(),
				Session: agent.Session{ID: id, Files: []agent.SessionFile{{Rel: c.file, Data: []byte("{}\n")}}},
			})
			out, stderr, code := e.ralphd("build", "1", "--agent", c.name, "--log")
			t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
			is.NoErr(e.srv.Verify())
			is.Equal(code, 0)
			is.True(strings.Contains(stderr, "(attempt 1/3, resuming session "+id)) // the counted attempt goes on
			is.True(strings.Contains(stderr, "could not resume the session; starting a fresh one"))
			is.True(!strings.Contains(stderr, "attempt 2/3")) // the attempt, its refused resume and the fresh session are one
			is.True(strings.Contains(out, "iterations: 1,"))
			is.True(strings.Contains(e.bd("show", "e2e-a", "--json"), `"status": "closed"`))
			var fresh int
			for _, r := range e.srv.Requests() {
				if r.Kind != scriptedapi.KindAgent {
					continue
				}
				is.True(!strings.Contains(string(r.Raw), "this session on e2e-a")) // the refused resume never reached the model
				if r.Script == "e2e-a" && r.Turn == 0 {
					fresh++
				}
			}
			is.Equal(fresh, 1) // one fresh session did the work
			raw, _, _ := e.ralphd("logs", "last", "--raw")
			is.Equal(strings.Count(raw, `"event":"iteration_start"`), 1)
			is.True(strings.Contains(raw, `"decision":"resume_failed"`))
			t.Logf("%s refused resume took %s", c.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// plantResume writes r, and the attempt it counted, into the project's
// state dir as ralphd does, while ralphd is not running.
func plantResume(t *testing.T, e *e2e, r state.Resume) {
	t.Helper()
	id, err := identify(t.Context(), e.repo)
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(t.Context(), e.state, id, "test")
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < r.Attempt; n++ {
		if _, err := st.IncrementAttempt(r.IssueID); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SaveResume(r); err != nil {
		t.Fatal(err)
	}
}

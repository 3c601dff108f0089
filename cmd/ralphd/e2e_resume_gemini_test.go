package main

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// geminiCLI is Gemini CLI's entry in cliBackends.
func geminiCLI(t *testing.T) cliBackend {
	t.Helper()
	for _, b := range cliBackends {
		if b.name == "gemini" {
			return b
		}
	}
	t.Fatal("no gemini in cliBackends")
	return cliBackend{}
}

// Resuming an interrupted Gemini CLI session, with the real CLI against
// the scripted API: the first run runs a command (first-marker), then
// hangs on the model and is timed out; the next iteration hands Gemini CLI
// ralphd's copy of the session (--session-file), and the model sees the
// earlier conversation and the resume prompt, then closes the issue. The
// timed-out attempt and its resume count once.
//
// Gemini CLI sends no session id, so the scripted API tells its
// conversations apart by their user texts: the resumed conversation, which
// has one more (ralphd's resume prompt), is a second script, whose first
// request must carry the first one's history.
// geminiResumeScripts are the model's side of a Gemini CLI resume: the
// first run works (first-marker), then hangs; the resumed conversation,
// told apart by ralphd's resume prompt, closes the issue.
func geminiResumeScripts() []scriptedapi.Script {
	return []scriptedapi.Script{
		forIssue("e2e-a",
			scriptedapi.Bash("echo first-marker"),
			scriptedapi.Fail(scriptedapi.Hang()),
		),
		{Name: "e2e-a-resumed", Match: scriptedapi.PromptContains("this session on e2e-a"), Turns: []scriptedapi.Turn{
			scriptedapi.Bash(`bd close e2e-a --reason "echo first-marker passes (exit 0)"`),
			scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
		}},
	}
}

// checkGeminiResumed asserts that the model answered the resumed
// conversation: one fresh start only, and the resumed one's first request
// carries the first one's history and the resume prompt, saying why.
func checkGeminiResumed(t *testing.T, e *e2e, why string) {
	t.Helper()
	is := is.New(t)
	var fresh int
	var resumed *scriptedapi.Request
	for _, r := range e.srv.Requests() {
		if r.Kind != scriptedapi.KindAgent || r.Turn != 0 {
			continue
		}
		switch r.Script {
		case "e2e-a":
			fresh++
		case "e2e-a-resumed":
			resumed = &r
		}
	}
	is.Equal(fresh, 1)      // one fresh session, no restart from nothing
	is.True(resumed != nil) // the session went on
	raw := string(resumed.Raw)
	is.True(strings.Contains(raw, `"role":"model"`))      // it has the earlier turns
	is.True(strings.Contains(raw, "first-marker"))        // the earlier conversation: the command and its output
	is.True(strings.Contains(raw, "**ID:** e2e-a"))       // and the BUILD prompt, which ralphd does not send again
	is.True(strings.Contains(raw, why))                   // the resume prompt says what happened
	is.True(strings.Contains(raw, "no forbidden change")) // and what ralphd found
	is.True(strings.Contains(e.bd("show", "e2e-a", "--json"), `"status": "closed"`))
}

func TestE2EResumeGeminiAfterTimeout(t *testing.T) {
	is := is.New(t)
	start := time.Now()
	e := newCLIE2E(t, geminiCLI(t), geminiResumeScripts()...)
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	out, stderr, code := e.ralphd("build", "2", "--agent", "gemini", "--log", "--iteration-timeout", "30s", "--stop-grace", "1s")
	t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	is.NoErr(e.srv.Verify())
	is.Equal(code, 0)
	is.True(strings.Contains(stderr, "outcome=timeout"))
	is.True(strings.Contains(stderr, "resuming session"))
	is.True(!strings.Contains(stderr, "could not resume"))
	is.True(!strings.Contains(stderr, "attempt 2/3")) // the timed-out attempt and its resume are one
	checkGeminiResumed(t, e, "iteration timeout")
	t.Logf("gemini resume after timeout took %s", time.Since(start).Round(time.Millisecond))
}

// Gemini CLI interrupted mid-iteration by a SIGKILLed ralphd: the next
// start's sweep reads the session back from Gemini's own dir (the id the
// running record holds), and the next attempt resumes it: the killed
// attempt was given back, so it is attempt 1 still.
func TestE2EResumeGeminiAfterSIGKILL(t *testing.T) {
	t.Parallel() // it mostly waits on Gemini CLI's starts
	is := is.New(t)
	start := time.Now()
	e := newCLIE2E(t, geminiCLI(t), geminiResumeScripts()...)
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	e.killWhenHung(2*time.Minute, "build", "1", "--agent", "gemini", "--log")
	out, stderr, code := e.ralphd("build", "1", "--agent", "gemini", "--log")
	t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	is.NoErr(e.srv.Verify())
	is.Equal(code, 0)
	is.True(strings.Contains(stderr, "previous ralphd died"))
	is.True(strings.Contains(stderr, `(attempt 1/3, resuming session`)) // the killed attempt was given back: one attempt
	is.True(!strings.Contains(stderr, "could not resume"))
	checkGeminiResumed(t, e, "ralphd itself stopped")
	t.Logf("gemini resume after SIGKILL took %s", time.Since(start).Round(time.Millisecond))
}

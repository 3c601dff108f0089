package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/judge"
)

// failedAttempt counts an attempt on issue and records it as failed with
// the escalation state esc, as BUILD does after judging it.
func failedAttempt(t *testing.T, s *Store, issue string, esc judge.State) {
	t.Helper()
	n, err := s.IncrementAttempt(issue)
	if err != nil {
		t.Fatal(err)
	}
	j := Judgement{Base: "abc", LastGate: "verify", Escalation: esc, LastError: "boom"}
	a := judge.Attempt{Iteration: n, LastGate: "verify", ExitCode: 1, Outputs: []judge.Output{{Name: "verify", Text: "boom\n"}}}
	if err := s.RecordFailure(issue, j, a); err != nil {
		t.Fatal(err)
	}
}

func TestIssueRecordRoundTrip(t *testing.T) {
	is := is.New(t)
	s := openStore(t)

	r, err := s.Issue("bd-1")
	is.NoErr(err)
	is.Equal(r, IssueRecord{IssueID: "bd-1"}) // nothing yet

	esc := judge.State{Attempts: 2, LastFingerprint: "f", FingerprintRun: 2, StrategyShifts: 1, Fingerprints: []string{"f", "f"}}
	failedAttempt(t, s, "bd-1", esc)
	failedAttempt(t, s, "bd-1", esc)
	r, err = s.Issue("bd-1")
	is.NoErr(err)
	is.Equal(r.Count, 2)
	is.Equal(r.Judgement.Escalation, esc)
	is.Equal(r.Judgement.LastError, "boom")
	is.Equal(len(r.Attempts), 2)
	is.Equal(r.Attempts[1].Iteration, 2)
	is.Equal(r.Attempts[1].Outputs[0].Text, "boom") // verbatim, trailing newline dropped
	is.Equal(len(s.Warnings()), 0)
	for _, p := range []string{s.AttemptRecordPath("bd-1"), s.path(judgementName("bd-1"))} {
		fi, err := os.Stat(p)
		is.NoErr(err)
		is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	}
}

// TestResetClearsWholeRecord is the bug of issue 16: a reset that cleared
// only the counter left the escalation's hard stop behind, so the next
// attempt was judged stuck at once.
func TestResetClearsWholeRecord(t *testing.T) {
	for _, all := range []bool{false, true} {
		name := "named"
		if all {
			name = "all"
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			s := openStore(t)
			stopped := judge.State{Attempts: 4, FingerprintRun: 4, StrategyShifts: 2, Stopped: true, StopReason: judge.ReasonRepeatedFingerprint}
			for range 3 {
				failedAttempt(t, s, "bd-1", stopped)
			}
			failedAttempt(t, s, "bd-2", judge.State{Attempts: 1})
			r, err := s.Issue("bd-1")
			is.NoErr(err)
			is.Equal(r.Stuck(5), judge.StuckHardStop)

			var was map[string]int
			if all {
				was, err = s.ResetAll()
			} else {
				was, err = s.Reset("bd-1")
			}
			is.NoErr(err)
			is.Equal(was["bd-1"], 3)

			r, err = s.Issue("bd-1")
			is.NoErr(err)
			is.Equal(r, IssueRecord{IssueID: "bd-1"}) // counter, judgement and attempts all gone
			is.Equal(r.Stuck(3), judge.NotStuck)
			_, err = os.Stat(s.AttemptRecordPath("bd-1"))
			is.True(errors.Is(err, os.ErrNotExist))
			_, err = os.Stat(s.path(judgementName("bd-1")))
			is.True(errors.Is(err, os.ErrNotExist))

			// A new first attempt starts from nothing.
			n, err := s.IncrementAttempt("bd-1")
			is.NoErr(err)
			is.Equal(n, 1)
			r, err = s.Issue("bd-1")
			is.NoErr(err)
			is.Equal(r.Judgement, Judgement{})
			is.Equal(len(r.Attempts), 0)

			other, err := s.Issue("bd-2")
			is.NoErr(err)
			is.Equal(other.Count == 1, !all) // a named reset leaves the others alone
		})
	}
}

// TestResetCutShortByCrash: the counter is the record's anchor. Side files
// a crash left after the counter was cleared are not read, and a new first
// attempt removes them instead of inheriting their hard stop.
func TestResetCutShortByCrash(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	failedAttempt(t, s, "bd-1", judge.State{Attempts: 3, Stopped: true})
	// The crash: attempts.txt rewritten, the side files still there. The
	// bash loop's own reset (it rewrites attempts.txt) looks the same.
	is.NoErr(os.WriteFile(s.AttemptsPath(), nil, 0o600))

	r, err := s.Issue("bd-1")
	is.NoErr(err)
	is.Equal(r, IssueRecord{IssueID: "bd-1"})

	st, err := ReadStatus(filepath.Dir(filepath.Dir(s.Dir())), s.Identity(), 3)
	is.NoErr(err)
	is.Equal(len(st.Attempts), 0) // status sees no record either

	_, err = s.IncrementAttempt("bd-1")
	is.NoErr(err)
	r, err = s.Issue("bd-1")
	is.NoErr(err)
	is.Equal(r.Count, 1)
	is.True(!r.Judgement.Escalation.Stopped) // not inherited
	_, err = os.Stat(s.path(judgementName("bd-1")))
	is.True(errors.Is(err, os.ErrNotExist))
}

// TestIssueLoadsEarlierFormats: attempts/<id>.json and <id>.md as ralphd
// wrote them before the record moved into this package.
func TestIssueLoadsEarlierFormats(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	is.NoErr(os.WriteFile(s.AttemptsPath(), []byte("rt-a:4\n"), 0o600))
	for _, name := range []string{"rt-a.json", "rt-a.md"} {
		data, err := os.ReadFile(filepath.Join("testdata", "attempts", name))
		is.NoErr(err)
		is.NoErr(os.WriteFile(filepath.Join(s.AttemptsDir(), name), data, 0o600))
	}
	r, err := s.Issue("rt-a")
	is.NoErr(err)
	is.Equal(len(s.Warnings()), 0)
	is.Equal(r.Count, 4)
	is.Equal(r.Judgement.Base, "7b544240a9bce21fd90f287750faf5b7470e0b4b")
	is.Equal(r.Judgement.Escalation.Attempts, 4)
	is.True(r.Judgement.Escalation.Stopped)
	is.Equal(r.Judgement.Escalation.StopReason, judge.ReasonRepeatedFingerprint)
	is.Equal(r.Judgement.Next.Tier, judge.TierHardStop)
	is.Equal(r.Judgement.Next.Count, 4)
	is.Equal(r.Judgement.Signals.FailingChecks, []string{"verify"})
	is.Equal(len(r.Attempts), 3)
	is.Equal(r.Attempts[2].Iteration, 4)
	is.Equal(r.Stuck(9), judge.StuckHardStop)

	st, err := ReadStatus(filepath.Dir(filepath.Dir(s.Dir())), s.Identity(), 9)
	is.NoErr(err)
	is.Equal(st.Attempts, []AttemptStatus{{IssueID: "rt-a", Count: 4, Stuck: true, StuckCause: "hard_stop", Tier: "hard-stop"}}) // under the cap, stuck all the same
	is.True(strings.Contains(statusText(t, st), "rt-a   4  STUCK (the escalation gave up after its strategy shifts; `ralphd reset rt-a` retries it)"))
}

func TestIssueUnreadableParts(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	failedAttempt(t, s, "bd-1", judge.State{Attempts: 1, Stopped: true})
	is.NoErr(os.WriteFile(s.path(judgementName("bd-1")), []byte("{not json"), 0o600))
	is.NoErr(os.WriteFile(s.AttemptRecordPath("bd-1"), []byte("### Attempt 1\n---\niteration: three\n---\n"), 0o600))

	r, err := s.Issue("bd-1")
	is.NoErr(err) // a fresh start, not a failure
	is.Equal(r.Count, 1)
	is.Equal(r.Judgement, Judgement{})
	is.Equal(len(r.Attempts), 0)
	warns := s.Warnings()
	is.Equal(len(warns), 2)
	is.True(strings.Contains(warns[0], "bd-1.json"))
	is.True(strings.Contains(warns[1], "bd-1.md"))

	// The next failure replaces both.
	failedAttempt(t, s, "bd-1", judge.State{Attempts: 1})
	r, err = s.Issue("bd-1")
	is.NoErr(err)
	is.Equal(r.Count, 2)
	is.Equal(len(r.Attempts), 1)
	is.Equal(len(s.Warnings()), 0)
}

func TestRecordFailureKeepsWindow(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	for range 5 {
		failedAttempt(t, s, "bd-1", judge.State{})
	}
	r, err := s.Issue("bd-1")
	is.NoErr(err)
	is.Equal(len(r.Attempts), judge.RecordWindow)
	is.Equal(r.Attempts[0].Iteration, 3)
	entries, err := os.ReadDir(s.AttemptsDir())
	is.NoErr(err)
	is.Equal(len(entries), 2) // <id>.json and <id>.md, no temp files left
}

func TestUnsafeIssueIDStaysInAttemptsDir(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	id := "../escape.me"
	failedAttempt(t, s, id, judge.State{})
	entries, err := os.ReadDir(s.Dir())
	is.NoErr(err)
	for _, e := range entries {
		is.True(!strings.Contains(e.Name(), "escape")) // nothing written beside attempts/
	}
	for _, p := range []string{s.AttemptRecordPath(id), s.path(judgementName(id))} {
		is.Equal(filepath.Dir(p), s.AttemptsDir())
	}
	r, err := s.Issue(id)
	is.NoErr(err)
	is.Equal(len(r.Attempts), 1)
	_, err = s.Reset(id)
	is.NoErr(err)
	entries, err = os.ReadDir(s.AttemptsDir())
	is.NoErr(err)
	is.Equal(len(entries), 0)
}

func TestSanitizeIssueID(t *testing.T) {
	long := strings.Repeat("a", 120)
	tests := []struct {
		id   string
		want string // "" means: check only that it is hashed and safe
	}{
		{id: "rt-2j9", want: "rt-2j9"},
		{id: "rt-wjd.1", want: "rt-wjd.1"},
		{id: "my_proj-abc.2.3", want: "my_proj-abc.2.3"},
		{id: "../../etc/passwd"},
		{id: ".hidden"},
		{id: "a/b"},
		{id: "a_b", want: "a_b"},
		{id: "with space"},
		{id: "nul\x00byte"},
		{id: "ünïcode"},
		{id: ""},
		{id: long},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			is := is.New(t)
			got := SanitizeIssueID(tt.id)
			if tt.want != "" {
				is.Equal(got, tt.want)
			}
			is.True(got != "" && got != "." && got != "..")
			is.True(!strings.HasPrefix(got, "."))
			is.True(len(got) <= 100)
			is.Equal(strings.Trim(got, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"), "")
			if prev, dup := seen[got]; dup {
				t.Fatalf("%q and %q both map to %q", prev, tt.id, got)
			}
			seen[got] = tt.id
		})
	}
}

// TestIssueFilesDoNotFollowSymlinks: an agent running as the same user
// may plant symlinks where the record's files go. Writes replace the link
// and resets remove it; neither touches what it points at.
func TestIssueFilesDoNotFollowSymlinks(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	outside := filepath.Join(t.TempDir(), "precious")
	is.NoErr(os.WriteFile(outside, []byte("keep me"), 0o600))
	_, err := s.IncrementAttempt("bd-1")
	is.NoErr(err)
	for _, p := range []string{s.path(judgementName("bd-1")), s.AttemptRecordPath("bd-1")} {
		is.NoErr(os.Symlink(outside, p))
	}
	is.NoErr(s.RecordFailure("bd-1", Judgement{LastError: "x"}, judge.Attempt{Iteration: 1}))
	is.Equal(readFile(t, outside), "keep me")
	fi, err := os.Lstat(s.path(judgementName("bd-1")))
	is.NoErr(err)
	is.True(fi.Mode().IsRegular()) // the link was replaced, not followed

	is.NoErr(os.Remove(s.AttemptRecordPath("bd-1")))
	is.NoErr(os.Symlink(outside, s.AttemptRecordPath("bd-1")))
	_, err = s.Reset("bd-1")
	is.NoErr(err)
	is.Equal(readFile(t, outside), "keep me")
	_, err = os.Lstat(s.AttemptRecordPath("bd-1"))
	is.True(errors.Is(err, os.ErrNotExist))
}

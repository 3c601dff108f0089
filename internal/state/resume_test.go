package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

const resumeID = "862e0dbf-f692-4422-96cc-30c52efcdae5"

func testResume(issue string) Resume {
	return Resume{IssueID: issue, Agent: "claude", Attempt: 1, Counted: true, Why: "the iteration timeout (30m0s) ended it",
		Found:   []string{"check `go test ./...` passed"},
		Session: agent.Session{ID: resumeID, Files: []agent.SessionFile{{Rel: "projects/-w/" + resumeID + ".jsonl", Data: []byte("{}\n")}}},
		SavedAt: fixedNow()}
}

func TestResumeRoundTrip(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	got, err := s.ResumeFor("bd-1")
	is.NoErr(err)
	is.True(got == nil) // none yet
	want := testResume("bd-1")
	is.NoErr(s.SaveResume(want))
	got, err = s.ResumeFor("bd-1")
	is.NoErr(err)
	is.Equal(*got, want)
	other, err := s.ResumeFor("bd-2")
	is.NoErr(err)
	is.True(other == nil) // per issue
	is.NoErr(s.ClearResume("bd-1"))
	got, err = s.ResumeFor("bd-1")
	is.NoErr(err)
	is.True(got == nil)
	is.NoErr(s.ClearResume("bd-1")) // a missing record is fine

	// A verified close resets the issue's records, the session with them.
	is.NoErr(s.SaveResume(want))
	_, err = s.IncrementAttempt("bd-1")
	is.NoErr(err)
	_, err = s.Reset("bd-1")
	is.NoErr(err)
	got, err = s.ResumeFor("bd-1")
	is.NoErr(err)
	is.True(got == nil)
}

// A record ralphd cannot trust is never resumed: it is moved aside, with
// a warning, and the attempt starts afresh.
func TestResumeForRefusesBadRecords(t *testing.T) {
	bad := func(f func(r *Resume)) string {
		r := testResume("bd-1")
		f(&r)
		data, _ := json.Marshal(r)
		return string(data)
	}
	for _, c := range []struct{ name, data string }{
		{"not json", "garbage"},
		{"another issue's", bad(func(r *Resume) { r.IssueID = "bd-2" })},
		{"a path for an id", bad(func(r *Resume) { r.Session.ID = "../../x" })},
		{"a file outside the CLI's dir", bad(func(r *Resume) {
			r.Session.Files[0].Rel = "../../.bashrc-" + resumeID
		})},
		{"no files", bad(func(r *Resume) { r.Session.Files = nil })},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			s := openStore(t)
			is.NoErr(os.MkdirAll(filepath.Join(s.Dir(), AttemptsDirName), 0o700))
			is.NoErr(os.WriteFile(filepath.Join(s.Dir(), AttemptsDirName, "bd-1.session"), []byte(c.data), 0o600))
			got, err := s.ResumeFor("bd-1")
			is.NoErr(err)
			is.True(got == nil)
			w := s.Warnings()
			is.Equal(len(w), 1)
			is.True(strings.Contains(w[0], "starts a fresh session"))
			_, err = os.Stat(filepath.Join(s.Dir(), AttemptsDirName, "bd-1.session"))
			is.True(os.IsNotExist(err)) // moved aside
		})
	}
	is := is.New(t)
	s := openStore(t)
	r := testResume("bd-1")
	r.Session.ID = "x"
	is.True(s.SaveResume(r) != nil) // nor does ralphd write one
}

// What the agent's code does to the kept sessions while it runs is put
// back: it cannot plant a session for ralphd to resume, change one, or
// remove one.
func TestResumeIsSealed(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	kept := testResume("bd-1")
	is.NoErr(s.SaveResume(kept))
	is.NoErr(s.Seal())
	dir := filepath.Join(s.Dir(), AttemptsDirName)
	planted := testResume("bd-2")
	planted.Session.Files[0].Data = []byte("a conversation the agent wrote\n")
	data, _ := json.Marshal(planted)
	is.NoErr(os.WriteFile(filepath.Join(dir, "bd-2.session"), data, 0o600))
	is.NoErr(os.WriteFile(filepath.Join(dir, "bd-1.session"), data, 0o600))
	restored, err := s.Unseal()
	is.NoErr(err)
	is.Equal(len(restored), 2)
	got, err := s.ResumeFor("bd-2")
	is.NoErr(err)
	is.True(got == nil) // the planted one is gone
	got, err = s.ResumeFor("bd-1")
	is.NoErr(err)
	is.Equal(*got, kept) // the kept one is ralphd's again

	is.NoErr(s.Seal())
	is.NoErr(os.Remove(filepath.Join(dir, "bd-1.session")))
	_, err = s.Unseal()
	is.NoErr(err)
	got, err = s.ResumeFor("bd-1")
	is.NoErr(err)
	is.True(got != nil) // put back
}

// The sweep gives back the attempt of an interrupted iteration, but not
// one it carried from the timed-out iteration it resumed.
func TestSettleKeepsACarriedAttempt(t *testing.T) {
	for _, carried := range []bool{false, true} {
		is := is.New(t)
		s := openStore(t)
		r := startIteration(t, s, "r1", 1, "bd-1")
		r.Carried = carried
		r.SessionID, r.Resumed = resumeID, carried
		is.NoErr(s.WriteRunning(r))
		got, err := s.ReadRunning()
		is.NoErr(err)
		is.Equal(*got, r)
		st, err := s.SettleInterrupted(*got, fixedNow())
		is.NoErr(err)
		is.Equal(st.GaveBack, !carried)
		n, err := s.Attempt("bd-1")
		is.NoErr(err)
		if carried {
			is.Equal(n, 1)
		} else {
			is.Equal(n, 0)
		}
	}
}

func FuzzResumeRecord(f *testing.F) {
	data, _ := json.Marshal(testResume("bd-1"))
	f.Add(data)
	f.Add([]byte(`{"issue_id":"bd-1","session":{"id":"x","files":[{"rel":"../a"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseObject[Resume]("session to resume", data)
		if err != nil || r.Session.Check() != nil {
			return
		}
		// A record that passes names a session id and files below the
		// CLI's dir only.
		if !agent.ValidSessionID(r.Session.ID) {
			t.Fatalf("accepted id %q", r.Session.ID)
		}
		for _, f := range r.Session.Files {
			if strings.HasPrefix(f.Rel, "/") || strings.Contains("/"+f.Rel+"/", "/../") {
				t.Fatalf("accepted file %q", f.Rel)
			}
		}
	})
}

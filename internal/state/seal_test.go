package state

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// TestUnsealRestoresWhatTheAgentChanged plays the agent of route 8: it
// resets the attempt counter, deletes a judgement record, forges another,
// and edits history, while ralphd itself writes the running record.
func TestUnsealRestoresWhatTheAgentChanged(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	_, err := s.IncrementAttempt("t-a")
	is.NoErr(err)
	_, err = s.IncrementAttempt("t-a")
	is.NoErr(err)
	judgement := filepath.Join(s.AttemptsDir(), "t-a.json")
	is.NoErr(os.WriteFile(judgement, []byte(`{"n":2}`+"\n"), 0o600))
	is.NoErr(s.AppendHistory(Record{RunID: "r", Iteration: 1, IssueID: "t-a", Outcome: "violation"}))
	attempts, _ := os.ReadFile(s.AttemptsPath())
	history, _ := os.ReadFile(s.HistoryPath())

	is.NoErr(s.Seal())
	is.NoErr(s.WriteRunning(Running{PID: 42, Iteration: 2, IssueID: "t-a", Mode: "build"})) // ralphd's own write
	is.NoErr(os.WriteFile(s.AttemptsPath(), []byte("t-a:0\n"), 0o600))
	is.NoErr(os.Remove(judgement))
	forged := filepath.Join(s.AttemptsDir(), "t-b.json")
	is.NoErr(os.WriteFile(forged, []byte("{}"), 0o600))
	is.NoErr(os.WriteFile(s.HistoryPath(), nil, 0o600))

	restored, err := s.Unseal()
	is.NoErr(err)
	is.Equal(restored, []string{"attempts.txt", "attempts/t-a.json", "attempts/t-b.json", "history.jsonl"})
	got, _ := os.ReadFile(s.AttemptsPath())
	is.Equal(got, attempts)
	got, _ = os.ReadFile(s.HistoryPath())
	is.Equal(got, history)
	got, _ = os.ReadFile(judgement)
	is.Equal(string(got), `{"n":2}`+"\n")
	_, err = os.Stat(forged)
	is.True(os.IsNotExist(err)) // a file the agent added is removed
	r, err := s.ReadRunning()
	is.NoErr(err)
	is.Equal(r.PID, 42) // ralphd's own write while sealed stays

	again, err := s.Unseal()
	is.NoErr(err)
	is.Equal(len(again), 0) // the seal ended
}

func TestUnsealUntouchedRestoresNothing(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	_, err := s.IncrementAttempt("t-a")
	is.NoErr(err)
	is.NoErr(s.Seal())
	restored, err := s.Unseal()
	is.NoErr(err)
	is.Equal(len(restored), 0)
}

// TestOwnWritesWhileSealedStay: ralphd's own writes during the seal (a
// person's reset from the dashboard, a history record, a baseline written
// and cleared) are not undone.
func TestOwnWritesWhileSealedStay(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	_, err := s.IncrementAttempt("t-a")
	is.NoErr(err)
	is.NoErr(s.Seal())
	_, err = s.Reset("t-a")
	is.NoErr(err)
	is.NoErr(s.AppendHistory(Record{RunID: "r", Iteration: 1, IssueID: "t-b"}))
	is.NoErr(s.WriteBaseline(Baseline{RunID: "r"}))
	is.NoErr(s.ClearBaseline())
	attempts, _ := os.ReadFile(s.AttemptsPath())
	history, _ := os.ReadFile(s.HistoryPath())
	restored, err := s.Unseal()
	is.NoErr(err)
	is.Equal(len(restored), 0) // nothing to put back
	got, _ := os.ReadFile(s.AttemptsPath())
	is.Equal(got, attempts)
	got, _ = os.ReadFile(s.HistoryPath())
	is.Equal(got, history)
}

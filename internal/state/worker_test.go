package state

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/matryer/is"
)

// TestForWorkerRunningRecords: each worker view has its own running
// record, next to the project's; RunningWorkers finds them for the sweep.
func TestForWorkerRunningRecords(t *testing.T) {
	is := is.New(t)
	s, err := Open(context.Background(), t.TempDir(), Identity{ID: "0123456789ab"}, "test")
	is.NoErr(err)
	w1, err := s.ForWorker("w1")
	is.NoErr(err)
	w2, err := s.ForWorker("w2")
	is.NoErr(err)
	is.NoErr(w1.WriteRunning(Running{IssueID: "x-1", Attempt: 1, Mode: "build"}))
	is.NoErr(w2.WriteRunning(Running{IssueID: "x-2", Attempt: 1, Mode: "build"}))
	r, err := s.ReadRunning()
	is.NoErr(err)
	is.Equal(r, nil) // the project's own record is untouched
	got, err := s.RunningWorkers()
	is.NoErr(err)
	is.Equal(got, []string{"w1", "w2"})
	r, err = w2.ReadRunning()
	is.NoErr(err)
	is.Equal(r.IssueID, "x-2")
	is.NoErr(w1.ClearRunning())
	got, err = s.RunningWorkers()
	is.NoErr(err)
	is.Equal(got, []string{"w2"})
	// A worker's baseline left behind (its window never closed) is found
	// too, and is its own, not the project's.
	is.NoErr(w1.WriteBaseline(Baseline{IssueID: "x-1"}))
	b, err := s.ReadBaseline()
	is.NoErr(err)
	is.Equal(b, nil)
	got, err = s.RunningWorkers()
	is.NoErr(err)
	is.Equal(got, []string{"w1", "w2"})
	for _, bad := range []string{"", "../x", "a/b", "w 1"} {
		_, err := s.ForWorker(bad)
		is.True(err != nil) // a worker name never leaves the state dir
	}
}

// TestForWorkerCountsAreShared: workers counting attempts at once through
// their views lose no increment: the views share the store's lock.
func TestForWorkerCountsAreShared(t *testing.T) {
	is := is.New(t)
	s, err := Open(context.Background(), t.TempDir(), Identity{ID: "0123456789ab"}, "test")
	is.NoErr(err)
	var wg sync.WaitGroup
	for _, w := range []string{"w1", "w2", "w3", "w4"} {
		v, err := s.ForWorker(w)
		is.NoErr(err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := v.IncrementAttempt("x-1"); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	n, err := s.Attempt("x-1")
	is.NoErr(err)
	is.Equal(n, 40)
}

// TestSealSharedByWorkers: with two workers' agents running, each worker
// seals; ralphd's own writes during the seal (one worker counting an
// attempt and appending history while the other's agent runs) are kept by
// either worker's Unseal, and what an agent changed is put back.
func TestSealSharedByWorkers(t *testing.T) {
	is := is.New(t)
	s, err := Open(context.Background(), t.TempDir(), Identity{ID: "0123456789ab"}, "test")
	is.NoErr(err)
	w1, err := s.ForWorker("w1")
	is.NoErr(err)
	w2, err := s.ForWorker("w2")
	is.NoErr(err)
	is.NoErr(w1.Seal())
	is.NoErr(w2.Seal())
	_, err = w2.IncrementAttempt("x-1")
	is.NoErr(err)
	is.NoErr(w2.AppendHistory(Record{RunID: "r", Mode: "build", Iteration: 1, IssueID: "x-1", Attempt: 1, Outcome: "closed"}))
	is.NoErr(w2.WriteRunning(Running{IssueID: "x-1", Attempt: 1, Mode: "build"}))

	// An agent resets the counter and removes w2's running record.
	is.NoErr(os.WriteFile(s.AttemptsPath(), []byte(""), 0o600))
	is.NoErr(os.Remove(w2.RunningPath()))

	restored, err := w1.Unseal()
	is.NoErr(err)
	is.True(len(restored) == 2) // the counter and w2's running record, put back
	n, err := s.Attempt("x-1")
	is.NoErr(err)
	is.Equal(n, 1) // ralphd's own count survives the other worker's Unseal
	hist, err := s.History()
	is.NoErr(err)
	is.Equal(len(hist), 1)
	r, err := w2.ReadRunning()
	is.NoErr(err)
	is.True(r != nil)

	// w2's agent still runs: the seal holds until its Unseal.
	is.NoErr(os.WriteFile(s.AttemptsPath(), []byte("x-1 0\n"), 0o600))
	restored, err = w2.Unseal()
	is.NoErr(err)
	is.Equal(restored, []string{AttemptsFile})
	n, err = s.Attempt("x-1")
	is.NoErr(err)
	is.Equal(n, 1)
	restored, err = w2.Unseal() // no seal open: nothing to do
	is.NoErr(err)
	is.Equal(len(restored), 0)
}

// TestRunningIssues: the issues of the loop's and every worker's running
// record, from any view; a record that does not parse is an error (its
// issue is unknown), and nothing is moved aside.
func TestRunningIssues(t *testing.T) {
	is := is.New(t)
	s, err := Open(context.Background(), t.TempDir(), Identity{ID: "0123456789ab"}, "test")
	is.NoErr(err)
	got, err := s.RunningIssues()
	is.NoErr(err)
	is.Equal(len(got), 0)
	w1, err := s.ForWorker("w1")
	is.NoErr(err)
	w2, err := s.ForWorker("w2")
	is.NoErr(err)
	is.NoErr(s.WriteRunning(Running{IssueID: "x-0", Attempt: 1, Mode: "build"}))
	is.NoErr(w1.WriteRunning(Running{IssueID: "x-1", Attempt: 1, Mode: "build"}))
	is.NoErr(w2.WriteRunning(Running{Mode: "plan"})) // no issue
	is.NoErr(w2.WriteBaseline(Baseline{IssueID: "x-9"}))
	for _, v := range []*Store{s, w1, w2} {
		got, err = v.RunningIssues()
		is.NoErr(err)
		is.Equal(got, []string{"x-0", "x-1"})
	}
	is.NoErr(os.WriteFile(w1.RunningPath(), []byte("{not json"), 0o600))
	_, err = s.RunningIssues()
	is.True(err != nil)
	_, err = os.Stat(w1.RunningPath())
	is.NoErr(err) // still there for the sweep to settle
}

package state

import (
	"testing"
	"time"

	"github.com/matryer/is"
)

// startIteration runs the first half of the iteration protocol (count the
// attempt, record the running agent) and returns the record.
func startIteration(t *testing.T, s *Store, runID string, iter int, issue string) Running {
	t.Helper()
	n, err := s.IncrementAttempt(issue)
	if err != nil {
		t.Fatal(err)
	}
	r := Running{PGID: 999999, PID: 999999, StartTicks: 1, Iteration: iter, IssueID: issue, Attempt: n,
		Mode: "build", RunID: runID, StartedAt: fixedNow()}
	if err := s.WriteRunning(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSettleInterrupted(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	_, err := s.IncrementAttempt("bd-1") // an earlier, finished attempt
	is.NoErr(err)
	r := startIteration(t, s, "r1", 2, "bd-1")
	is.Equal(r.Attempt, 2)

	// ralphd dies here. The next start settles it.
	got, err := s.ReadRunning()
	is.NoErr(err)
	end := fixedNow().Add(time.Minute)
	st, err := s.SettleInterrupted(*got, end)
	is.NoErr(err)
	is.Equal(st, Settlement{GaveBack: true, Recorded: true})

	n, err := s.Attempt("bd-1")
	is.NoErr(err)
	is.Equal(n, 1) // the interrupted attempt is given back
	recs, err := s.History()
	is.NoErr(err)
	is.Equal(len(recs), 1)
	is.Equal(recs[0].Outcome, OutcomeInterrupted)
	is.Equal(recs[0].ExitCode, -1)
	is.Equal(recs[0].Attempt, 2)
	is.Equal(recs[0].DurationSeconds, 60.0)
	is.Equal(recs[0].EndedAt, end)
	rr, err := s.ReadRunning()
	is.NoErr(err)
	is.Equal(rr, (*Running)(nil))

	// Settling the same record again (a crash before ClearRunning took
	// effect) changes nothing.
	st, err = s.SettleInterrupted(*got, end)
	is.NoErr(err)
	is.Equal(st, Settlement{})
	n, _ = s.Attempt("bd-1")
	is.Equal(n, 1)
	recs, _ = s.History()
	is.Equal(len(recs), 1)
}

func TestSettleAfterGiveBackCrash(t *testing.T) {
	// The previous settle gave the attempt back and died before recording:
	// the attempt is not given back twice, the iteration is recorded once.
	is := is.New(t)
	s := openStore(t)
	r := startIteration(t, s, "r1", 1, "bd-1")
	_, err := s.GiveBackAttempt("bd-1")
	is.NoErr(err)
	_, err = s.IncrementAttempt("bd-2") // unrelated counters are untouched
	is.NoErr(err)

	st, err := s.SettleInterrupted(r, fixedNow())
	is.NoErr(err)
	is.Equal(st, Settlement{GaveBack: false, Recorded: true})
	all, err := s.Attempts()
	is.NoErr(err)
	is.Equal(all, []AttemptCount{{"bd-2", 1}})
}

func TestSettleAfterHistoryWritten(t *testing.T) {
	// The iteration finished and was recorded, and ralphd died before
	// clearing the running record: nothing is given back or recorded.
	is := is.New(t)
	s := openStore(t)
	r := startIteration(t, s, "r1", 1, "bd-1")
	is.NoErr(s.AppendHistory(Record{RunID: "r1", Mode: "build", Iteration: 1, IssueID: "bd-1", Attempt: 1, Outcome: "ok"}))

	st, err := s.SettleInterrupted(r, fixedNow())
	is.NoErr(err)
	is.Equal(st, Settlement{})
	n, _ := s.Attempt("bd-1")
	is.Equal(n, 1)
	recs, _ := s.History()
	is.Equal(len(recs), 1)
	rr, _ := s.ReadRunning()
	is.Equal(rr, (*Running)(nil))
}

func TestSettlePlanIteration(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	r := Running{PID: 1, Iteration: 7, Mode: "plan", RunID: "p1"}
	is.NoErr(s.WriteRunning(r))
	st, err := s.SettleInterrupted(r, fixedNow())
	is.NoErr(err)
	is.Equal(st, Settlement{Recorded: true})
	recs, _ := s.History()
	is.Equal(recs[0].Mode, "plan")
	is.Equal(recs[0].DurationSeconds, 0.0) // start unknown
}

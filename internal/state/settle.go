package state

import (
	"fmt"
	"time"
)

// Settlement says what SettleInterrupted did.
type Settlement struct {
	// GaveBack is true when the interrupted iteration's attempt was taken
	// back from the issue's counter.
	GaveBack bool `json:"gave_back"`
	// Recorded is true when an interrupted record was appended to history;
	// false when history already had the iteration (the previous ralphd
	// died after recording it, before clearing the running record).
	Recorded bool `json:"recorded"`
}

// SettleInterrupted does the state bookkeeping for an iteration that was
// in flight when the previous ralphd died, once its processes are dealt
// with. Every step can be repeated after a crash without counting
// anything twice:
//
//  1. if history already has this run's iteration, only the record is
//     cleared;
//  2. the attempt is given back, but only while the issue's counter still
//     equals the attempt the iteration took (so a give-back already done,
//     or a reset, is not repeated), unless the iteration carried an
//     attempt an earlier one counted (Running.Carried);
//  3. the iteration is appended to history with outcome "interrupted",
//     exit code -1 and endedAt;
//  4. the running record is cleared.
func (s *Store) SettleInterrupted(r Running, endedAt time.Time) (Settlement, error) {
	var out Settlement
	recs, err := s.History()
	if err != nil {
		return out, fmt.Errorf("settle interrupted iteration: %w", err)
	}
	for _, h := range recs {
		if h.IsIteration() && h.RunID == r.RunID && h.Iteration == r.Iteration {
			return out, s.ClearRunning()
		}
	}
	if r.IssueID != "" && r.Attempt > 0 && !r.Carried {
		cur, err := s.Attempt(r.IssueID)
		if err != nil {
			return out, fmt.Errorf("settle interrupted iteration: %w", err)
		}
		if cur == r.Attempt {
			if _, err := s.GiveBackAttempt(r.IssueID); err != nil {
				return out, fmt.Errorf("settle interrupted iteration: %w", err)
			}
			out.GaveBack = true
		}
	}
	rec := Record{
		RunID:     r.RunID,
		Mode:      r.Mode,
		Iteration: r.Iteration,
		IssueID:   r.IssueID,
		Attempt:   r.Attempt,
		StartedAt: r.StartedAt,
		EndedAt:   endedAt,
		Outcome:   OutcomeInterrupted,
		ExitCode:  -1,
	}
	if !r.StartedAt.IsZero() && endedAt.After(r.StartedAt) {
		rec.DurationSeconds = endedAt.Sub(r.StartedAt).Seconds()
	}
	if err := s.AppendHistory(rec); err != nil {
		return out, fmt.Errorf("settle interrupted iteration: %w", err)
	}
	out.Recorded = true
	if err := s.ClearRunning(); err != nil {
		return out, fmt.Errorf("settle interrupted iteration: %w", err)
	}
	return out, nil
}

package modes

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
)

// Concurrent windows. With workers, several agents run at once, and a
// change made around the guard (to the tracker, ralphd's state files, the
// run log or .ralph/) shows up in whichever judgement reads it first; the
// change itself does not say which agent made it. ralphd does not guess:
// the judgement that finds it reverts it and is charged, and so is every
// other iteration whose agent window was open when it was found. Each of
// those fails its attempt with a violation that says why. An iteration
// judged before the change was found is not charged: its judgement read
// the tracker (and the state and log) after its agent had stopped, and the
// change was not there. Forbidden commands an agent reports in its own
// stream are its own, and charged to it alone.
//
// With the sandbox on, none of these routes is open to an agent (the
// tracker, the state directory and the run log are read-only in it, and
// each agent can write only its own worktree). But the checks (verify,
// acceptance commands) and the merge queue's verify run the agents' code
// outside the sandbox: a window in which such code ran can have made the
// change, so it is charged; a window that only ran a sandboxed agent is
// not. Without the sandbox, every open window is charged.

// windowSet is the agent windows of a worker pool: iterations whose agent
// has started and whose judgement has not ended.
type windowSet struct {
	mu   sync.Mutex
	open map[*buildIter]*window
}

// window is one iteration's entry in a windowSet.
type window struct {
	worker  string
	opened  time.Time
	judged  bool
	charges []charge
	// unsandboxed: the agents' code ran outside the sandbox in this
	// window (its checks, or the merge queue's verify).
	unsandboxed bool
}

// charge is a violation another iteration's judgement found while this
// iteration's window was open.
type charge struct {
	detail    string // what was found
	iteration int    // the iteration whose judgement found it
	worker    string
	issueID   string
}

// add opens it's window.
func (s *windowSet) add(it *buildIter, worker string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = map[*buildIter]*window{}
	}
	s.open[it] = &window{worker: worker, opened: at}
}

// ranUnsandboxed marks it's window as one in which the agents' code ran
// outside the sandbox.
func (s *windowSet) ranUnsandboxed(it *buildIter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.open[it]; w != nil {
		w.unsandboxed = true
	}
}

// remove forgets it's window.
func (s *windowSet) remove(it *buildIter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.open, it)
}

// judged ends the judgement of it: it found found (violations no agent
// owned up to), which charge every other window open before at, the time
// the judgement had read what it found (with sandboxed set, only those in
// which code ran outside the sandbox). It returns the charges others'
// judgements laid on it, and marks it judged, so that no later judgement
// charges it. Charges are never passed on: a charge is not a finding.
func (s *windowSet) judged(it *buildIter, found []string, at time.Time, sandboxed bool) []charge {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.open[it]
	if w == nil {
		return nil
	}
	if len(found) > 0 {
		for other, ow := range s.open {
			if other == it || ow.judged || !ow.opened.Before(at) || (sandboxed && !ow.unsandboxed) {
				continue
			}
			for _, d := range found {
				ow.charges = append(ow.charges, charge{detail: d, iteration: it.n, worker: w.worker, issueID: it.issue.ID})
			}
		}
	}
	w.judged = true
	mine := w.charges
	w.charges = nil
	return mine
}

// openWindow registers an iteration whose agent is about to start; the
// returned func forgets it. Outside workers it does nothing.
func (l *Loop) openWindow(it *buildIter) func() {
	sh := l.shared
	if sh == nil {
		return func() {}
	}
	sh.windows.add(it, l.State.Worker(), l.now())
	return func() { sh.windows.remove(it) }
}

// ranUnsandboxed marks it's window (workers) as one in which the agents'
// code runs outside the sandbox: call it before its checks run.
func (l *Loop) ranUnsandboxed(it *buildIter) {
	if l.shared != nil {
		l.shared.windows.ranUnsandboxed(it)
	}
}

// chargeConcurrent ends an iteration's judgement in a worker pool: what it
// found that no agent owned up to (it.rec.Violations so far) is charged to
// every other open window too, and the charges others laid on it become
// its own violations. Call it once, inside the judging window, after
// everything this judgement reads and reverts. Outside workers it does
// nothing.
func (l *Loop) chargeConcurrent(res *Result, it *buildIter) {
	sh := l.shared
	if sh == nil {
		return
	}
	found := slices.Clone(it.rec.Violations)
	at := l.now()
	if !it.foundAt.IsZero() && it.foundAt.Before(at) {
		// The reading was shared and taken before this judgement began:
		// a window opened after it cannot have made what it holds.
		at = it.foundAt
	}
	// Sandboxed, no agent can reach the tracker, the state or the run log:
	// only code run outside the sandbox (checks) can have made what this
	// judgement found.
	charges := sh.windows.judged(it, found, at, l.sandboxed(ModeBuild))
	for _, c := range charges {
		detail := fmt.Sprintf("%s — found by iteration %d (worker %s, issue %s) while this iteration's agent ran beside it; "+
			"ralphd cannot tell which agent made it, so every iteration whose window was open is charged", c.detail, c.iteration, c.worker, c.issueID)
		it.fixed = append(it.fixed, "charged: "+detail)
		it.rec.Violations = append(it.rec.Violations, detail)
		res.Violations++
		l.event(logjsonl.EventViolation, logjsonl.Violation{Iteration: it.n, IssueID: it.issue.ID, Mode: ModeBuild, Kind: "concurrent_window", Detail: detail})
		l.human().Warn("charged with a forbidden change found while this iteration ran beside others", "issue", it.issue.ID, "found by", c.issueID, "change", c.detail)
	}
}

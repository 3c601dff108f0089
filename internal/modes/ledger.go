package modes

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
)

// The integrity ledger. With workers, several agents run at once, and
// what one of them changes behind ralphd's back shows up in whichever
// check finds it first; the change itself does not say which agent made
// it. ralphd does not guess: every finding is charged to every agent
// window that was open when it could have been made, and each of those
// fails its attempt with a violation that says why. One ledger per run
// holds the windows, and every finding comes in through found, whatever
// found it:
//
//   - A judgement finds a change made around the guard to what it reads
//     (the tracker, ralphd's state files, the run log, .ralph/): a
//     trackerFinding. Every other window whose agent started before the
//     reading that held the change and that is not judged yet is charged.
//     A window judged before is not: its judgement read the tracker after
//     its agent had stopped, and the change was not there. Forbidden
//     commands an agent reports in its own stream are its own, and
//     charged to it alone (not through the ledger).
//   - The pool finds a move of a ref it owns (the target, a worker's
//     branch or worktree HEAD; refs.go), or something planted where git
//     opens a file (pool_planted.go): a gitFinding. Every window that had
//     not ended when the refs were last found in place is charged; one
//     whose work was already integrated is named, and not charged.
//
// With the sandbox on, no agent can reach what a judgement reads (the
// tracker, the state directory and the run log are read-only in it, and
// each agent can write only its own worktree), and neither can the checks
// (verify, acceptance commands) and the merge queue's verify, which run
// the agents' code in the same sandbox (enterSandbox): a trackerFinding
// is charged to no other window. Without the sandbox, every open window
// is charged.
//
// The single loop keeps no ledger: one window is open at a time, its
// iteration's, so what its judgement and its scrub (planted.go) find is
// that iteration's own.

// ledger is the integrity ledger of one run: the windows, and the
// charges findings laid on them.
type ledger struct {
	mu      sync.Mutex
	windows []*window // in the order they opened
}

// window is one iteration's window in a ledger: from the worktree handed
// to it (open) until its work is integrated or given up. Within it, its
// agent window runs from its agent's start (agentStarted) until its
// judgement ends (judged, or closeAgent).
type window struct {
	worker, issue string
	iteration     int // the iteration's number in the run, once its agent started
	// queue: the merge queue's verify, which runs the agents' code after
	// their iterations were judged. It owns no refs: gitFindings pass it by.
	queue bool

	agentAt    time.Time // when its agent started; zero before
	judged     bool      // its judgement ended: trackerFindings pass it by
	ended      time.Time // when its iteration ended; zero while it runs
	integrated bool      // its work is on the target

	// charges are the trackerFindings others' judgements laid on it,
	// until its own judgement takes them.
	charges []charge
	// failure is why its attempt fails: the first gitFinding charged to
	// it ("" when none was).
	failure string
}

// charge is a violation another window's judgement found while this
// window was open.
type charge struct {
	detail    string // what was found
	iteration int    // the iteration whose judgement found it
	worker    string
	issueID   string
	// hidden: a full reading of the tracker found it (chargeHidden), not
	// another window's judgement; detail says it all.
	hidden bool
}

// findingKind says what found a finding, and so which windows may have
// made it.
type findingKind int

const (
	// trackerFinding: a judgement found a change around the guard to what
	// it reads.
	trackerFinding findingKind = iota
	// gitFinding: the pool found a ref it owns moved, or something
	// planted where git opens a file.
	gitFinding
)

// finding is something ralphd found that an agent may have made.
type finding struct {
	kind    findingKind
	details []string // what was found, one line each

	// A trackerFinding's: by is the window whose judgement found it; at
	// is when the reading that held it ended; sandboxed says whether the
	// agents ran sandboxed.
	by        *window
	at        time.Time
	sandboxed bool

	// A gitFinding's: since is when the refs were last found in place.
	since time.Time
}

// couldHaveMade reports whether w's agent may have made f. The caller
// holds the ledger's lock.
func (w *window) couldHaveMade(f finding) bool {
	switch f.kind {
	case trackerFinding:
		return !f.sandboxed && w != f.by && !w.judged && !w.agentAt.IsZero() && w.agentAt.Before(f.at)
	case gitFinding:
		return !w.queue && (w.ended.IsZero() || !w.ended.Before(f.since))
	}
	return false
}

// open registers the window of worker's iteration on issue: its worktree
// is handed to it now.
func (g *ledger) open(worker, issue string) *window {
	w := &window{worker: worker, issue: issue}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.windows = append(g.windows, w)
	return w
}

// openQueue registers the window of the merge queue's verify, which runs
// the agents' code from at.
func (g *ledger) openQueue(at time.Time) *window {
	w := &window{worker: "queue", issue: "(merge queue)", queue: true, agentAt: at}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.windows = append(g.windows, w)
	return w
}

// agentStarted opens w's agent window: iteration n's agent starts at at.
func (g *ledger) agentStarted(w *window, n int, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.iteration, w.agentAt = n, at
}

// found takes a finding and charges every window that may have made it
// (couldHaveMade). It returns the windows it names: for a gitFinding,
// each with whether it is charged (a window whose work was integrated is
// not); for a trackerFinding, those charged.
func (g *ledger) found(f finding) []Suspect {
	if len(f.details) == 0 || f.kind == trackerFinding && (f.by == nil || f.by.judged) {
		return nil // a closed window's judgement charges nobody
	}
	why := ""
	if f.kind == gitFinding {
		why = "while this iteration ran, " + strings.Join(f.details, "; ") +
			"; ralphd cannot tell which agent did it, so every iteration whose window was open is charged"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var named []Suspect
	for _, w := range g.windows {
		if !w.couldHaveMade(f) {
			continue
		}
		s := Suspect{Worker: w.worker, Issue: w.issue, Charged: true}
		switch f.kind {
		case trackerFinding:
			for _, d := range f.details {
				w.charges = append(w.charges, charge{detail: d, iteration: f.by.iteration, worker: f.by.worker, issueID: f.by.issue})
			}
		case gitFinding:
			s.Charged = !w.integrated
			if s.Charged && w.failure == "" {
				w.failure = why
			}
		}
		named = append(named, s)
	}
	return named
}

// chargeHidden lays on w a change a full reading of the tracker found
// hidden from the readings of what changed (trackread.go), when w's
// judgement has not ended: it takes it as its own violation. It reports
// whether it did.
func (g *ledger) chargeHidden(w *window, detail string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.judged {
		return false
	}
	w.charges = append(w.charges, charge{detail: detail, hidden: true})
	return true
}

// judged ends w's judgement: it returns the charges others' judgements
// laid on it, and no later trackerFinding charges it. Charges are never
// passed on: a charge is not a finding.
func (g *ledger) judged(w *window) []charge {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.judged {
		return nil
	}
	w.judged = true
	mine := w.charges
	w.charges = nil
	return mine
}

// closeAgent ends w's agent window, judged or not: no later
// trackerFinding charges it, and the charges not taken are dropped. The
// queue's window leaves the ledger.
func (g *ledger) closeAgent(w *window) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.judged, w.charges = true, nil
	if w.queue {
		g.windows = slices.DeleteFunc(g.windows, func(x *window) bool { return x == w })
	}
}

// end records the end of w's iteration, and returns when it was.
func (g *ledger) end(w *window) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.ended = time.Now()
	return w.ended
}

// integrated marks w's work as on the target: a gitFinding made later is
// not charged to it.
func (g *ledger) integrated(w *window) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w.integrated = true
	if w.ended.IsZero() {
		w.ended = time.Now()
	}
}

// failed returns why w's attempt fails (a gitFinding was charged to it),
// or "".
func (g *ledger) failed(w *window) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return w.failure
}

// openWindow opens the agent window of an iteration of a worker, whose
// agent is about to start; the returned func closes it. Outside workers
// it does nothing.
func (l *Loop) openWindow(it *buildIter) func() {
	p := l.pool()
	if p == nil || l.seat.win == nil {
		return func() {}
	}
	it.win = l.seat.win
	p.ledger.agentStarted(it.win, it.n, l.now())
	return func() { p.ledger.closeAgent(it.win) }
}

// chargeConcurrent ends an iteration's judgement in a worker pool: what it
// found that no agent owned up to (it.rec.Violations so far) is charged to
// every other open window too, and the charges others laid on it become
// its own violations. Call it once, inside the judging window, after
// everything this judgement reads and reverts. Outside workers it does
// nothing.
func (l *Loop) chargeConcurrent(res *Result, it *buildIter) {
	p := l.pool()
	if p == nil || it.win == nil {
		return
	}
	at := l.now()
	if !it.foundAt.IsZero() && it.foundAt.Before(at) {
		// The reading was shared and taken before this judgement began:
		// a window opened after it cannot have made what it holds.
		at = it.foundAt
	}
	// Sandboxed, no agent and no check can reach the tracker, the state or
	// the run log: no other window can have made what this judgement found.
	p.ledger.found(finding{kind: trackerFinding, details: slices.Clone(it.rec.Violations), by: it.win, at: at, sandboxed: l.sandboxed(ModeBuild)})
	for _, c := range p.ledger.judged(it.win) {
		detail := fmt.Sprintf("%s — found by iteration %d (worker %s, issue %s) while this iteration's agent ran beside it; "+
			"ralphd cannot tell which agent made it, so every iteration whose window was open is charged", c.detail, c.iteration, c.worker, c.issueID)
		if c.hidden {
			detail = c.detail
		}
		l.violation(res, it, it.issue.ID, "concurrent_window", detail, "charged: "+detail)
		l.human().Warn("charged with a forbidden change found while this iteration ran beside others", "issue", it.issue.ID, "found by", c.issueID, "change", c.detail)
	}
}

// refMoved reports a gitFinding of the worker pool (a move of a ref it
// owns that ralphd did not make, or something planted where git opens a
// file) as violations: one ref_moved event for each iteration the ledger
// named (the pool fails the attempts of those not yet integrated), or
// one with no issue when no window was open. The move is already put
// back, and what it pointed at kept on a branch.
func (l *Loop) refMoved(p *Pool) func(RefMove) {
	return func(m RefMove) {
		detail := m.String()
		if len(m.Suspects) == 0 {
			l.event(logjsonl.EventViolation, logjsonl.Violation{Mode: ModeBuild, Kind: "ref_moved", Detail: detail + "; no agent window was open"})
		}
		for _, s := range m.Suspects {
			d := detail + "; charged to this iteration (worker " + s.Worker + "): its agent window was open since the refs were last in place"
			if !s.Charged {
				d = detail + "; this iteration (worker " + s.Worker + ") was open beside it, but its work was already integrated"
			}
			l.event(logjsonl.EventViolation, logjsonl.Violation{IssueID: s.Issue, Mode: ModeBuild, Kind: "ref_moved", Detail: d})
		}
		p.resMu.Lock()
		p.res.Violations++
		p.resMu.Unlock()
		l.human().Warn("a ref ralphd owns was moved behind its back: put back", "move", detail, "kept", m.Kept)
	}
}

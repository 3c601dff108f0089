package modes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
)

// An epic is BUILD work only once its children are done. bd lists an open
// epic as ready whatever its children's state, but refuses to close it
// while one of them is not closed ("cannot close epic E: 2 open child
// issue(s)"); BUILD may not close it with --force, nor close the children
// (other issues), so an iteration on such an epic can only fail, and
// three failures would mark it STUCK with nothing wrong in it. The single
// loop (pick) and the workers (claimNext) pass over an epic whose children
// are not all closed: not an attempt, and not given up on for the run, so
// that the epic is taken, to be checked and closed, once its children are.
// A worker's child still held by the pool (closed, its work not on the
// target yet) counts as not done.

// epicFamily is, for each epic of a reading that is not closed, its
// children there.
type epicFamily struct {
	children map[string][]string // epic → its children, in id order
	closed   map[string]bool     // child → closed in the reading
	open     map[string]bool     // epic → status open (bd lists it as ready when unblocked)
}

// familyOf reads the epics and their children from s (children by their
// parent).
func familyOf(s guard.Snapshot) *epicFamily {
	f := &epicFamily{children: map[string][]string{}, closed: map[string]bool{}, open: map[string]bool{}}
	for id, is := range s {
		if is.IssueType == beads.TypeEpic && is.Status != beads.StatusClosed {
			f.children[id] = nil
			f.open[id] = is.Status == beads.StatusOpen
		}
	}
	for id, is := range s {
		if _, ok := f.children[is.Parent]; ok && is.Parent != id {
			f.children[is.Parent] = append(f.children[is.Parent], id)
			if is.Status == beads.StatusClosed {
				f.closed[id] = true
			}
		}
	}
	for _, kids := range f.children {
		slices.Sort(kids)
	}
	return f
}

// waitsOn returns the children of epic that are not done: not closed in
// the reading, or in held (a worker's, not on the target yet). It is
// empty for an issue that is not an epic of the reading, and for an epic
// whose children are all done.
func (f *epicFamily) waitsOn(epic string, held map[string]bool) []string {
	var out []string
	for _, c := range f.children[epic] {
		if !f.closed[c] || held[c] {
			out = append(out, c)
		}
	}
	return out
}

// waiting reports whether some epic of the reading waits on its children,
// and whether every one does.
func (f *epicFamily) waiting(held map[string]bool) (some, all bool) {
	all = true
	for epic := range f.children {
		if len(f.waitsOn(epic, held)) > 0 {
			some = true
		} else {
			all = false
		}
	}
	return some, some && all
}

// waitingText names each open epic of the reading that waits on its
// children, with them ("ab-1 on ab-1.1, ab-1.2"), in id order; "" when
// none does.
func (f *epicFamily) waitingText() string {
	var out []string
	for _, epic := range slices.Sorted(func(yield func(string) bool) {
		for e := range f.children {
			if f.open[e] && !yield(e) {
				return
			}
		}
	}) {
		if kids := f.waitsOn(epic, nil); len(kids) > 0 {
			out = append(out, epic+" on "+strings.Join(kids, ", "))
		}
	}
	return strings.Join(out, "; ")
}

// epicWaits is the check of a ready issue before it counts as work (the
// single loop's pick, the daemon's decision, a pool's last readyLeft):
// the children an epic among ready waits on (nil for any other issue).
// The reading is taken only when ready holds an epic, once per check.
type epicWaits struct {
	l   *Loop
	fam *epicFamily
}

// of returns the children is waits on.
func (w *epicWaits) of(ctx context.Context, is beads.Issue) ([]string, error) {
	if is.IssueType != beads.TypeEpic {
		return nil, nil
	}
	if w.fam == nil {
		snap, err := w.l.snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the children of epic %s: %w", is.ID, err)
		}
		w.fam = familyOf(snap)
	}
	return w.fam.waitsOn(is.ID, nil), nil
}

// passOver records, once a run for each epic and set of children, that
// the loop passes over epic because it waits on kids (the run log's
// decision). The human log says it once a Loop: the daemon's batches
// would repeat it every batch, unchanged.
func (l *Loop) passOver(res *Result, epic string, kids []string) {
	on := strings.Join(kids, ", ")
	if res.waiting == nil {
		res.waiting = map[string]string{}
	}
	if res.waiting[epic] == on {
		return
	}
	res.waiting[epic] = on
	l.event(logjsonl.EventDecision, logjsonl.Decision{IssueID: epic, Decision: "wait", Reason: "epic waits on its children: " + on})
	if l.saidWaits == nil {
		l.saidWaits = map[string]string{}
	}
	if l.saidWaits[epic] != on {
		l.saidWaits[epic] = on
		l.human().Info("passing over an epic until its children are closed", "issue", epic, "children", on)
	}
}

// epicsHeld ends the single loop's run with exit 6 (stopHeld) when an
// epic it passes over was ready when the run began and waits on a child
// this run's BUILD created: that work is BUILD's to answer for, as a
// status or a dependency it set is (heldBack). nil: none is.
func (l *Loop) epicsHeld(ctx context.Context, res *Result) error {
	now, err := l.snapshot(ctx)
	if err != nil {
		return nil // the stop that follows names the epics all the same
	}
	held := res.ledger().heldBack(now, res.Skipped)
	held = slices.DeleteFunc(held, func(h heldIssue) bool { return !slices.Contains(res.passed, h.id) })
	if len(held) == 0 {
		return nil
	}
	return l.stopHeld(ctx, res, held)
}

// claimNext is a worker's claim: bd's first ready unassigned issue in the
// pool's scope, passing over the epics that wait on their children (as
// the last judgement left the tracker, and the children the pool holds).
// When every epic waits, bd passes over the epics itself, in the one call
// of an unscoped claim (`bd ready --claim --exclude-type epic`); when that
// finds nothing, bd's whole list is asked, so that an epic the reading
// does not know yet is not passed over unseen.
func (p *Pool) claimNext(ctx context.Context, cl *beads.Claimer) (beads.ClaimResult, error) {
	f := p.epics.Load()
	if f == nil {
		return cl.NextIn(ctx, p.Scope, p.InScope)
	}
	held := p.heldIDs()
	some, all := f.waiting(held)
	if !some {
		return cl.NextIn(ctx, p.Scope, p.InScope)
	}
	if p.Scope == "" && all {
		res, err := cl.NextExcept(ctx, beads.TypeEpic)
		if err != nil || res.Outcome != beads.Empty {
			return res, err
		}
	}
	return cl.NextIn(ctx, p.Scope, func(is beads.Issue) bool {
		if p.InScope != nil && !p.InScope(is) {
			return false
		}
		return len(f.waitsOn(is.ID, held)) == 0
	})
}

// heldIDs returns the issues the pool's workers hold now.
func (p *Pool) heldIDs() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]bool, len(p.held))
	for id := range p.held {
		out[id] = true
	}
	return out
}

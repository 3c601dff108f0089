package modes

import (
	"context"
	"slices"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// readyAnswer is the last `bd ready` answer of the single loop, with the
// snapshot of the tracker it was read at.
type readyAnswer struct {
	parent string // the scope it was asked for
	issues []beads.Issue
	at     guard.Snapshot
	fp     string // the fingerprint of .beads/ at was taken at
}

// readyWork returns the ready work, in bd's order: the previous `bd
// ready` answer while the tracker's changes since it cannot have made
// another issue ready or changed the order (readyStillHolds), filtered to
// the issues still ready; else bd's answer afresh. A reused answer is
// never empty, but for one bd gave empty at the very reading the tracker
// is still at (.beads/ unchanged since: the run's start asked a moment
// ago): when none of it is left, bd is asked, so a run never stops with
// "all work complete" on a stale answer.
func (l *Loop) readyWork(ctx context.Context) ([]beads.Issue, error) {
	parent := l.Config.Scope
	if beads.ServerMode(l.beadsDir(), l.environ()) {
		// Every snapshot is a bd call in server mode (see snapshot):
		// comparing two would cost what asking bd costs.
		return l.BD.Ready(ctx, beads.ReadyOptions{Parent: parent})
	}
	if a := l.lastReady; a.at != nil && a.parent == parent {
		if now, err := l.snapshot(ctx); err == nil && readyStillHolds(a.at, now) {
			if left := stillReady(a.issues, a.at, now); len(left) > 0 {
				return left, nil
			}
			if len(a.issues) == 0 && a.fp != "" && a.fp == l.snap.fp {
				return nil, nil
			}
		}
	}
	l.lastReady = readyAnswer{}
	// The snapshot the answer is read at: the cached one, when .beads/ is
	// as it was then (a list here is the one the iteration's start would
	// take anyway). A write racing the call below only makes the answer
	// newer than at, so later comparisons from at see more changes, not
	// fewer.
	at, err := l.snapshot(ctx)
	fp := l.snap.fp
	if err != nil {
		at = nil
	} else if now, err := Fingerprint(l.beadsDir()); err != nil || now != fp {
		at = nil
	}
	ready, err := l.BD.Ready(ctx, beads.ReadyOptions{Parent: parent})
	if err != nil {
		return nil, err
	}
	if at != nil {
		l.lastReady = readyAnswer{parent: parent, issues: ready, at: at, fp: fp}
	}
	return ready, nil
}

// readyStillHolds reports whether the changes from snapshot at to now
// leave bd's ready answer at `at` exactly right but for the issues that
// left it: no issue created or deleted; no change to what readiness or
// the order depends on (priority, type, parent, labels, the dependency
// counts, defer); status changes only open→in_progress, open→closed and
// in_progress→closed; every issue that closed has no dependencies and no
// dependents (its close unblocks nothing); and no issue is deferred at
// all (a deferral can run out without any change).
func readyStillHolds(at, now guard.Snapshot) bool {
	if len(at) != len(now) {
		return false
	}
	for id, b := range at {
		a, ok := now[id]
		if !ok {
			return false
		}
		if a.Priority != b.Priority || a.IssueType != b.IssueType || a.Parent != b.Parent ||
			a.DependencyCount != b.DependencyCount || a.DependentCount != b.DependentCount ||
			!slices.Equal(sortedLabels(a.Labels), sortedLabels(b.Labels)) ||
			!a.DeferUntil.IsZero() || !b.DeferUntil.IsZero() {
			return false
		}
		if a.Status == b.Status {
			continue
		}
		switch {
		case b.Status == beads.StatusOpen && a.Status == beads.StatusInProgress:
		case (b.Status == beads.StatusOpen || b.Status == beads.StatusInProgress) && a.Status == beads.StatusClosed:
			if a.DependencyCount != 0 || a.DependentCount != 0 {
				return false
			}
		default:
			// in_progress→open among them: an issue that was not in the
			// answer (ready means open) would be ready now.
			return false
		}
	}
	return true
}

// stillReady is the answer read at `at` without the issues that left it
// by now (no longer open, or assigned otherwise), each as now has it.
func stillReady(answer []beads.Issue, at, now guard.Snapshot) []beads.Issue {
	var out []beads.Issue
	for _, is := range answer {
		cur, ok := now[is.ID]
		if !ok || cur.Status != beads.StatusOpen || cur.Assignee != at[is.ID].Assignee {
			continue
		}
		cur.Comments = nil // as bd ready prints it
		out = append(out, cur)
	}
	return out
}

func sortedLabels(ls []string) []string {
	if slices.IsSorted(ls) {
		return ls
	}
	return slices.Sorted(slices.Values(ls))
}

package modes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
)

// The single loop's claims on a shared tracker (issue 33).
//
// On a tracker of its own (embedded mode) the single loop is the only
// one picking work, and it works the first ready issue without claiming
// it, as it always has. On a tracker other clones share (bd's server
// mode) their loops read the same `bd ready`, so each would work the
// same issue. There the single loop claims the issue it picked with bd's
// atomic claim (`bd update <id> --claim`, read back), as the worker pool
// does, as this clone's first worker, ralphd/<host>/<clone>/w1. A claim
// lost to another clone is a lost race, not an attempt: the loop picks
// the next issue. Ready issues another actor holds (an assignee) are
// passed over, as `bd ready --claim` passes them over. After the
// iteration the claim is given back unless the issue was closed, and a
// run's start gives back what a crashed run of this clone left claimed.
// Each clone's judgement leaves alone the claims, closes and releases of
// another ralphd's actors: that ralphd judges its own iterations.

// loopWorker is the worker the single loop claims as on a shared tracker.
const loopWorker = "w1"

// claimsShared reports whether this Loop claims the issues it works: a
// single loop (not a pool's worker) on a tracker other clones share.
func (l *Loop) claimsShared() bool {
	return l.seat == nil && beads.ServerMode(l.beadsDir(), l.environ())
}

// loopClaimer is the single loop's claimer, as its worker's actor.
func (l *Loop) loopClaimer() *beads.Claimer {
	actor := l.WorkerActor(loopWorker)
	return &beads.Claimer{Tracker: l.workerClient(actor, l.Dir), Actor: actor}
}

// heldByOther reports whether is, offered by bd ready, has an assignee
// other than the single loop's claim: another clone's or a person's.
func (l *Loop) heldByOther(is beads.Issue) bool {
	return is.Assignee != "" && is.Assignee != l.WorkerActor(loopWorker)
}

// claimPick claims is for the single loop. won is false when another
// clone got it first (or it is no longer claimable): that is not an
// attempt, and it is logged as a "lost" decision.
func (l *Loop) claimPick(ctx context.Context, is beads.Issue) (won bool, err error) {
	r, err := l.loopClaimer().Claim(ctx, is.ID)
	if err != nil {
		return false, fmt.Errorf("claim %s on the shared tracker: %w", is.ID, err)
	}
	if r.Outcome == beads.Won {
		l.snap.invalidate()
		return true, nil
	}
	why := "claim " + r.Outcome.String()
	if r.Holder != "" {
		why += ": held by " + r.Holder
	}
	l.event(logjsonl.EventDecision, logjsonl.Decision{IssueID: is.ID, Decision: "lost", Reason: why + "; not an attempt"})
	l.human().Info("lost the claim to another clone sharing the tracker; not an attempt", "issue", is.ID, "outcome", r.Outcome.String(), "holder", r.Holder)
	return false, nil
}

// dropLoopClaim gives back the single loop's claim on id after its
// iteration, unless the issue is closed: an in-progress issue goes back
// to open and unassigned, any other status (an agent may set its issue
// blocked) keeps its status and loses the assignee. It runs on a context
// that outlives a stop.
func (l *Loop) dropLoopClaim(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cl := l.loopClaimer()
	cur, err := cl.Tracker.Show(ctx, id)
	if err == nil && (cur.Assignee != cl.Actor || cur.Status == beads.StatusClosed) {
		return
	}
	if err == nil {
		if cur.Status == beads.StatusInProgress {
			_, err = cl.Tracker.Release(ctx, id)
		} else {
			_, err = l.workerClient(cl.Actor, l.Dir).Update(ctx, id, beads.Set{Flag: "assignee"})
		}
	}
	if err != nil {
		l.human().Warn("could not give back this clone's claim; `bd update ID --status open --assignee \"\"` frees it, and the next run's start tries again", "issue", id, "err", err)
		return
	}
	l.snap.invalidate()
}

// recoverLoopClaims gives back the claims the single loop's actor still
// holds when a run starts: a crashed run's. The fleet's own issues are
// never the loop's. It frees the claims this clone's actors left on open
// issues too (claimsleft.go).
func (l *Loop) recoverLoopClaims(ctx context.Context) error {
	cl := l.loopClaimer()
	held, err := l.BD.List(ctx, beads.ListOptions{Status: beads.StatusOpen + "," + beads.StatusInProgress})
	if err != nil {
		return fmt.Errorf("list this clone's claims: %w", err)
	}
	prefix, c := l.WorkerActor(""), l.workerClient(cl.Actor, l.Dir)
	for _, is := range held {
		if leftClaim(is, prefix, nil) {
			if err := freeClaim(ctx, c, is.ID); err != nil {
				return err
			}
			l.human().Info("freed a claim a worker of this clone left on an open issue", "issue", is.ID, "assignee", is.Assignee)
			continue
		}
		if is.Status != beads.StatusInProgress || is.Assignee != cl.Actor || is.HasLabel(FleetLabel) {
			continue
		}
		if _, err := cl.Tracker.Release(ctx, is.ID); err != nil {
			return fmt.Errorf("give back %s, claimed by a run of this clone that stopped: %w", is.ID, err)
		}
		l.human().Info("gave back a claim a stopped run of this clone left", "issue", is.ID)
	}
	l.snap.invalidate()
	return nil
}

// otherRalphd reports whether v, found by a judgement on a tracker other
// clones share, is another ralphd's own move on an issue it works: its
// claim (in progress under its actor), its close, or its giving the claim
// back (unassigned and not closed, held by its actor before). That
// ralphd's judgement judges it. own is this clone's actor prefix.
func otherRalphd(v guard.Violation, before, after guard.Snapshot, own string) bool {
	if v.Kind != guard.OtherStatus && v.Kind != guard.OtherAssignee {
		return false
	}
	a, b := after[v.IssueID], before[v.IssueID]
	switch {
	case otherActor(a.Assignee, own):
		// Its claim or close, or any status while it held the issue
		// throughout (its agent's, or its judgement's).
		return a.Status == beads.StatusInProgress || a.Status == beads.StatusClosed || otherActor(b.Assignee, own)
	case otherActor(b.Assignee, own):
		return a.Assignee == "" && a.Status != beads.StatusClosed
	}
	return false
}

// otherActor reports whether actor is another ralphd's (another clone's
// worker or single loop), own being this clone's actor prefix.
func otherActor(actor, own string) bool {
	return strings.HasPrefix(actor, workerActorPrefix) && !strings.HasPrefix(actor, own)
}

// othersCloses drops, in a single loop's judgement on a shared tracker,
// the closes of issues another ralphd's actor holds: that ralphd judges
// them, by their checks in its own clone, whose code this clone may not
// have yet.
func (l *Loop) othersCloses(others []beads.Issue, after guard.Snapshot) []beads.Issue {
	if !l.claimsShared() {
		return others
	}
	own := l.WorkerActor("")
	return slices.DeleteFunc(others, func(o beads.Issue) bool { return otherActor(after[o.ID].Assignee, own) })
}

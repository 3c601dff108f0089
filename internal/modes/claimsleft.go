package modes

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralphd/ralphd/internal/beads"
)

// Claims left behind on open issues. A worker's claim sets an issue
// in_progress and assigns it to the worker's actor. bd keeps the assignee
// when the issue goes back to open (`bd reopen`, or `--status open`
// alone), and `bd ready --claim` never takes an open issue with an
// assignee, the claiming actor's own included (the contract's
// claim-ready-claim-own-assigned-json), while plain `bd ready` lists it.
// So an issue one of this clone's workers closed and that was reopened
// since (by a person, by PLANNING, or by ralphd charging the iteration
// that closed it) would be passed over by every later claim, and a run
// would report "all work complete" with the issue open and ready.
//
// An open issue assigned to one of this clone's worker actors that no
// worker of the run holds is such a claim left behind: its holder's
// claim ended. ralphd frees it (`bd update <id> --assignee ""`, which
// leaves the status alone): when a run starts (recoverClaims,
// recoverLoopClaims), when ralphd reopens such an issue itself
// (chargeWindows), before the workers leave having found nothing to
// claim (freeLeftOnLeave: an agent reopened it mid-run; the run works
// it), and, should one still be left, before a pool reports its work done
// (readyLeft), which then ends the run with exit 3, not 0.
// An issue assigned to anyone else (a person, another clone's ralphd) is
// left as it is.

// freeLeftOnLeave is the workers' last look before they leave, having
// found nothing to claim: the claims left on open issues (an agent may
// reopen an issue another worker closed, as BUILD may) are freed with c,
// once a generation, and it reports whether any was: then that work is
// claimable, a new generation starts, and the worker claims again rather
// than leave the issue to the next run (readyLeft's exit 3).
func (p *Pool) freeLeftOnLeave(ctx context.Context, c *beads.Client) bool {
	p.mu.Lock()
	if p.leftLooked == p.gen+1 {
		p.mu.Unlock()
		return false
	}
	p.leftLooked = p.gen + 1
	p.mu.Unlock()
	ready, err := c.Ready(ctx, beads.ReadyOptions{Parent: p.Scope})
	if err != nil {
		return false // readyLeft looks again before the run's end
	}
	freed := 0
	for _, is := range ready {
		if !leftClaim(is, p.actorPrefix, p.holds) {
			continue
		}
		if err := freeClaim(ctx, c, is.ID); err != nil {
			continue
		}
		freed++
		p.log(Event{Issue: is.ID, Kind: "recovered", Detail: "freed the claim " + is.Assignee + " left on it when it was reopened"})
	}
	if freed == 0 {
		return false
	}
	p.mu.Lock()
	p.eventLocked()
	p.mu.Unlock()
	return true
}

// leftClaim reports whether is is a claim left behind by one of the
// actors under prefix (a clone's worker actors, WorkerActor("")): open,
// assigned under prefix, not the fleet's, and not held now (held may be
// nil: nobody holds anything).
func leftClaim(is beads.Issue, prefix string, held func(id string) bool) bool {
	return prefix != "" && is.Status == beads.StatusOpen && strings.HasPrefix(is.Assignee, prefix) &&
		!is.HasLabel(FleetLabel) && (held == nil || !held(is.ID))
}

// freeClaim clears the assignee of id, a claim left behind (leftClaim),
// with c.
func freeClaim(ctx context.Context, c *beads.Client, id string) error {
	if _, err := c.Update(ctx, id, beads.Set{Flag: "assignee"}); err != nil {
		return fmt.Errorf("free the claim left on the open issue %s (`bd update %s --assignee \"\"` frees it): %w", id, id, err)
	}
	return nil
}

// passedOver reports whether a BUILD run of l's with the given number of
// workers passes over the ready issue is for its assignee. Workers claim
// with `bd ready --claim`, which skips an assigned issue, and one loop on
// a tracker other clones share passes over an issue someone else holds
// (heldByOther): both pass over an issue assigned to anyone, but for a
// claim this clone's workers left behind, which they free. The single
// loop on a tracker of its own claims nothing, and takes the issue
// whatever its assignee. The daemon counts only what a batch takes
// (daemon.decide): counted, an issue passed over would start batches that
// claim nothing, without end.
func (l *Loop) passedOver(is beads.Issue, workers int) bool {
	if is.Assignee == "" || leftClaim(is, l.WorkerActor(""), nil) {
		return false
	}
	if workers > 1 {
		return true
	}
	return l.claimsShared() && l.heldByOther(is)
}

// holds reports whether a worker of p holds issue id now.
func (p *Pool) holds(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[id] != nil
}

package mergeq

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/proc"
)

// Integrate runs req through the queue; calls are serialised. Each round
// takes the steps of integration.round, in order; the strategy's Landing
// (or a step that ends the integration) makes the result.
func (q *Queue) Integrate(ctx context.Context, req Request) (Result, error) {
	req, err := q.handOver(ctx, req)
	if err != nil {
		return Result{}, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.scrub(); err != nil {
		return Result{}, err
	}
	in := &integration{q: q, req: req, strategy: q.strategy()}
	for in.res.Rounds < q.maxRounds() {
		if in.res.Rounds > 0 {
			// Another clone landed first: wait a little, a random part of
			// a time that doubles each round, so that clones racing for
			// the remote do not meet in step again.
			if err := proc.Sleep(ctx, backoff(in.res.Rounds, rand.N[int64])); err != nil {
				return in.res, fmt.Errorf("integrate %s: %w", req.Issue, err)
			}
		}
		in.res.Rounds++
		if ended, err := in.round(ctx); ended || err != nil {
			return in.res, err
		}
	}
	// Every round's landing asked for another: every push was rejected,
	// or the target moved each time.
	in.res.Rejected = true
	return in.res, in.keep(ctx)
}

// handOver returns req with the work it names: Hand's result when the
// caller did not hand it over itself.
func (q *Queue) handOver(ctx context.Context, req Request) (Request, error) {
	if req.Commit == "" {
		c, err := q.Hand(ctx, req)
		if err != nil {
			return req, err
		}
		req.Commit = c
	}
	if !git.IsHash(req.Commit) {
		return req, fmt.Errorf("integrate: %q is not a commit id", req.Commit)
	}
	return req, nil
}

// Pauses between rounds: backoff's first and its longest.
const (
	backoffBase = 50 * time.Millisecond
	backoffMax  = 2 * time.Second
)

// backoff is the pause before the round after the rejected round n (from
// 1): half of backoffBase·2^(n-1), capped at backoffMax, plus a random
// part of the other half, drawn by randN (a number in [0, its argument)).
func backoff(n int, randN func(int64) int64) time.Duration {
	d := backoffMax
	if n <= 6 {
		d = min(backoffBase<<(n-1), backoffMax)
	}
	half := int64(d / 2)
	return time.Duration(half + randN(half+1))
}

// maxRounds is MaxPushTries, or its default.
func (q *Queue) maxRounds() int {
	if q.MaxPushTries <= 0 {
		return DefaultMaxPushTries
	}
	return q.MaxPushTries
}

// integration is one request on its way through the queue, which holds
// q.mu throughout.
type integration struct {
	q        *Queue
	req      Request
	strategy Strategy
	res      Result
	// dir is the queue's worktree once the work is checked out there;
	// run runs the round's git calls in it.
	dir string
	run *git.Runner
	// base is what this round rebased onto, tip the rebased work.
	base, tip string
}

// round is one fetch-rebase-verify-land round. It reports ended when the
// result is final; a round that does not end asks for another (the
// strategy's Landing.Again).
func (in *integration) round(ctx context.Context) (ended bool, err error) {
	for _, step := range []func(context.Context) (bool, error){
		in.prepare,      // the target checked, the work checked out
		in.rebase,       // onto the target: a conflict ends it, kept
		in.checkTracker, // changes to .beads/'s own files end it, kept
		in.verify,       // a red verify ends it, kept
		in.land,         // the strategy: integrated, waiting, refused, or again
	} {
		if ended, err := step(ctx); ended || err != nil {
			return true, err
		}
	}
	return false, nil
}

// prepare checks the target (guard) and, in the first round, asks the
// caller to admit the work and checks it out in the queue's worktree.
func (in *integration) prepare(ctx context.Context) (bool, error) {
	if _, err := in.q.guard(ctx); err != nil {
		return true, err
	}
	// The queue worktree's git calls up to verify share one drivers
	// lookup: no code runs there before verify (see git.Runner).
	if in.res.Rounds > 1 {
		in.run = git.NewRunner(in.dir)
		return false, nil
	}
	if in.req.Admit != nil {
		if err := in.req.Admit(); err != nil {
			return true, err
		}
	}
	var err error
	in.dir, in.run, err = in.q.checkoutWork(ctx, in.req.Commit)
	return err != nil, err
}

// rebase rebases the work onto the target's tip (the remote's, fetched,
// with a remote). A conflict ends the integration, the work kept; so does
// work that holds nothing the target lacks (Empty), with nothing to keep.
func (in *integration) rebase(ctx context.Context) (bool, error) {
	base, err := in.q.base(ctx)
	if err != nil {
		return true, err
	}
	conflicts, err := in.q.rebase(ctx, in.run, in.dir, in.req, base)
	if err != nil {
		return true, err
	}
	if len(conflicts) > 0 {
		in.res.Conflicts = conflicts
		return true, in.keep(ctx)
	}
	tip, err := line(ctx, in.dir, "rev-parse", "HEAD")
	if err != nil {
		return true, err
	}
	if tip == base {
		in.res.Empty, in.res.Commit = true, base
		return true, nil
	}
	in.base, in.tip = base, tip
	return false, nil
}

// checkTracker ends the integration, the work kept, when the work adds,
// changes or deletes the tracker's own files (Result.Tracker).
func (in *integration) checkTracker(ctx context.Context) (bool, error) {
	files, err := trackerFiles(ctx, in.run, in.base, in.tip)
	if err != nil {
		return true, err
	}
	if len(files) == 0 {
		return false, nil
	}
	in.res.Tracker = files
	return true, in.keep(ctx)
}

// verify runs Queue.Verify on the rebased work; a red verify ends the
// integration, the work kept. A verify cut short by ctx is no verdict.
func (in *integration) verify(ctx context.Context) (bool, error) {
	if in.q.Verify == nil {
		return false, nil
	}
	err := in.q.Verify(ctx, in.dir)
	if err == nil {
		return false, nil
	}
	if ctx.Err() != nil {
		return true, fmt.Errorf("integrate %s: %w", in.req.Issue, ctx.Err())
	}
	in.res.VerifyErr = err
	return true, in.keep(ctx)
}

// land records the rebased, verified work (Request.Rebased), then hands
// it to the strategy and takes its Landing into the result: integrated,
// waiting, refused (the work kept), or again (not ended: another round).
func (in *integration) land(ctx context.Context) (bool, error) {
	if in.req.Rebased != nil {
		if err := in.req.Rebased(in.tip); err != nil {
			return true, fmt.Errorf("integrate %s: %w", in.req.Issue, err)
		}
	}
	l, err := in.strategy.Land(ctx, in.q, Work{Request: in.req, Commit: in.tip, Base: in.base, Dir: in.dir})
	if err != nil {
		in.res.Kept = l.Kept
		return true, err
	}
	if l.Again {
		return false, nil
	}
	switch l.Outcome {
	case Integrated:
		in.res.Integrated, in.res.Commit, in.res.LocalErr, in.res.Branch = true, l.Commit, l.LocalErr, l.Branch
	case Waiting:
		in.res.Waiting, in.res.Commit, in.res.Why, in.res.Branch, in.res.PR = true, l.Commit, l.Why, l.Branch, l.PR
	default:
		in.res.Why = l.Why
		return true, in.keep(ctx)
	}
	return true, nil
}

// keep keeps the work on a kept branch, as the queue's worktree has it,
// and records where in the result.
func (in *integration) keep(ctx context.Context) error {
	var err error
	in.res.Kept, err = in.q.keep(ctx, in.dir, in.req)
	return err
}

// A Claimer takes work for one ralphd worker through bd's own atomic
// claims, and nothing else: the tracker is the only coordinator.
//
// A worker claims an issue with its own actor (ralphd/<host>/<worker>),
// and works only when the issue is in_progress and assigned to that
// actor, as read back after the claim (Tracker.Show, or the caller's
// ReadBack): bd 1.0.3 could tell two workers they both held one issue
// (GH-3570), and a read-back after both claims tells the loser. A lost
// race (another holder, nothing left, a Dolt serialization failure) is a
// ClaimOutcome, never an error and never an attempt; serialization failures
// are retried with jittered backoff, a bounded number of times.

package beads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// Tracker is the part of a bd client a Claimer uses. A *beads.Client whose
// Actor is the worker's actor implements it.
type Tracker interface {
	Claim(ctx context.Context, id string) (Issue, error)
	ReadyClaim(ctx context.Context, f ClaimFilter) (Issue, bool, error)
	Show(ctx context.Context, id string) (Issue, error)
	Release(ctx context.Context, id string) (Issue, error)
}

// ClaimOutcome says how a claim ended.
type ClaimOutcome int

const (
	// Won: the issue is in_progress and assigned to the actor, read back.
	Won ClaimOutcome = iota + 1
	// Lost: someone else holds the issue, or the read-back did not show
	// the actor; not an attempt.
	Lost
	// Busy: every try lost a serialization race; try again later. Not an
	// attempt and not an error.
	Busy
	// Unclaimable: the issue's status does not allow a claim (closed,
	// deferred, blocked, ...).
	Unclaimable
	// Empty: `ready --claim` found nothing to claim.
	Empty
)

// String names the outcome.
func (o ClaimOutcome) String() string {
	switch o {
	case Won:
		return "won"
	case Lost:
		return "lost"
	case Busy:
		return "busy"
	case Unclaimable:
		return "unclaimable"
	case Empty:
		return "empty"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// ClaimResult is a claim's outcome.
type ClaimResult struct {
	Outcome ClaimOutcome
	// Issue is the claimed issue as read back (Won), or as last seen.
	Issue Issue
	// Holder is who holds the issue when the claim was Lost ("" if
	// nobody: the read-back found it unassigned).
	Holder string
	// Status is the issue's status when it was Unclaimable.
	Status string
	// Tries counts bd claim calls, serialization retries included.
	Tries int
}

// Defaults for a Claimer's zero fields.
const (
	DefaultMaxTries  = 6
	DefaultBaseDelay = 50 * time.Millisecond
	DefaultMaxDelay  = 2 * time.Second
)

// Claimer claims issues for one actor.
type Claimer struct {
	Tracker Tracker
	// Actor is the worker's bd actor; the read-back compares the assignee
	// with it. It must be the actor the Tracker passes to bd.
	Actor string
	// MaxTries bounds the claim calls per Claim/Next when bd keeps
	// failing with serialization failures; zero means DefaultMaxTries.
	MaxTries int
	// BaseDelay and MaxDelay shape the full-jitter backoff between
	// retries: try n waits a uniform time in [0, min(MaxDelay,
	// BaseDelay·2^n)]. Zero means the defaults.
	BaseDelay, MaxDelay time.Duration
	// Rand returns a uniform float in [0,1); nil means math/rand/v2.
	Rand func() float64
	// Sleep waits d or until ctx ends; nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// ExcludeLabels are passed over by Next (e.g. the stuck label).
	ExcludeLabels []string
	// ReadBack, when set, gives the claimed issue instead of
	// Tracker.Show, from claimed, the issue as bd printed it for the
	// claim, and what the caller already holds; found false means Show
	// reads it. The actor holds the issue by what ReadBack returns, as by
	// Show's answer. A pool of workers reads no more for its claims this
	// way.
	ReadBack func(ctx context.Context, claimed Issue) (issue Issue, found bool, err error)
}

// Next claims the first ready unassigned issue (`bd ready --claim`) and
// reads it back.
func (c *Claimer) Next(ctx context.Context) (ClaimResult, error) {
	return c.NextExcept(ctx)
}

// NextExcept is Next passing over the issues of the given types as well
// (`bd ready --claim --exclude-type T`).
func (c *Claimer) NextExcept(ctx context.Context, types ...string) (ClaimResult, error) {
	f := ClaimFilter{ExcludeLabels: c.ExcludeLabels, ExcludeTypes: types}
	return c.run(ctx, func(ctx context.Context) (Issue, bool, error) {
		return c.Tracker.ReadyClaim(ctx, f)
	})
}

// Claim claims issue id (`bd update id --claim`) and reads it back.
func (c *Claimer) Claim(ctx context.Context, id string) (ClaimResult, error) {
	return c.run(ctx, func(ctx context.Context) (Issue, bool, error) {
		is, err := c.Tracker.Claim(ctx, id)
		return is, err == nil, err
	})
}

// run drives one claim: bounded retries on serialization failures, then
// the read-back.
func (c *Claimer) run(ctx context.Context, claim func(context.Context) (Issue, bool, error)) (ClaimResult, error) {
	if c.Actor == "" {
		return ClaimResult{}, errors.New("claim: no actor")
	}
	maxTries := c.MaxTries
	if maxTries <= 0 {
		maxTries = DefaultMaxTries
	}
	var res ClaimResult
	for try := 0; try < maxTries; try++ {
		if try > 0 {
			if err := c.sleep(ctx, c.backoff(try)); err != nil {
				return res, fmt.Errorf("claim: %w", err)
			}
		}
		res.Tries++
		is, ok, err := claim(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return res, fmt.Errorf("claim: %w", ctx.Err())
			}
			r, refused := RefusalOf(err)
			switch {
			case !refused:
				return res, fmt.Errorf("claim: %w", err)
			case r.Kind == Serialization:
				continue // a lost race on a Dolt server: retry with jitter
			case r.Kind == AlreadyClaimed, r.Kind == Stale:
				// Stale: a compare-and-set lost to another writer (from
				// bd's changelog, not verified against that version).
				res.Outcome, res.Holder = Lost, r.Holder
				return res, nil
			default:
				res.Outcome, res.Status = Unclaimable, r.Status
				return res, nil
			}
		}
		if !ok {
			res.Outcome = Empty
			return res, nil
		}
		return c.readBack(ctx, is, res)
	}
	res.Outcome = Busy
	return res, nil
}

// readBack reads the issue bd says was claimed and decides whether the
// actor holds it.
func (c *Claimer) readBack(ctx context.Context, claimed Issue, res ClaimResult) (ClaimResult, error) {
	var got Issue
	found := false
	if c.ReadBack != nil {
		var err error
		if got, found, err = c.ReadBack(ctx, claimed); err != nil {
			return res, fmt.Errorf("claim: read back %s: %w", claimed.ID, err)
		}
	}
	if !found {
		var err error
		if got, err = c.Tracker.Show(ctx, claimed.ID); err != nil {
			return res, fmt.Errorf("claim: read back %s: %w", claimed.ID, err)
		}
	}
	res.Issue = got
	if Holds(got, c.Actor) {
		res.Outcome = Won
		return res, nil
	}
	res.Outcome, res.Holder = Lost, got.Assignee
	return res, nil
}

// Holds reports whether actor holds issue: in_progress and assigned to it.
func Holds(issue Issue, actor string) bool {
	return actor != "" && issue.Status == StatusInProgress && issue.Assignee == actor
}

// backoff is the full-jitter delay before try n (n ≥ 1).
func (c *Claimer) backoff(n int) time.Duration {
	base, ceil := c.BaseDelay, c.MaxDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	if ceil <= 0 {
		ceil = DefaultMaxDelay
	}
	limit := ceil
	if n < 30 && base<<n > 0 && base<<n < ceil {
		limit = base << n
	}
	r := c.Rand
	if r == nil {
		r = rand.Float64
	}
	f := r()
	if f < 0 || f >= 1 {
		f = 0
	}
	return time.Duration(f * float64(limit))
}

// sleep waits d between tries through c.Sleep, or proc.Sleep.
func (c *Claimer) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return proc.Sleep(ctx, d)
}

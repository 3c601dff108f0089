package modes

import (
	"context"
	"errors"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// A worker whose `bd ready --claim` found nothing parks: it waits until
// something happens in the pool that can make work ready (an issue is
// released or reopened, or integrated with dependents; see endedLocked),
// or until the Idle fallback, which covers what other clones, people and
// agents creating issues do. Each such event
// starts a new generation. The pool's probes (`bd ready --claim`) go one
// at a time, and a probe that started in the present generation and found
// nothing answers for every worker until the next event: the others park
// again without asking bd.

// probeGate is a worker's claim.Tracker with its `ready --claim` going
// through the pool's gate.
type probeGate struct {
	beads.Tracker
	p *Pool
}

// ReadyClaim implements claim.Tracker: the probe of an unscoped pool.
func (g probeGate) ReadyClaim(ctx context.Context, f beads.ClaimFilter) (beads.Issue, bool, error) {
	var is beads.Issue
	ok := false
	err := g.p.probeOnce(ctx, func() (bool, error) {
		var err error
		is, ok, err = g.Tracker.ReadyClaim(ctx, f)
		// Passing over some types, bd's "nothing" is not the whole
		// answer (claimNext asks the whole list next).
		return ok || len(f.ExcludeTypes) > 0, err
	})
	return is, ok, err
}

// Ready implements claim.Lister: the probe of a scoped pool, whose claims
// then go through Claim. A list with nothing claimable in it is not known
// here (candidates can be assigned, labelled stuck, out of scope): the
// worker records that its claim found nothing (work).
func (g probeGate) Ready(ctx context.Context, opts beads.ReadyOptions) ([]beads.Issue, error) {
	lister, ok := g.Tracker.(beads.Lister)
	if !ok {
		return nil, errors.New("workers: the tracker cannot list ready work")
	}
	var ready []beads.Issue
	err := g.p.probeOnce(ctx, func() (bool, error) {
		var err error
		ready, err = lister.Ready(ctx, opts)
		return true, err
	})
	return ready, err
}

// probeOnce runs probe, one at a time in the pool, unless a probe of the
// present generation found nothing (then it is not run, and found
// nothing); probe reports whether it found anything.
func (p *Pool) probeOnce(ctx context.Context, probe func() (found bool, err error)) error {
	select {
	case p.probe <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.probe }()
	p.mu.Lock()
	gen, known := p.gen, p.emptyIn == p.gen
	p.mu.Unlock()
	if known {
		p.probesSkipped.Add(1)
		return nil
	}
	p.probes.Add(1)
	found, err := probe()
	if err == nil && !found {
		p.mu.Lock()
		p.emptyIn = gen
		p.mu.Unlock()
	}
	return err
}

// eventLocked starts a new generation and wakes the parked workers. The
// caller holds p.mu.
func (p *Pool) eventLocked() {
	p.gen++
	p.wakeLocked()
}

// endedLocked is a worker's issue handled: integrated (closed for good),
// or released or reopened; the worker no longer counts as busy with it.
// Work may have become ready, which is an event, unless the issue was
// integrated and had no dependents, nor a parent, when it was claimed: its
// close unblocks nothing (a child's can let its epic be taken, epics.go). When the last busy worker is done it is an event all
// the same, so that the pool asks bd once more before it ends (an agent
// may have created work, which the pool does not see; while others work,
// the Idle fallback covers it). The caller holds p.mu.
func (p *Pool) endedLocked(is beads.Issue, integrated bool) {
	p.busy--
	if integrated && is.DependentCount == 0 && is.Parent == "" && p.busy > 0 {
		return
	}
	p.eventLocked()
}

// wakeLocked wakes the parked workers, to look again whether they may
// leave or must probe. The caller holds p.mu.
func (p *Pool) wakeLocked() {
	if p.wake != nil {
		close(p.wake)
	}
	p.wake = make(chan struct{})
}

// park is what a worker that found nothing to claim does: it reports
// leave when no worker is busy (nothing is claimable and nothing will
// unblock more) and nothing happened since its probe began, else it waits for an event, a wake, the idle fallback or
// the end of ctx, and reports !leave: look again.
func (p *Pool) park(ctx context.Context, idle time.Duration) (leave bool) {
	p.mu.Lock()
	if p.emptyIn != p.gen {
		// Something happened since that probe (an issue reopened, say,
		// while it ran): its "nothing" is stale, even when no worker is
		// busy any more. Look again at once.
		p.mu.Unlock()
		return false
	}
	if p.busy == 0 {
		p.wakeLocked()
		p.mu.Unlock()
		return true
	}
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
	wake, gen := p.wake, p.gen
	p.mu.Unlock()
	t := time.NewTimer(idle)
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
	t.Stop()
	p.mu.Lock()
	if ctx.Err() == nil && p.gen == gen && p.emptyIn == gen {
		select {
		case <-wake:
		default:
			// The fallback ran out with nothing seen in the pool: the
			// tracker may have changed elsewhere.
			p.eventLocked()
		}
	}
	p.mu.Unlock()
	return false
}

package modes

import (
	"context"
	"fmt"
)

// A paused pool claims nothing new: before each claim a worker asks
// Pool.Hold (the dashboard's pause, through the daemon), which returns
// once the pool may go on. Each worker finishes the issue it holds and
// waits there; a waiting worker is not busy, so the pool ends as usual
// once nothing is claimable and nobody works after the resume.

// holdBeforeClaim waits for Hold to let worker claim, and reports stop
// when the worker must not: ctx ended, or the pool drains (a drain may
// come during a pause). err is Hold's own error, not the end of ctx.
func (p *Pool) holdBeforeClaim(ctx context.Context, worker string) (stop bool, err error) {
	if p.yielding() {
		p.Drain()
		return true, nil
	}
	if p.Hold == nil {
		return false, nil
	}
	if err := p.Hold(ctx); err != nil {
		if ctx.Err() != nil {
			return true, nil
		}
		return true, fmt.Errorf("worker %s: wait for the pause to end: %w", worker, err)
	}
	return ctx.Err() != nil || p.isDraining(), nil
}

// yielding reports whether the pool must drain for another daemon's plan
// (Pool.Yield).
func (p *Pool) yielding() bool { return p.Yield != nil && p.Yield() }

// paused reports whether the pool is paused now (Pool.Paused).
func (p *Pool) paused() bool { return p.Paused != nil && p.Paused() }

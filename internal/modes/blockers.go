package modes

import (
	"context"
	"fmt"

	"github.com/ralphd/ralphd/internal/beads"
)

// A dependent's claim rests on bd's word that its blockers are closed.
// That word can be stale by the time the claim is read back and held: a
// blocker's agent closed it, the dependent was listed (or claimed by
// `bd ready --claim`) then, and the blocker's judgement or integration
// failed, so the pool reopened and released it before the dependent's
// holder looked (awaitBlockers). The blocker is then not held, but not
// done either, and bd's close of the dependent would fail on it: a
// counted attempt on an issue that was never ready. So the pool keeps how
// each issue's last handling here ended (unfinished), and a blocker whose
// last handling ended without reaching the target is read from bd: the
// dependent goes on only if someone closed the blocker since.

// endedHoldLocked records how the handling h of id ended. The caller
// holds p.mu.
func (p *Pool) endedHoldLocked(id string, h *holding) {
	if p.unfinished == nil {
		p.unfinished = map[string]bool{}
	}
	if h.integrated {
		delete(p.unfinished, id)
	} else {
		p.unfinished[id] = true
	}
}

// anyUnfinished reports whether the last handling of some issue here
// ended without its work reaching the target.
func (p *Pool) anyUnfinished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.unfinished) > 0
}

// awaitBlocker is awaitBlockers for one dependency d of the issue id.
func (p *Pool) awaitBlocker(ctx context.Context, worker, actor, id string, d beads.Dependency) (string, error) {
	for {
		p.mu.Lock()
		h, unfinished := p.held[d.DependsOnID], p.unfinished[d.DependsOnID]
		p.mu.Unlock()
		if h != nil {
			p.log(Event{Worker: worker, Issue: id, Kind: "waiting", Detail: "for " + d.DependsOnID + " to reach " + p.Target})
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-h.done:
			}
			if !h.integrated {
				return fmt.Sprintf("%s, which it depends on, did not reach %s", d.DependsOnID, p.Target), nil
			}
			return "", nil
		}
		if d.Type != "" && d.Type != beads.DepBlocks {
			return "", nil
		}
		if !unfinished {
			if p.Queue.Remote != "" {
				return p.awaitRemoteBlocker(ctx, worker, actor, id, d)
			}
			return "", nil
		}
		// Reopened here, unless someone closed it since.
		b, err := p.Client(actor, p.Queue.Repo).Show(ctx, d.DependsOnID)
		if err != nil {
			return "", fmt.Errorf("worker %s: blocker %s of %s: %w", worker, d.DependsOnID, id, err)
		}
		p.mu.Lock()
		again := p.held[d.DependsOnID] != nil || !p.unfinished[d.DependsOnID]
		p.mu.Unlock()
		switch {
		case again:
			continue // taken again meanwhile: look again
		case b.Status != beads.StatusClosed:
			return fmt.Sprintf("%s, which it depends on, did not reach %s and is %s again", d.DependsOnID, p.Target, b.Status), nil
		}
		return "", nil
	}
}

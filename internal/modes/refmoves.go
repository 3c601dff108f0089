package modes

import (
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/sandbox"
)

// refMoved turns a move of a ref the worker pool owns (the target, a
// worker's branch or worktree HEAD) that ralphd did not make into
// violations: one ref_moved event for each iteration whose agent window
// was open since the refs were last found in place (the pool fails the
// attempts of those not yet integrated, through the ledger), or one with
// no issue when no window was open. The move is already put back, and
// what it pointed at kept on a branch.
func (l *Loop) refMoved(sh *pool) func(RefMove) {
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
		sh.mu.Lock()
		sh.res.Violations++
		sh.mu.Unlock()
		l.human().Warn("a ref ralphd owns was moved behind its back: put back", "move", detail, "kept", m.Kept)
	}
}

// sandboxShared is what worker self's sandbox may write of the
// repository's refs: its own branch only (sandbox.Shared). Outside workers
// (sh nil) it is nil.
func (sh *pool) sandboxShared(self string) *sandbox.Shared {
	if sh == nil {
		return nil
	}
	return &sandbox.Shared{OwnRefs: "refs/heads/" + git.BranchDir(self)}
}

package modes

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ralphd/ralphd/internal/git"
)

// KeptObjectsDir is where, in the state dir, ralphd keeps hard links of
// the repository's object files (git.ObjectKeeper). The sandbox leaves
// the state dir read-only, so no sandboxed agent can delete them.
const KeptObjectsDir = "git-objects"

// holdHistory holds the repository's refs and objects for the single
// loop's iteration (git.History); branch, the branch checked out, may
// only move forward. It returns nil, and says so, when they cannot be
// held.
func (l *Loop) holdHistory(ctx context.Context, branch string) *git.History {
	h, err := git.NewHistory(ctx, l.Dir, filepath.Join(l.State.Dir(), KeptObjectsDir))
	if err == nil {
		if branch != "" {
			h.Forward = []string{branch}
		}
		err = h.Take(ctx)
	}
	if err != nil {
		l.human().Warn("could not hold the repository's history for the iteration", "err", err)
		return nil
	}
	return h
}

// checkHistory puts back what the single loop's iteration lost of the
// repository's history (git.History.Check: objects deleted, refs
// rewound or deleted, the branch rewritten) and records each as a
// violation of the iteration. It returns one line for each. Workers check
// in the pool (refs.go), whose ledger charges every window that was open.
func (l *Loop) checkHistory(ctx context.Context, res *Result, it *buildIter) []string {
	h := it.held.history
	if h == nil || l.seat != nil {
		return nil
	}
	lost, err := h.Check(ctx, "history", l.now())
	if err != nil {
		l.human().Error("the repository lost history ralphd could not put back; stop and repair it before the next run", "err", err)
	}
	var lines []string
	for _, d := range lost.Lines() {
		l.violation(res, it, it.issue.ID, "git_history", d, "restored: "+d)
		l.human().Warn("the iteration lost git history: put back", "detail", d)
		lines = append(lines, d)
	}
	return lines
}

// holdHistory holds the repository's history for the pool (git.History):
// every ref but the pool's own (the target, which the merge queue checks,
// and the workers' branches, which refs.go checks), and the objects.
func (p *Pool) holdHistory(ctx context.Context) error {
	if p.KeepObjects == "" {
		return nil
	}
	h, err := git.NewHistory(ctx, p.Queue.Repo, p.KeepObjects)
	if err != nil {
		return err
	}
	h.Skip = append(h.Skip, "refs/heads/"+p.Target, "refs/heads/"+git.BranchPrefix)
	if err := h.Take(ctx); err != nil {
		return err
	}
	p.history = h
	return nil
}

// checkHistory puts back what the pool's repository lost since the last
// check (objects first, so that the refs checked after it can be read),
// reports each loss as a move, charged to every window open since the
// refs were last found in place, and holds the history anew. It reports
// whether anything was lost. The caller holds p.checking.
func (p *Pool) checkHistory(ctx context.Context) (bool, error) {
	h := p.history
	if h == nil {
		return false, nil
	}
	lost, err := h.Check(ctx, "history", time.Now())
	since := p.lastClean()
	if !lost.Objects.Empty() {
		p.moved(git.Move{Ref: "objects", Planted: lost.Objects.String()}, since)
	}
	for _, m := range lost.Moves {
		m.Planted = "history was rewritten: " + m.String()
		p.moved(m, since)
	}
	if err != nil {
		return !lost.Empty(), fmt.Errorf("the repository lost history ralphd could not put back: %w", err)
	}
	return !lost.Empty(), h.Take(ctx)
}

package modes

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/state"
)

// The work an interrupted iteration leaves in the work tree. A signal that
// stops the single loop mid-iteration (Ctrl-C, systemd restarting the
// daemon), or a ralphd that dies in one, leaves the agent's uncommitted
// work in the tree, where the issue's next attempt, which resumes the
// agent's session, goes on from it. Such a tree is not clean, and the next
// BUILD run refused to start on it (checkClean): a daemon restarted in
// the middle of an iteration stopped for good. So the work is recorded
// (state.TreeWork: the issue, HEAD, and the tree's id), and the next run
// of the single loop starts on exactly that tree: it works that issue
// first, or, when the issue is not to be worked now (closed, blocked,
// stuck, someone else's since), keeps the work on a
// wip/ralph-interrupted-* branch and restores the tree before it works
// another. A tree changed in any other way, or a commit since, is refused
// as before: what is in it may be a person's.

// treeWorkTimeout bounds the git calls that record or keep the work, which
// run while the run is being stopped.
const treeWorkTimeout = 2 * time.Minute

// leftInTree records that the tree's uncommitted work is that of
// iteration n on id of run runID, which a signal stopped (or, from the sweep, a dead
// ralphd left): the next BUILD run goes on from it. Nothing is recorded
// for a worker (its worktree's work is kept on a branch when the pool
// starts), for a run that started on a tree with changes of the user's
// (dirtyAtStart: the work is not the iteration's alone), or for a clean
// tree.
func (l *Loop) leftInTree(ctx context.Context, id string, n int, runID string, dirtyAtStart bool) {
	if l.State == nil || l.State.Worker() != "" || dirtyAtStart || id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), treeWorkTimeout)
	defer cancel()
	changed, err := l.repo().Changed(ctx)
	if err != nil || len(changed) == 0 {
		return
	}
	head, tree, err := l.treeState(ctx)
	if err == nil {
		err = l.State.WriteTreeWork(state.TreeWork{IssueID: id, Iteration: n, RunID: runID, At: l.now(), Head: head, Tree: tree})
	}
	if err != nil {
		l.human().Warn("could not record the interrupted iteration's work in the working tree; the next BUILD run will refuse the tree until it is committed or stashed", "issue", id, "err", err)
		return
	}
	l.human().Info("the interrupted iteration's work stays in the working tree; the next BUILD run goes on from it", "issue", id, "files", len(changed))
}

// treeState is HEAD's commit and the work tree's id.
func (l *Loop) treeState(ctx context.Context) (head, tree string, err error) {
	if head, err = l.repo().Head(ctx); err != nil {
		return "", "", fmt.Errorf("read HEAD: %w", err)
	}
	if tree, err = l.repo().WorkTreeID(ctx); err != nil {
		return "", "", fmt.Errorf("read the working tree: %w", err)
	}
	return head, tree, nil
}

// treeWorkHolds reports whether the dirty work tree is exactly the work
// an interrupted iteration left (state.TreeWork), and returns its record;
// mismatch, when a record is there, says how the tree differs from it.
func (l *Loop) treeWorkHolds(ctx context.Context) (w *state.TreeWork, mismatch string) {
	w, err := l.State.ReadTreeWork()
	if err != nil {
		l.human().Warn("could not read the record of an interrupted iteration's work in the working tree", "err", err)
		return nil, ""
	}
	if w == nil {
		return nil, ""
	}
	head, tree, err := l.treeState(ctx)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("the tree held the work of iteration %d on %s, interrupted at %s, and could not be compared with it: %v",
			w.Iteration, w.IssueID, w.At.Format(time.RFC3339), err)
	case head != w.Head:
		return nil, fmt.Sprintf("the tree held the work of iteration %d on %s, interrupted at %s, and HEAD moved since (%.12s, then %.12s)",
			w.Iteration, w.IssueID, w.At.Format(time.RFC3339), head, w.Head)
	case tree != w.Tree:
		return nil, fmt.Sprintf("the tree held the work of iteration %d on %s, interrupted at %s, and has changed since",
			w.Iteration, w.IssueID, w.At.Format(time.RFC3339))
	}
	return w, ""
}

// goOnFirst puts the issue whose interrupted work the tree holds (goOn)
// first in ready, so that the run works it before any other. When ready
// lacks it, its work is kept on a branch and the tree restored first
// (keepTreeWork).
func (l *Loop) goOnFirst(ctx context.Context, res *Result, ready []beads.Issue) []beads.Issue {
	i := slices.IndexFunc(ready, func(is beads.Issue) bool { return is.ID == l.goOn.IssueID })
	if i < 0 {
		l.keepTreeWork(ctx, res, "it is not ready now")
		return ready
	}
	out := make([]beads.Issue, 0, len(ready))
	out = append(out, ready[i])
	out = append(out, ready[:i]...)
	return append(out, ready[i+1:]...)
}

// goingOn settles the work the tree holds once the run picked pick: the
// work is its own when pick is the issue (its iteration goes on from it),
// else, the issue passed over (stuck, an epic waiting), it is kept on a
// branch before pick's iteration starts.
func (l *Loop) goingOn(ctx context.Context, res *Result, pick beads.Issue) {
	if pick.ID != l.goOn.IssueID {
		l.keepTreeWork(ctx, res, "the run passed it over")
		return
	}
	l.goOn = nil
	if err := l.State.ClearTreeWork(); err != nil {
		l.human().Warn("could not clear the record of the interrupted iteration's work", "err", err)
	}
}

// keepTreeWork keeps the work the tree holds for goOn's issue on a new
// wip/ralph-interrupted-<issue>-<time> branch and puts the tree back at
// HEAD, so another issue's iteration starts on a clean tree. Commits are
// not rewound: only the uncommitted work moves.
func (l *Loop) keepTreeWork(ctx context.Context, res *Result, why string) {
	w := l.goOn
	l.goOn = nil
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), treeWorkTimeout)
	defer cancel()
	name, err := l.repo().FreeBranchName(ctx, fmt.Sprintf("wip/ralph-interrupted-%s-%s", branchUnsafe.ReplaceAllString(w.IssueID, "_"), l.now().Format("20060102-150405")))
	if err == nil {
		msg := fmt.Sprintf("ralphd: the work of interrupted iteration %d on %s (%s)\n\nInterrupted: %s\nRun: %s\n",
			w.Iteration, w.IssueID, why, w.At.Format(time.RFC3339), w.RunID)
		_, err = l.repo().FailureBranch(ctx, name, msg, w.Head)
	}
	if err != nil {
		// The tree is left as it is: the next iteration's agent works on
		// top of it, and nothing is lost.
		l.human().Error("could not keep the interrupted iteration's work on a branch; the working tree is left as it is", "issue", w.IssueID, "err", err)
		return
	}
	res.FailureBranches = append(res.FailureBranches, w.IssueID+" "+name)
	l.human().Warn("kept the interrupted iteration's work on a branch and restored the working tree: "+why, "issue", w.IssueID, "branch", name)
	if err := l.State.ClearTreeWork(); err != nil {
		l.human().Warn("could not clear the record of the interrupted iteration's work", "err", err)
	}
}

package mergeq

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ralphd/ralphd/internal/git"
)

// treeName is the default queue worktree (Queue.Tree), in the
// repository's common git directory.
const treeName = "ralphd-mergeq-tree"

// treePath is Queue.Tree, or the default in the repository's common git
// directory.
func (q *Queue) treePath(ctx context.Context) (string, error) {
	if q.Tree != "" {
		return filepath.Clean(q.Tree), nil
	}
	common, err := git.CommonDir(ctx, q.Repo)
	if err != nil {
		return "", fmt.Errorf("merge queue worktree: %w", err)
	}
	return filepath.Join(common, treeName), nil
}

// checkoutWork makes the queue's worktree hold commit, detached, and
// nothing else: a rebase a crash interrupted is aborted, the locks a
// killed git left are removed (no other git uses this worktree while
// ralphd holds its lock, and agents cannot write it), and files a verify
// left untracked are removed. A worktree this queue did not make in this
// run, or one it cannot reset, is dropped (dropTree) and made afresh. It
// returns the worktree, and a gitsafe.Runner for the git calls there that
// follow before any code runs in it.
func (q *Queue) checkoutWork(ctx context.Context, commit string) (string, *git.Runner, error) {
	dir, err := q.treePath(ctx)
	if err != nil {
		return "", nil, err
	}
	run := git.NewRunner(dir)
	if q.tree == dir {
		if err := q.resetTree(ctx, run, dir, commit); err == nil {
			return dir, run, nil
		}
	}
	if err := q.dropTree(ctx); err != nil {
		return "", nil, err
	}
	if _, err := git.Output(ctx, q.Repo, "worktree", "prune"); err != nil {
		return "", nil, fmt.Errorf("merge queue worktree: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", nil, fmt.Errorf("merge queue worktree: %w", err)
	}
	if _, err := git.Output(ctx, q.Repo, "worktree", "add", "-q", "--force", "--detach", dir, commit); err != nil {
		return "", nil, fmt.Errorf("merge queue worktree: %w", err)
	}
	q.tree, q.treeGitDir = dir, ""
	return dir, git.NewRunner(dir), nil
}

// resetTree puts the registered queue worktree dir at commit, detached,
// clean, through run.
func (q *Queue) resetTree(ctx context.Context, run *git.Runner, dir, commit string) error {
	if q.treeGitDir == "" {
		// The worktree's git dir stays where git made it: looked up once
		// per worktree.
		gitDir, err := line(ctx, dir, "rev-parse", "--absolute-git-dir")
		if err != nil {
			return fmt.Errorf("merge queue worktree: %w", err)
		}
		q.treeGitDir = gitDir
	}
	gitDir := q.treeGitDir
	for _, l := range []string{"index.lock", "HEAD.lock"} {
		if err := os.Remove(filepath.Join(gitDir, l)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("merge queue worktree: %w", err)
		}
	}
	for _, d := range []string{"rebase-merge", "rebase-apply"} {
		if _, err := os.Stat(filepath.Join(gitDir, d)); err == nil {
			if _, err := run.Output(ctx, "rebase", "--quit"); err != nil {
				return fmt.Errorf("merge queue worktree: %w", err)
			}
			break
		}
	}
	if _, err := run.Output(ctx, "checkout", "-q", "--force", "--detach", commit); err != nil {
		return fmt.Errorf("merge queue worktree: %w", err)
	}
	if _, err := run.Output(ctx, "clean", "-fdq"); err != nil {
		return fmt.Errorf("merge queue worktree: %w", err)
	}
	return nil
}

// RemoveTree removes the queue's worktree, when a run ends. The work it
// held is on the target, on a kept branch, or handed back to the pool.
func (q *Queue) RemoveTree(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tree == "" {
		return nil
	}
	dir := q.tree
	q.tree, q.treeGitDir = "", ""
	if _, err := git.Output(ctx, q.Repo, "worktree", "remove", "--force", "--force", dir); err != nil {
		return fmt.Errorf("remove the merge queue worktree: %w", err)
	}
	return nil
}

// dropTree removes, at the start, the queue's worktree a run that did
// not end left (mid-rebase, say): it holds nothing that is not on the
// target, on a kept branch, or in the commit a worker handed over, which
// the pool recovers. The caller holds q.mu.
func (q *Queue) dropTree(ctx context.Context) error {
	dir, err := q.treePath(ctx)
	if err != nil {
		return err
	}
	q.tree, q.treeGitDir = "", ""
	// git's or not (a kill mid `worktree add`), it goes.
	if err := git.RemoveWorktree(ctx, q.Repo, dir); err != nil {
		return fmt.Errorf("the merge queue's: %w", err)
	}
	return nil
}

package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/proc"
)

// RemoveWorktree removes the worktree at dir and git's record of it, also
// when a run that was killed left it half made or half removed. git
// refuses a worktree whose .git file a kill mid `worktree add` left
// unfinished ("not a .git file"): its record is then forgotten by hand. A
// git that failed to delete the files (one the killed run started, in its
// own process group, still writing there: "Directory not empty") has
// forgotten it already. The files go last, tried again a few times while
// such a git finishes (removeSettled). A dir git keeps no record of is
// only removed.
func RemoveWorktree(ctx context.Context, repo, dir string) error {
	if _, err := Output(ctx, repo, "worktree", "remove", "--force", "--force", dir); err != nil {
		if ferr := forgetWorktree(ctx, repo, dir); ferr != nil && !errors.Is(ferr, errNoRecord) {
			return fmt.Errorf("remove worktree %s: %w; and forget it: %w", dir, err, ferr)
		}
	}
	if err := removeSettled(ctx, dir); err != nil {
		return fmt.Errorf("remove worktree %s: %w", dir, err)
	}
	return nil
}

// removeSettled removes dir and what it holds. A git process a killed
// run started lives on in its own process group and may still be writing
// there (a checkout, a rebase step): a removal that meets its new files
// is tried again, a few times, while it finishes.
func removeSettled(ctx context.Context, dir string) error {
	var err error
	for try := 1; try <= 10; try++ {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		if perr := proc.Sleep(ctx, time.Duration(try)*50*time.Millisecond); perr != nil {
			return fmt.Errorf("%w (%w)", err, perr)
		}
	}
	return fmt.Errorf("%w; is a git process still running in %s? stop it, then start again", err, dir)
}

// errNoRecord: git keeps no record of the worktree (forgetWorktree).
var errNoRecord = errors.New("git keeps no record of it")

// forgetWorktree removes git's record of the worktree at dir (its entry
// in the common dir's worktrees/, found by the gitdir file that points at
// dir/.git), as `git worktree remove` would. The caller removes dir.
func forgetWorktree(ctx context.Context, repo, dir string) error {
	common, err := CommonDir(ctx, repo)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %w", dir, errNoRecord)
		}
		return err
	}
	for _, e := range entries {
		admin := filepath.Join(common, "worktrees", e.Name())
		b, err := atomicfile.Read(filepath.Join(admin, "gitdir"), 64<<10)
		if err != nil {
			continue
		}
		if SameDir(filepath.Dir(strings.TrimSpace(string(b))), dir) {
			return os.RemoveAll(admin)
		}
	}
	return fmt.Errorf("%s in %s: %w", dir, filepath.Join(common, "worktrees"), errNoRecord)
}

// SameDir reports whether a and b are the same directory: the same path,
// or the same file once links are followed.
func SameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemoveWorktree: a worktree goes with git's record of it, also when
// a killed run left it half made (its .git file unfinished), already
// forgotten by git, never git's, or still being written by a git that
// outlived the run.
func TestRemoveWorktree(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, repo, dir string)
	}{
		{"a worktree", func(t *testing.T, repo, dir string) {
			sh(t, repo, "git", "worktree", "add", "-q", "--detach", dir)
		}},
		{"its .git file unfinished", func(t *testing.T, repo, dir string) {
			sh(t, repo, "git", "worktree", "add", "-q", "--detach", dir)
			writePath(t, filepath.Join(dir, ".git"), "")
		}},
		{"locked", func(t *testing.T, repo, dir string) {
			sh(t, repo, "git", "worktree", "add", "-q", "--detach", dir)
			sh(t, repo, "git", "worktree", "lock", dir)
		}},
		{"forgotten by git already", func(t *testing.T, repo, dir string) {
			sh(t, repo, "git", "worktree", "add", "-q", "--detach", dir)
			common := filepath.Join(repo, ".git", "worktrees")
			if err := os.RemoveAll(common); err != nil {
				t.Fatal(err)
			}
		}},
		{"never git's", func(t *testing.T, repo, dir string) {
			writePath(t, filepath.Join(dir, "x", "y.txt"), "y\n")
		}},
		{"not there", func(t *testing.T, repo, dir string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, repo := newManagerRepo(t)
			dir := filepath.Join(filepath.Dir(repo), "tree")
			tc.setup(t, repo, dir)
			if err := RemoveWorktree(ctx, repo, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); !os.IsNotExist(err) {
				t.Errorf("%s is still there: %v", dir, err)
			}
			if list := sh(t, repo, "git", "worktree", "list", "--porcelain"); strings.Contains(list, dir) {
				t.Errorf("git still lists it:\n%s", list)
			}
			if ents, _ := os.ReadDir(filepath.Join(repo, ".git", "worktrees")); len(ents) != 0 {
				t.Errorf("git's records left: %v", ents)
			}
		})
	}
}

// TestRemoveSettledWhileWritten: a git process the killed run left keeps
// writing in a worktree while the restart removes it; the removal tries
// again until it is gone rather than failing on "directory not empty".
func TestRemoveSettledWhileWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A git that finishes its checkout: it writes for a while, then
		// stops (or stops early, once the directory is gone).
		for i, end := 0, time.Now().Add(300*time.Millisecond); time.Now().Before(end); i++ {
			if err := os.WriteFile(filepath.Join(dir, "sub", fmt.Sprint(i)), nil, 0o644); err != nil {
				return
			}
		}
	}()
	if err := removeSettled(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", dir, err)
	}
}

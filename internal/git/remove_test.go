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

// TestRecoverKilledAdd: a `git worktree add` of a worker's worktree is
// killed at each point between its admin files; the last leaves an empty
// commondir, which fails every `git worktree` call after it. Recover
// removes what the add left and lists again. A worktree a person locked
// keeps its work, and a half-added worktree that is not ralphd's is
// named in the error, not removed.
func TestRecoverKilledAdd(t *testing.T) {
	ctx := context.Background()
	zero := strings.Repeat("0", 40)
	for _, tc := range []struct {
		name string
		// kill leaves the admin dir and worktree as the killed add did.
		kill func(t *testing.T, admin string)
	}{
		{"before HEAD", func(t *testing.T, admin string) {
			for _, f := range []string{"HEAD", "commondir", "index"} {
				if err := os.Remove(filepath.Join(admin, f)); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"HEAD half written", func(t *testing.T, admin string) {
			writePath(t, filepath.Join(admin, "HEAD"), "")
			for _, f := range []string{"commondir", "index"} {
				if err := os.Remove(filepath.Join(admin, f)); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"commondir half written", func(t *testing.T, admin string) {
			writePath(t, filepath.Join(admin, "HEAD"), zero+"\n")
			writePath(t, filepath.Join(admin, "commondir"), "")
			if err := os.Remove(filepath.Join(admin, "index")); err != nil {
				t.Fatal(err)
			}
		}},
		{"before the checkout", func(t *testing.T, admin string) {
			if err := os.Remove(filepath.Join(admin, "index")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, repo := newManagerRepo(t)
			tr, _, err := m.Open(ctx, "w1", "main")
			if err != nil {
				t.Fatal(err)
			}
			admin := filepath.Join(repo, ".git", "worktrees", "w1")
			writePath(t, filepath.Join(admin, "locked"), "initializing")
			tc.kill(t, admin)
			if _, err := m.Recover(ctx, "main"); err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if all, err := List(ctx, repo); err != nil || len(all) != 1 {
				t.Fatalf("worktrees after Recover: %v, %v", all, err)
			}
			if _, err := os.Lstat(tr.Dir); !os.IsNotExist(err) {
				t.Errorf("%s is still there: %v", tr.Dir, err)
			}
			if ents, _ := os.ReadDir(filepath.Join(repo, ".git", "worktrees")); len(ents) != 0 {
				t.Errorf("git's records left: %v", ents)
			}
			if _, _, err := m.Open(ctx, "w1", "main"); err != nil {
				t.Errorf("Open after Recover: %v", err)
			}
		})
	}
	t.Run("a person's lock", func(t *testing.T) {
		m, repo := newManagerRepo(t)
		tr, _, err := m.Open(ctx, "w1", "main")
		if err != nil {
			t.Fatal(err)
		}
		writePath(t, filepath.Join(tr.Dir, "a.txt"), "work\n")
		sh(t, repo, "git", "worktree", "lock", tr.Dir)
		saved, err := m.Recover(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if len(saved) != 1 || sh(t, repo, "git", "show", saved[0].Branch+":a.txt") != "work" {
			t.Errorf("the locked worktree's work was not kept: %v", saved)
		}
	})
	t.Run("not ralphd's", func(t *testing.T) {
		m, repo := newManagerRepo(t)
		other := filepath.Join(filepath.Dir(repo), "mine")
		sh(t, repo, "git", "worktree", "add", "-q", "--detach", other)
		admin := filepath.Join(repo, ".git", "worktrees", "mine")
		writePath(t, filepath.Join(admin, "locked"), "initializing")
		writePath(t, filepath.Join(admin, "commondir"), "")
		_, err := m.Recover(ctx, "main")
		if err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Fatalf("Recover = %v, want an error that names the interrupted add", err)
		}
		if _, err := os.Stat(filepath.Join(other, "a.txt")); err != nil {
			t.Errorf("a worktree not ralphd's was touched: %v", err)
		}
	})
}

// TestRecoverForgedKilledAdd: an agent may write its own worktree's
// record, and forges one that looks like a killed add naming another
// worker's worktree, which holds that worker's interrupted work. Recovery
// forgets the forged record but keeps the other worktree's work.
func TestRecoverForgedKilledAdd(t *testing.T) {
	ctx := context.Background()
	m, repo := newManagerRepo(t)
	if _, _, err := m.Open(ctx, "w1", "main"); err != nil {
		t.Fatal(err)
	}
	t2, _, err := m.Open(ctx, "w2", "main")
	if err != nil {
		t.Fatal(err)
	}
	writePath(t, filepath.Join(t2.Dir, "a.txt"), "w2's work\n")
	admin := filepath.Join(repo, ".git", "worktrees", "w1")
	forgeKilledAdd(t, admin, filepath.Join(t2.Dir, ".git"))
	saved, err := m.Recover(ctx, "main")
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	var kept bool
	for _, s := range saved {
		kept = kept || (s.Worker == "w2" && sh(t, repo, "git", "show", s.Branch+":a.txt") == "w2's work")
	}
	if !kept {
		t.Errorf("w2's work was not kept: %+v", saved)
	}
}

// TestRecoverForgedKilledAddStray: a forged killed add that names a dir
// under the root with files and no .git file (a stray) does not remove
// it: recovery moves it aside, as every stray.
func TestRecoverForgedKilledAddStray(t *testing.T) {
	ctx := context.Background()
	m, repo := newManagerRepo(t)
	if _, _, err := m.Open(ctx, "w1", "main"); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(m.root(), "w9")
	writePath(t, filepath.Join(stray, "keep.txt"), "keep\n")
	admin := filepath.Join(repo, ".git", "worktrees", "w1")
	forgeKilledAdd(t, admin, filepath.Join(stray, ".git"))
	if _, err := m.Recover(ctx, "main"); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	kept, _ := filepath.Glob(filepath.Join(m.root(), lostDir, "w9-*", "keep.txt"))
	if len(kept) != 1 {
		t.Errorf("the stray was not moved aside: %v", kept)
	}
}

// forgeKilledAdd makes the worktree record at admin look like a killed
// add (locked, no index) naming gitFile as its worktree's .git, as a BUILD
// agent can with its own worktree's record.
func forgeKilledAdd(t *testing.T, admin, gitFile string) {
	t.Helper()
	writePath(t, filepath.Join(admin, "locked"), "initializing")
	writePath(t, filepath.Join(admin, "gitdir"), gitFile+"\n")
	if err := os.Remove(filepath.Join(admin, "index")); err != nil {
		t.Fatal(err)
	}
}

package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/gitplant"
)

// testEnv isolates git from the user's configuration.
func testEnv(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": filepath.Join(home, "gitconfig"),
		"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@x",
	} {
		t.Setenv(k, v)
	}
}

func sh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writePath(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a main repo with one commit on main and a manager.
func newManagerRepo(t *testing.T) (*Manager, string) {
	t.Helper()
	testEnv(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")
	writePath(t, filepath.Join(repo, "a.txt"), "a\n")
	sh(t, repo, "git", "init", "-q", "-b", "main")
	sh(t, repo, "git", "add", "-A")
	sh(t, repo, "git", "commit", "-q", "-m", "one")
	n := 0
	m := &Manager{Repo: repo, Root: filepath.Join(root, "state", "worktrees"),
		Now: func() time.Time { n++; return time.Date(2026, 11, 23, 20, 0, n, 0, time.UTC) }}
	return m, repo
}

func TestOpenCreatesAndReuses(t *testing.T) {
	is := is.New(t)
	m, repo := newManagerRepo(t)
	ctx := context.Background()
	tr, saved, err := m.Open(ctx, "w1", "main")
	is.NoErr(err)
	is.Equal(len(saved), 0)
	is.Equal(tr.Dir, filepath.Join(m.root(), "w1"))
	is.Equal(sh(t, tr.Dir, "git", "branch", "--show-current"), "ralphd/workers/w1/work")
	is.Equal(sh(t, tr.Dir, "git", "rev-parse", "HEAD"), sh(t, repo, "git", "rev-parse", "main"))
	is.Equal(tr.Base, sh(t, repo, "git", "rev-parse", "main"))

	// The worker commits something and leaves a change; main moves on.
	writePath(t, filepath.Join(tr.Dir, "b.txt"), "b\n")
	sh(t, tr.Dir, "git", "add", "b.txt")
	sh(t, tr.Dir, "git", "commit", "-q", "-m", "b")
	writePath(t, filepath.Join(tr.Dir, "c.txt"), "uncommitted\n")
	writePath(t, filepath.Join(repo, "m.txt"), "m\n")
	sh(t, repo, "git", "add", "m.txt")
	sh(t, repo, "git", "commit", "-q", "-m", "m")

	tr2, saved, err := m.Open(ctx, "w1", "main")
	is.NoErr(err)
	is.Equal(tr2.Dir, tr.Dir)
	is.Equal(tr2.Branch, tr.Branch)
	is.Equal(tr2.Base, sh(t, repo, "git", "rev-parse", "main")) // the new base
	is.True(tr2.Base != tr.Base)
	is.Equal(len(saved), 1) // the work went to a wip branch
	is.True(strings.HasPrefix(saved[0].Branch, "wip/w1/"))
	files := sh(t, repo, "git", "ls-tree", "-r", "--name-only", saved[0].Branch)
	is.True(strings.Contains(files, "b.txt")) // the commit
	is.True(strings.Contains(files, "c.txt")) // and the uncommitted file
	is.Equal(sh(t, tr.Dir, "git", "rev-parse", "HEAD"), sh(t, repo, "git", "rev-parse", "main"))
	is.Equal(sh(t, tr.Dir, "git", "status", "--porcelain"), "") // reset clean at the new base

	_, saved, err = m.Open(ctx, "w1", "main")
	is.NoErr(err)
	is.Equal(len(saved), 0) // nothing to keep, no wip branch
}

func TestRecoverAfterCrash(t *testing.T) {
	is := is.New(t)
	m, repo := newManagerRepo(t)
	ctx := context.Background()
	t1, _, err := m.Open(ctx, "w1", "main")
	is.NoErr(err)
	t2, _, err := m.Open(ctx, "w2", "main")
	is.NoErr(err)
	t3, _, err := m.Open(ctx, "w3", "main")
	is.NoErr(err)
	// w1 dies with uncommitted work; w2 mid-rebase with a conflict; w3's
	// directory is deleted by hand after it committed; a stray directory.
	writePath(t, filepath.Join(t1.Dir, "a.txt"), "w1 change\n")
	writePath(t, filepath.Join(t2.Dir, "a.txt"), "w2\n")
	sh(t, t2.Dir, "git", "commit", "-qam", "w2")
	writePath(t, filepath.Join(repo, "a.txt"), "main\n")
	sh(t, repo, "git", "commit", "-qam", "main")
	cmd := exec.Command("git", "rebase", "main")
	cmd.Dir = t2.Dir
	_ = cmd.Run() // conflicts: left mid-rebase
	_, err = os.Stat(filepath.Join(repo, ".git", "worktrees", "w2", "rebase-merge"))
	is.NoErr(err) // the rebase is in progress
	writePath(t, filepath.Join(t3.Dir, "d.txt"), "d\n")
	sh(t, t3.Dir, "git", "add", "d.txt")
	sh(t, t3.Dir, "git", "commit", "-qm", "w3")
	is.NoErr(os.RemoveAll(t3.Dir))
	writePath(t, filepath.Join(m.root(), "stray", "f"), "x")

	saved, err := m.Recover(ctx, "main")
	is.NoErr(err)
	byWorker := map[string]Saved{}
	for _, s := range saved {
		byWorker[s.Worker] = s
	}
	is.Equal(len(saved), 2)
	is.Equal(sh(t, repo, "git", "show", byWorker["w1"].Branch+":a.txt"), "w1 change")
	is.Equal(sh(t, repo, "git", "show", byWorker["w2"].Branch+":a.txt"), "w2") // the pre-rebase commit
	is.Equal(sh(t, repo, "git", "worktree", "list", "--porcelain") != "", true)
	is.Equal(strings.Count(sh(t, repo, "git", "worktree", "list"), "\n"), 0) // only main left
	_, err = os.Stat(filepath.Join(m.root(), "stray"))
	is.True(os.IsNotExist(err))
	lost, err := os.ReadDir(filepath.Join(m.root(), lostDir))
	is.NoErr(err)
	is.Equal(len(lost), 1) // moved aside, not deleted

	// w3's commit lives on its branch; opening w3 again keeps it on wip.
	_, saved, err = m.Open(ctx, "w3", "main")
	is.NoErr(err)
	is.Equal(len(saved), 1)
	is.Equal(sh(t, repo, "git", "show", saved[0].Branch+":d.txt"), "d")
	is.Equal(sh(t, repo, "git", "status", "--porcelain"), "") // main's checkout untouched
}

// TestNoRepositoryCodeRuns plants every route by which git runs a
// repository's code (hooks, fsmonitor, filters, diff drivers), as a BUILD
// agent could, and checks that opening, resetting and recovering worker
// worktrees runs none of it.
func TestNoRepositoryCodeRuns(t *testing.T) {
	for _, route := range gitplant.Routes() {
		t.Run(route.Name, func(t *testing.T) {
			is := is.New(t)
			m, repo := newManagerRepo(t)
			ctx := context.Background()
			markers := t.TempDir()
			route.Plant(t, repo, markers)
			sh(t, repo, "git", "add", "-A")
			sh(t, repo, "git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "commit", "--allow-empty", "-qm", "attributes")
			for _, p := range gitplant.Ran(t, markers) {
				is.NoErr(os.Remove(filepath.Join(markers, p))) // what planting itself ran
			}
			tr, _, err := m.Open(ctx, "w1", "main")
			is.NoErr(err)
			gitplant.Touch(t, tr.Dir)
			_, _, err = m.Open(ctx, "w1", "main") // saves the change to wip, resets
			is.NoErr(err)
			gitplant.Touch(t, tr.Dir)
			_, err = m.Recover(ctx, "main")
			is.NoErr(err)
			// An interrupted iteration's work in the main tree: named, then
			// kept on a branch (modes: treework.go).
			gitplant.Touch(t, repo)
			r := Repo{Dir: repo}
			_, err = r.WorkTreeID(ctx)
			is.NoErr(err)
			_, err = r.FailureBranch(ctx, "wip/ralph-interrupted-t-a", "keep", "")
			is.NoErr(err)
			is.Equal(gitplant.Ran(t, markers), []string(nil)) // no planted code ran
		})
	}
}

func TestCheckWorker(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"w1", true}, {"worker-2.a_b", true},
		{"", false}, {"..", false}, {"a/b", false}, {"-x", false}, {".hidden", false},
		{"a..b", false}, {"x.lock", false}, {"a b", false}, {strings.Repeat("a", 65), false},
	} {
		if err := CheckWorker(c.name); (err == nil) != c.ok {
			t.Errorf("CheckWorker(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

func TestParseWorktreeList(t *testing.T) {
	is := is.New(t)
	out := "worktree /r\x00HEAD abc\x00branch refs/heads/main\x00\x00" +
		"worktree /s/w1\x00HEAD def\x00branch refs/heads/ralphd/worker/w1\x00\x00" +
		"worktree /s/w2\x00HEAD 123\x00detached\x00\x00" +
		"worktree /s/w 3\x00HEAD 1\x00branch refs/heads/x\x00locked\x00prunable gitdir file points to non-existent location\x00\x00"
	is.Equal(parseWorktreeList([]byte(out)), []Worktree{{"/r", "main", false}, {"/s/w1", "ralphd/worker/w1", false}, {"/s/w2", "", true}, {"/s/w 3", "x", false}})
	is.Equal(len(parseWorktreeList(nil)), 0)
}

func FuzzParseWorktreeList(f *testing.F) {
	f.Add([]byte("worktree /r\x00HEAD abc\x00branch refs/heads/main\x00\x00worktree /s/w1\x00branch refs/heads/b\x00\x00"))
	f.Add([]byte("worktree \x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, w := range parseWorktreeList(b) {
			if w.Dir == "" || w.Dir != filepath.Clean(w.Dir) {
				t.Fatalf("bad dir %q", w.Dir)
			}
		}
	})
}

// TestRecoverHalfStartedRebase: a rebase killed while starting leaves a
// state git cannot abort, and a stale index lock; recovery still keeps the
// work and removes the worktree.
func TestRecoverHalfStartedRebase(t *testing.T) {
	is := is.New(t)
	m, repo := newManagerRepo(t)
	ctx := context.Background()
	tr, _, err := m.Open(ctx, "w1", "main")
	is.NoErr(err)
	writePath(t, filepath.Join(tr.Dir, "b.txt"), "b\n")
	sh(t, tr.Dir, "git", "add", "b.txt")
	sh(t, tr.Dir, "git", "commit", "-qm", "b")
	gitDir := filepath.Join(repo, ".git", "worktrees", "w1")
	writePath(t, filepath.Join(gitDir, "rebase-merge", "head-name"), "refs/heads/"+tr.Branch+"\n")
	writePath(t, filepath.Join(gitDir, "index.lock"), "")
	saved, err := m.Recover(ctx, "main")
	is.NoErr(err)
	is.Equal(len(saved), 1)
	is.Equal(sh(t, repo, "git", "show", saved[0].Branch+":b.txt"), "b")
	left, err := List(ctx, repo)
	is.NoErr(err)
	is.Equal(len(left), 1)
}

// TestReserve makes the missing workers' branches at the base, loose, and
// leaves an existing one where it is.
func TestReserve(t *testing.T) {
	is := is.New(t)
	m, repo := newManagerRepo(t)
	ctx := context.Background()
	_, _, err := m.Open(ctx, "w1", "main")
	is.NoErr(err)
	sh(t, repo, "git", "commit", "-q", "--allow-empty", "-m", "main moves")
	w1 := sh(t, repo, "git", "rev-parse", Branch("w1"))
	is.NoErr(m.Reserve(ctx, []string{"w1", "w2"}, "main"))
	is.Equal(sh(t, repo, "git", "rev-parse", Branch("w1")), w1) // untouched
	is.Equal(sh(t, repo, "git", "rev-parse", Branch("w2")), sh(t, repo, "git", "rev-parse", "main"))
	_, err = os.Stat(filepath.Join(repo, ".git", "refs", "heads", filepath.FromSlash(Branch("w2"))))
	is.NoErr(err) // a loose ref, in its own dir
	is.True(m.Reserve(ctx, []string{"../x"}, "main") != nil)
}

// FuzzCheckWorker checks the worker names ralphd takes, also from the
// names of marker files in the worktrees' directory: a name it takes is
// one local path element, and its branch is a ref git accepts.
func FuzzCheckWorker(f *testing.F) {
	for _, s := range []string{"w1", "worker-2.a_b", "a.", "a@{1}", "x.lock", "a..b", "-x", ".h", "a\x00", "w1.lock.x", "HEAD", "@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckWorker(name) != nil {
			return
		}
		if !filepath.IsLocal(name) || filepath.Base(name) != name || strings.HasPrefix(name, "-") {
			t.Fatalf("%q taken, but it is not one path element", name)
		}
		if out, err := exec.Command("git", "check-ref-format", "refs/heads/"+Branch(name)).CombinedOutput(); err != nil {
			t.Fatalf("%q taken, but git refuses its branch %s: %v %s", name, Branch(name), err, out)
		}
	})
}

// TestPrepareThenOpen: a worktree Prepare made is handed to the worker's
// first Open at the same base as it is; any later Open resets it (the
// worker has worked in it), and a Prepare followed by a move of the base
// resets it too.
func TestPrepareThenOpen(t *testing.T) {
	is := is.New(t)
	m, repo := newManagerRepo(t)
	ctx := context.Background()
	_, err := m.Prepare(ctx, "w1", "main")
	is.NoErr(err)
	tr, _, err := m.Open(ctx, "w1", "main")
	is.NoErr(err)
	is.Equal(tr.Base, sh(t, repo, "git", "rev-parse", "main"))
	is.Equal(sh(t, tr.Dir, "git", "branch", "--show-current"), "ralphd/workers/w1/work")

	// The worker works; its next Open keeps the work and resets.
	writePath(t, filepath.Join(tr.Dir, "left.txt"), "work\n")
	_, saved, err := m.Open(ctx, "w1", "main")
	is.NoErr(err)
	is.Equal(len(saved), 1)
	is.Equal(sh(t, tr.Dir, "git", "status", "--porcelain"), "")

	// Prepared, then the base moves: the first Open resets to it.
	_, err = m.Prepare(ctx, "w1", "main")
	is.NoErr(err)
	writePath(t, filepath.Join(repo, "m.txt"), "m\n")
	sh(t, repo, "git", "add", "m.txt")
	sh(t, repo, "git", "commit", "-q", "-m", "m")
	tr, _, err = m.Open(ctx, "w1", "main")
	is.NoErr(err)
	is.Equal(sh(t, tr.Dir, "git", "rev-parse", "HEAD"), sh(t, repo, "git", "rev-parse", "main"))
}

// A worktree another worker is adding has, for a moment, an empty
// commondir: List waits for it instead of failing, and still fails, with
// git's words, on one that stays broken.
func TestListWaitsOutAWorktreeBeingAdded(t *testing.T) {
	is := is.New(t)
	_, repo := newManagerRepo(t)
	admin := filepath.Join(repo, ".git", "worktrees", "half")
	is.NoErr(os.MkdirAll(admin, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(t.TempDir(), "half", ".git")+"\n"), 0o644))
	is.NoErr(os.WriteFile(filepath.Join(admin, "commondir"), nil, 0o644)) // as git worktree add leaves it mid-write

	t.Run("finished while waiting", func(t *testing.T) {
		is := is.New(t)
		done := make(chan error, 1)
		go func() {
			time.Sleep(30 * time.Millisecond)
			done <- os.WriteFile(filepath.Join(admin, "commondir"), []byte("../..\n"), 0o644)
		}()
		trees, err := List(context.Background(), repo)
		is.NoErr(<-done)
		is.NoErr(err)           // the half-added worktree did not fail the list
		is.Equal(len(trees), 2) // the main worktree and the one being added
	})

	t.Run("stays broken", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(os.WriteFile(filepath.Join(admin, "commondir"), nil, 0o644))
		_, err := List(context.Background(), repo)
		is.True(err != nil)                                      // a worktree that stays broken is an error
		is.True(strings.Contains(err.Error(), "failed to read")) // in git's words
	})
}

// TestRecoverKeepsNoIntegratedWork: a worker's branch left at the end of
// a run holds commits the merge queue rebased onto the target under other
// ids. The next run's start keeps none of them on a wip branch (and warns
// of no work left); a commit whose change the target lacks is kept,
// with the integrated ones before it.
func TestRecoverKeepsNoIntegratedWork(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra bool // a commit the target lacks on top
		kept  bool
	}{
		{"all of it rebased onto the target", false, false},
		{"a commit more", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			m, repo := newManagerRepo(t)
			ctx := context.Background()
			w, _, err := m.Open(ctx, "w1", "main")
			is.NoErr(err)
			writePath(t, filepath.Join(w.Dir, "b.txt"), "b\n")
			sh(t, w.Dir, "git", "add", "b.txt")
			sh(t, w.Dir, "git", "commit", "-qm", "w1: b")
			work := sh(t, w.Dir, "git", "rev-parse", "HEAD")
			// Another commit on main first, so the rebased commit gets
			// another id, as the merge queue's rebase does.
			writePath(t, filepath.Join(repo, "c.txt"), "c\n")
			sh(t, repo, "git", "add", "c.txt")
			sh(t, repo, "git", "commit", "-qm", "main: c")
			sh(t, repo, "git", "cherry-pick", work)
			is.True(sh(t, repo, "git", "rev-parse", "HEAD") != work)
			if tc.extra {
				writePath(t, filepath.Join(w.Dir, "d.txt"), "d\n")
				sh(t, w.Dir, "git", "add", "d.txt")
				sh(t, w.Dir, "git", "commit", "-qm", "w1: d")
			}

			// The next run's manager.
			next := &Manager{Repo: repo, Root: m.Root, Now: m.Now}
			saved, err := next.Recover(ctx, "main")
			is.NoErr(err)
			is.Equal(len(saved) == 1, tc.kept)
			if tc.kept {
				is.Equal(sh(t, repo, "git", "show", saved[0].Branch+":d.txt"), "d")
			}
		})
	}
}

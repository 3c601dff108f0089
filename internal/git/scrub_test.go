package git

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// bound is how long one git call may take in these tests before it
// counts as hung: far more than any of them needs, far less than CI's.
const bound = 20 * time.Second

// repo is a repository with one commit on main and a linked work tree
// on branch b1.
type repo struct {
	dir, tree, common, admin string
}

func scrubGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// Memory capped: a git that reads /dev/zero fails instead of taking
	// the machine's memory.
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -v 4000000 && exec git "$@"`, "git"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("git %v in %s hung (killed after %s)", args, dir, bound)
	}
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newScrubRepo(t testing.TB) repo {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := repo{dir: filepath.Join(root, "repo"), tree: filepath.Join(root, "w1")}
	r.common = filepath.Join(r.dir, ".git")
	r.admin = filepath.Join(r.common, "worktrees", "w1")
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scrubGit(t, r.dir, "init", "-q", "-b", "main")
	scrubGit(t, r.dir, "add", "a.txt")
	scrubGit(t, r.dir, "commit", "-q", "-m", "base")
	scrubGit(t, r.dir, "worktree", "add", "-q", "-b", "b1", r.tree)
	return r
}

func (r repo) scrub() *Scrubber {
	return &Scrubber{Common: r.common, Heads: map[string]string{r.dir: "ref: refs/heads/main", r.tree: "ref: refs/heads/b1"}}
}

// usable runs the git calls ralphd makes in both work trees, each bounded,
// and checks that each work tree is still on its branch.
func (r repo) usable(t *testing.T) {
	t.Helper()
	is := is.New(t)
	scrubGit(t, r.dir, "for-each-ref")
	scrubGit(t, r.dir, "worktree", "list", "--porcelain")
	scrubGit(t, r.dir, "status", "--porcelain")
	scrubGit(t, r.tree, "status", "--porcelain")
	scrubGit(t, r.tree, "log", "-1", "--format=%H")
	scrubGit(t, r.tree, "commit", "-q", "--allow-empty", "-m", "after")
	is.Equal(scrubGit(t, r.dir, "symbolic-ref", "HEAD"), "refs/heads/main")
	is.Equal(scrubGit(t, r.tree, "symbolic-ref", "HEAD"), "refs/heads/b1")
	is.Equal(scrubGit(t, r.tree, "rev-parse", "--absolute-git-dir"), r.admin)
}

func mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, to, path string) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(to, path); err != nil {
		t.Fatal(err)
	}
}

func writeScrubFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A planted route: plant puts something where git opens a file and
// returns where.
type route struct {
	name  string
	plant func(t *testing.T, r repo) string
}

// fifo is a route that puts a FIFO at rel in the git directory dir(r).
func fifo(name string, dir func(repo) string, rel string) route {
	return route{name, func(t *testing.T, r repo) string {
		p := filepath.Join(dir(r), rel)
		mkfifo(t, p)
		return p
	}}
}

func common(r repo) string { return r.common }
func admin(r repo) string  { return r.admin }

// routes are the plantings that make git block, read forever, or refuse
// a work tree; every one was seen to do so with git 2.39 (see
// TestGitHangsWithoutScrub for the hangs).
func routes() []route {
	rs := []route{}
	for _, rel := range []string{"refs/heads/x", "refs/tags/t", "refs/heads/ralphd/workers/w1/work", "logs/HEAD",
		"logs/refs/heads/main", "packed-refs", "config", "HEAD", "info/attributes", "info/exclude",
		"objects/info/alternates", "objects/info/commit-graph", "shallow", "index", "FETCH_HEAD", "remotes/origin"} {
		rs = append(rs, fifo("FIFO at common "+rel, common, rel))
	}
	for _, rel := range []string{"HEAD", "index", "commondir", "gitdir", "locked", "ORIG_HEAD", "MERGE_HEAD",
		"logs/HEAD", "rebase-merge/head-name", "refs/bisect/bad"} {
		rs = append(rs, fifo("FIFO at worktree's "+rel, admin, rel))
	}
	return append(rs,
		route{"FIFO in a loose object's place", func(t *testing.T, r repo) string {
			blob := scrubGit(t, r.dir, "rev-parse", "HEAD:a.txt")
			p := filepath.Join(r.common, "objects", blob[:2], blob[2:])
			mkfifo(t, p)
			return p
		}},
		route{"symlink to /dev/zero as a loose ref", func(t *testing.T, r repo) string {
			p := filepath.Join(r.common, "refs", "heads", "z")
			symlink(t, "/dev/zero", p)
			return p
		}},
		route{"symlink to a FIFO outside as a reflog", func(t *testing.T, r repo) string {
			out := filepath.Join(t.TempDir(), "fifo")
			mkfifo(t, out)
			p := filepath.Join(r.common, "logs", "refs", "heads", "main")
			symlink(t, out, p)
			return p
		}},
		route{"symlink to a huge file as a loose ref", func(t *testing.T, r repo) string {
			big := filepath.Join(t.TempDir(), "big")
			writeScrubFile(t, big, make([]byte, 2*MaxRef))
			p := filepath.Join(r.common, "refs", "heads", "big")
			symlink(t, big, p)
			return p
		}},
		route{"huge file as a loose ref", func(t *testing.T, r repo) string {
			p := filepath.Join(r.common, "refs", "tags", "big")
			writeScrubFile(t, p, make([]byte, 2*MaxRef))
			return p
		}},
		route{"symlinked directory of FIFOs in refs", func(t *testing.T, r repo) string {
			out := t.TempDir()
			mkfifo(t, filepath.Join(out, "x"))
			p := filepath.Join(r.common, "refs", "heads", "d")
			symlink(t, out, p)
			return p
		}},
		route{"dangling symlink as a loose ref", func(t *testing.T, r repo) string {
			p := filepath.Join(r.common, "refs", "heads", "later")
			symlink(t, filepath.Join(t.TempDir(), "not-yet"), p)
			return p
		}},
		route{"directory as the worktree's HEAD", func(t *testing.T, r repo) string {
			p := filepath.Join(r.admin, "HEAD")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		route{"directory as the index", func(t *testing.T, r repo) string {
			p := filepath.Join(r.common, "index")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		route{"worktree's HEAD deleted", func(t *testing.T, r repo) string {
			p := filepath.Join(r.admin, "HEAD")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		route{"a gitdir: file leading to another repository", func(t *testing.T, r repo) string {
			other := filepath.Join(t.TempDir(), "other")
			scrubGit(t, t.TempDir(), "init", "-q", "-b", "b1", other)
			scrubGit(t, other, "commit", "-q", "--allow-empty", "-m", "decoy")
			p := filepath.Join(r.tree, ".git")
			writeScrubFile(t, p, []byte("gitdir: "+filepath.Join(other, ".git")+"\n"))
			return p
		}},
		route{"a FIFO as the worktree's .git", func(t *testing.T, r repo) string {
			p := filepath.Join(r.tree, ".git")
			mkfifo(t, p)
			return p
		}},
		route{"a repository as the worktree's .git", func(t *testing.T, r repo) string {
			p := filepath.Join(r.tree, ".git")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			scrubGit(t, r.tree, "init", "-q", "-b", "b1")
			return p
		}},
	)
}

// TestScrubRemovesEveryRoute: after each planting, Scrub reports it, and
// every git call ralphd makes then ends, in both work trees, each still
// on its branch.
func TestScrubRemovesEveryRoute(t *testing.T) {
	for _, rt := range routes() {
		t.Run(rt.name, func(t *testing.T) {
			is := is.New(t)
			r := newScrubRepo(t)
			where := rt.plant(t, r)
			found, err := r.scrub().Scrub(r.dir, r.tree)
			is.NoErr(err)
			paths := []string{}
			for _, p := range found {
				is.NoErr(p.Err)
				is.True(p.What != "" && p.Fix != "")
				is.True(strings.Contains(p.String(), p.Path))
				paths = append(paths, p.Path)
			}
			is.True(len(found) >= 1)
			is.Equal(paths[0], where) // reported where it was planted
			r.usable(t)
			again, err := r.scrub().Scrub(r.dir, r.tree)
			is.NoErr(err)
			is.Equal(again, []Planted(nil)) // nothing left
		})
	}
}

// TestScrubLeavesWhatGitMakes: a repository as git and a person leave it
// (a ref that is a symlink naming a ref, a socket such as fsmonitor's, a
// config symlinked to a file elsewhere, logs/refs and hooks linked to
// directories elsewhere, packed refs, a long reflog, a stash) holds
// nothing planted.
func TestScrubLeavesWhatGitMakes(t *testing.T) {
	is := is.New(t)
	r := newScrubRepo(t)
	scrubGit(t, r.dir, "branch", "side")
	scrubGit(t, r.dir, "tag", "-a", "-m", "v", "v1")
	scrubGit(t, r.dir, "pack-refs", "--all")
	scrubGit(t, r.dir, "branch", "loose")
	for range 400 { // a reflog over MaxRef
		scrubGit(t, r.dir, "update-ref", "-m", strings.Repeat("x", 200), "refs/heads/loose", "HEAD")
	}
	symlink(t, "refs/heads/main", filepath.Join(r.common, "refs", "heads", "alias"))
	cfg := filepath.Join(t.TempDir(), "config")
	b, err := os.ReadFile(filepath.Join(r.common, "config"))
	is.NoErr(err)
	writeScrubFile(t, cfg, b)
	symlink(t, cfg, filepath.Join(r.common, "config"))
	// git-new-workdir's links to another git directory's, and a person's
	// hooks kept elsewhere.
	elsewhere := t.TempDir()
	is.NoErr(os.MkdirAll(filepath.Join(elsewhere, "hooks"), 0o755))
	is.NoErr(os.Rename(filepath.Join(r.common, "logs", "refs"), filepath.Join(elsewhere, "logs-refs")))
	symlink(t, filepath.Join(elsewhere, "logs-refs"), filepath.Join(r.common, "logs", "refs"))
	symlink(t, filepath.Join(elsewhere, "hooks"), filepath.Join(r.common, "hooks"))
	l, err := net.Listen("unix", filepath.Join(r.common, "fsmonitor--daemon.ipc"))
	is.NoErr(err)
	defer l.Close()
	writeScrubFile(t, filepath.Join(r.tree, "a.txt"), []byte("changed\n"))
	scrubGit(t, r.tree, "stash")
	scrubGit(t, r.dir, "gc", "-q")

	found, err := r.scrub().Scrub(r.dir, r.tree)
	is.NoErr(err)
	is.Equal(found, []Planted(nil))
	r.usable(t)
}

// TestScrubLeavesAWorkTreeBeingMade: while git adds a work tree, it
// writes its git directory's files and its .git file one by one. A scrub
// that does not own that work tree (the pool's, beside another worker's
// git) neither writes back nor reports what is not there yet; one that
// owns it does.
func TestScrubLeavesAWorkTreeBeingMade(t *testing.T) {
	is := is.New(t)
	r := newScrubRepo(t)
	for _, f := range []string{"HEAD", "commondir"} {
		is.NoErr(os.Remove(filepath.Join(r.admin, f)))
	}
	is.NoErr(os.Remove(filepath.Join(r.tree, ".git")))
	found, err := r.scrub().Scrub()
	is.NoErr(err)
	is.Equal(found, []Planted(nil))
	_, err = os.Lstat(filepath.Join(r.admin, "HEAD"))
	is.True(os.IsNotExist(err)) // left to git

	writeScrubFile(t, filepath.Join(r.tree, ".git"), []byte("gitdir: "+r.admin+"\n"))
	found, err = r.scrub().Scrub(r.tree)
	is.NoErr(err)
	is.Equal(len(found), 2) // HEAD and commondir, written back
	r.usable(t)
}

// TestGitHangsWithoutScrub shows the hang Scrub exists for, so that a git
// that stops blocking is noticed: a FIFO as a loose ref blocks
// for-each-ref, and a FIFO as a work tree's HEAD blocks status there.
func TestGitHangsWithoutScrub(t *testing.T) {
	r := newScrubRepo(t)
	mkfifo(t, filepath.Join(r.common, "refs", "heads", "x"))
	mkfifo(t, filepath.Join(r.admin, "index"))
	for _, c := range []struct{ dir, args string }{{r.dir, "for-each-ref"}, {r.tree, "status --porcelain"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		cmd := exec.CommandContext(ctx, "git", strings.Fields(c.args)...)
		cmd.Dir = c.dir
		err := cmd.Run()
		cancel()
		if ctx.Err() == nil {
			t.Errorf("git %s ended (%v) with a FIFO planted: git no longer blocks there", c.args, err)
		}
	}
}

// TestScrubLetsGoOfAWaitingGit: a git already blocked on a planted FIFO
// (reading a loose ref, or appending to a reflog) gets through once Scrub
// removes it, instead of waiting for its timeout.
func TestScrubLetsGoOfAWaitingGit(t *testing.T) {
	for _, tc := range []struct{ rel, args string }{
		{"refs/heads/x", "for-each-ref"},
		{"logs/refs/heads/main", "-c user.name=t -c user.email=t@x commit -q --allow-empty -m x"},
		{"packed-refs", "rev-parse --verify -q refs/heads/nothing"},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			is := is.New(t)
			r := newScrubRepo(t)
			mkfifo(t, filepath.Join(r.common, tc.rel))
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			cmd := exec.CommandContext(ctx, "git", strings.Fields(tc.args)...)
			cmd.Dir = r.dir
			is.NoErr(cmd.Start())
			ended := make(chan struct{})
			go func() { _ = cmd.Wait(); close(ended) }()
			select {
			case <-ended:
				t.Fatalf("git %s did not block on the FIFO", tc.args)
			case <-time.After(300 * time.Millisecond):
			}
			found, err := r.scrub().Scrub()
			is.NoErr(err)
			is.Equal(len(found), 1)
			select {
			case <-ended:
				is.True(ctx.Err() == nil) // let go, not killed
			case <-ctx.Done():
				t.Fatalf("git %s still blocked after the scrub", tc.args)
			}
			r.usable(t)
		})
	}
}

// TestScrubTree: a FIFO .gitignore deep in the work tree (which blocks
// git status, add and clean) and a FIFO .gitattributes are removed; a
// regular .gitignore, a symlinked one (git does not follow it) and a FIFO
// under .git are left to Scrub.
func TestScrubTree(t *testing.T) {
	is := is.New(t)
	r := newScrubRepo(t)
	deep := filepath.Join(r.tree, "a", "b")
	is.NoErr(os.MkdirAll(deep, 0o755))
	writeScrubFile(t, filepath.Join(r.tree, ".gitignore"), []byte("*.o\n"))
	symlink(t, "/dev/zero", filepath.Join(r.tree, "a", ".gitignore"))
	mkfifo(t, filepath.Join(deep, ".gitignore"))
	mkfifo(t, filepath.Join(r.tree, ".gitattributes"))
	mkfifo(t, filepath.Join(deep, "data.fifo")) // git skips it
	found, err := ScrubTree(r.tree)
	is.NoErr(err)
	var paths []string
	for _, p := range found {
		is.NoErr(p.Err)
		paths = append(paths, p.Path)
	}
	is.Equal(paths, []string{filepath.Join(r.tree, ".gitattributes"), filepath.Join(deep, ".gitignore")})
	scrubGit(t, r.tree, "status", "--porcelain")
	scrubGit(t, r.tree, "add", "-A")
	scrubGit(t, r.tree, "clean", "-n")
	again, err := ScrubTree(r.tree)
	is.NoErr(err)
	is.Equal(again, []Planted(nil))
}

// TestScrubDropsABlockingAlternate: the agent deletes a loose object and
// names, in objects/info/alternates, a store that holds a FIFO in its
// place, before one with a real copy: git would block on the FIFO. Scrub
// drops that store from the file (removing nothing outside the
// repository), keeps the other, and git then reads the object from it.
func TestScrubDropsABlockingAlternate(t *testing.T) {
	is := is.New(t)
	r := newScrubRepo(t)
	tree := scrubGit(t, r.dir, "rev-parse", "HEAD^{tree}")
	loose := filepath.Join("objects", tree[:2], tree[2:])
	good := filepath.Join(t.TempDir(), "objects")
	is.NoErr(os.MkdirAll(filepath.Join(good, tree[:2]), 0o755))
	b, err := os.ReadFile(filepath.Join(r.common, loose))
	is.NoErr(err)
	writeScrubFile(t, filepath.Join(good, "..", loose), b) // a real copy: a store worth keeping
	evil := filepath.Join(t.TempDir(), "objects")
	mkfifo(t, filepath.Join(evil, tree[:2], tree[2:]))
	is.NoErr(os.Remove(filepath.Join(r.common, loose)))
	alternates := filepath.Join(r.common, "objects", "info", "alternates")
	writeScrubFile(t, alternates, []byte(evil+"\n"+good+"\n"))

	found, err := r.scrub().Scrub()
	is.NoErr(err)
	is.Equal(len(found), 1)
	is.Equal(found[0].Path, filepath.Join(evil, tree[:2], tree[2:]))
	b, err = os.ReadFile(alternates)
	is.NoErr(err)
	is.Equal(string(b), good+"\n") // the blocking store dropped, the other kept
	fi, err := os.Lstat(found[0].Path)
	is.NoErr(err)
	is.True(fi.Mode()&os.ModeNamedPipe != 0) // nothing outside the repository removed
	is.Equal(scrubGit(t, r.dir, "rev-parse", "HEAD^{tree}"), tree)
	scrubGit(t, r.dir, "status", "--porcelain") // reads the tree from the kept store
}

// TestSince: a finding carries when the last scrub that found nothing
// began, so that it is charged to the windows open since then only.
func TestSince(t *testing.T) {
	is := is.New(t)
	r := newScrubRepo(t)
	s := r.scrub()
	before := time.Now()
	found, err := s.Scrub()
	is.NoErr(err)
	is.Equal(len(found), 0)
	after := time.Now()
	mkfifo(t, filepath.Join(r.common, "refs", "heads", "x"))
	found, err = s.Scrub()
	is.NoErr(err)
	is.Equal(len(found), 1)
	is.True(!found[0].Since.Before(before) && !found[0].Since.After(after))
	mkfifo(t, filepath.Join(r.common, "refs", "heads", "y"))
	again, err := s.Scrub()
	is.NoErr(err)
	is.Equal(again[0].Since, found[0].Since) // no clean scrub in between
}

// TestScrubTrustsNoStaleListing: a loose objects directory found clean
// is not listed again while its change time stays; a FIFO planted there
// later is still found, even with the directory's times set back as they
// were (the change time cannot be set back).
func TestScrubTrustsNoStaleListing(t *testing.T) {
	is := is.New(t)
	r := newScrubRepo(t)
	blob := scrubGit(t, r.dir, "rev-parse", "HEAD:a.txt")
	dir := filepath.Join(r.common, "objects", blob[:2])
	before, err := os.Lstat(dir)
	is.NoErr(err)
	time.Sleep(2 * racy) // past the racy window: the listing is trusted
	s := r.scrub()
	found, err := s.Scrub()
	is.NoErr(err)
	is.Equal(len(found), 0)
	_, cached := s.seen[dir]
	is.True(cached)

	mkfifo(t, filepath.Join(dir, strings.Repeat("0", len(blob)-2)))
	is.NoErr(os.Chtimes(dir, before.ModTime(), before.ModTime()))
	found, err = s.Scrub()
	is.NoErr(err)
	is.Equal(len(found), 1)
	is.Equal(found[0].Path, filepath.Join(dir, strings.Repeat("0", len(blob)-2)))
}

package mergeq

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/git"
)

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

func sh(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t testing.TB, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture is a main repo with main checked out, and worker worktrees.
type fixture struct {
	t    *testing.T
	repo string
	wt   *git.Manager
}

func newFixture(t *testing.T, repo string) *fixture {
	return &fixture{t: t, repo: repo, wt: &git.Manager{Repo: repo, Root: filepath.Join(filepath.Dir(repo), filepath.Base(repo)+"-workers")}}
}

func newRepo(t *testing.T) *fixture {
	t.Helper()
	testEnv(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")
	write(t, filepath.Join(repo, "shared.txt"), "line 1\nline 2\nline 3\n")
	write(t, filepath.Join(repo, ".beads", "interactions.jsonl"), "")
	sh(t, repo, "git", "init", "-q", "-b", "main")
	sh(t, repo, "git", "add", "-A")
	sh(t, repo, "git", "commit", "-q", "-m", "base")
	return newFixture(t, repo)
}

// work opens worker w's worktree at main and commits files there.
func (f *fixture) work(w string, files map[string]string) Request {
	f.t.Helper()
	tr, _, err := f.wt.Open(context.Background(), w, "main")
	if err != nil {
		f.t.Fatal(err)
	}
	for name, body := range files {
		write(f.t, filepath.Join(tr.Dir, name), body)
	}
	sh(f.t, tr.Dir, "git", "add", "-A")
	sh(f.t, tr.Dir, "git", "commit", "-q", "-m", "work of "+w)
	return Request{Worker: w, Issue: "is-" + w, Dir: tr.Dir, Branch: tr.Branch}
}

// clean asserts the target's checkout is clean outside .beads and not
// mid-rebase.
func (f *fixture) clean() {
	f.t.Helper()
	if st := sh(f.t, f.repo, "git", "status", "--porcelain", "--", ".", ":(exclude).beads"); st != "" {
		f.t.Fatalf("target checkout dirty:\n%s", st)
	}
	if inRebase(context.Background(), f.repo) {
		f.t.Fatal("target checkout mid-rebase")
	}
}

func TestIntegrateLocal(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	verified := 0
	q := &Queue{Repo: f.repo, Target: "main", Verify: func(ctx context.Context, dir string) error {
		verified++
		_, err := os.Stat(filepath.Join(dir, "a.txt")) // verify sees the rebased result
		return err
	}}
	// bd appends to main's .beads while workers run: that must not block.
	write(t, filepath.Join(f.repo, ".beads", "interactions.jsonl"), "{}\n")
	ra := f.work("w1", map[string]string{"a.txt": "a\n"})
	rb := f.work("w2", map[string]string{"a.txt": "a\n", "b.txt": "b\n"}) // b is based on the old main

	res, err := q.Integrate(ctx, ra)
	is.NoErr(err)
	is.True(res.Integrated)
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), res.Commit)
	is.Equal(sh(t, f.repo, "cat", "a.txt"), "a") // the checkout followed
	f.clean()
	is.Equal(sh(t, f.repo, "cat", ".beads/interactions.jsonl"), "{}") // bd's file untouched

	res, err = q.Integrate(ctx, rb) // rebased onto w1's work, then integrated
	is.NoErr(err)
	is.True(res.Integrated)
	is.Equal(sh(t, f.repo, "cat", "b.txt"), "b")
	is.Equal(sh(t, f.repo, "git", "rev-list", "--count", "main"), "3") // linear: base, w1, w2
	f.clean()
	is.Equal(verified, 2)
}

func TestConflictKeepsWork(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	q := &Queue{Repo: f.repo, Target: "main"}
	ra := f.work("w1", map[string]string{"shared.txt": "line 1\nw1 was here\nline 3\n"})
	rb := f.work("w2", map[string]string{"shared.txt": "line 1\nw2 was here\nline 3\n", "other.txt": "o\n"})
	_, err := q.Integrate(ctx, ra)
	is.NoErr(err)
	before := sh(t, f.repo, "git", "rev-parse", "main")
	wBefore := sh(t, rb.Dir, "git", "rev-parse", "HEAD")

	res, err := q.Integrate(ctx, rb)
	is.NoErr(err)
	is.True(!res.Integrated)
	is.Equal(res.Conflicts, []string{"shared.txt"})
	is.True(strings.Contains(res.Reason(), "shared.txt"))
	is.True(strings.HasPrefix(res.Kept, KeptPrefix+"is-w2/"))
	is.Equal(sh(t, f.repo, "git", "show", res.Kept+":shared.txt"), "line 1\nw2 was here\nline 3") // no work lost
	is.Equal(sh(t, f.repo, "git", "show", res.Kept+":other.txt"), "o")
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), before)  // the target did not move
	is.Equal(sh(t, rb.Dir, "git", "rev-parse", "HEAD"), wBefore) // the worker's branch is back
	is.True(!inRebase(ctx, rb.Dir))
	f.clean()
}

func TestRedVerifyKeepsWork(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	q := &Queue{Repo: f.repo, Target: "main", Verify: func(context.Context, string) error { return errors.New("tests failed") }}
	r := f.work("w1", map[string]string{"a.txt": "a\n"})
	write(t, filepath.Join(r.Dir, "left.txt"), "uncommitted\n") // left uncommitted by the agent
	before := sh(t, f.repo, "git", "rev-parse", "main")
	res, err := q.Integrate(ctx, r)
	is.NoErr(err)
	is.True(!res.Integrated)
	is.True(res.VerifyErr != nil)
	is.Equal(sh(t, f.repo, "git", "show", res.Kept+":left.txt"), "uncommitted") // kept too
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), before)
	f.clean()
}

func TestTargetDirtyIsRefused(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	q := &Queue{Repo: f.repo, Target: "main"}
	r := f.work("w1", map[string]string{"a.txt": "a\n"})
	write(t, filepath.Join(f.repo, "shared.txt"), "the user's edit\n")
	before := sh(t, f.repo, "git", "rev-parse", "main")
	res, err := q.Integrate(context.Background(), r)
	is.True(errors.Is(err, ErrTargetDirty))
	is.True(res.Kept != "")
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), before)
	is.Equal(sh(t, f.repo, "cat", "shared.txt"), "the user's edit") // untouched
}

func TestTargetNotCheckedOut(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	sh(t, f.repo, "git", "checkout", "-q", "-b", "elsewhere")
	q := &Queue{Repo: f.repo, Target: "main"}
	r := f.work("w1", map[string]string{"a.txt": "a\n"})
	res, err := q.Integrate(context.Background(), r)
	is.NoErr(err)
	is.True(res.Integrated)
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), res.Commit)
	is.Equal(sh(t, f.repo, "git", "branch", "--show-current"), "elsewhere")
	f.clean()
}

// twoClones makes a bare remote and two clones of it.
func twoClones(t *testing.T) (remote string, a, b *fixture) {
	t.Helper()
	src := newRepo(t)
	root := filepath.Dir(src.repo)
	remote = filepath.Join(root, "remote.git")
	sh(t, root, "git", "clone", "-q", "--bare", src.repo, remote)
	// A remote that refuses forced updates, so a force-push would fail.
	sh(t, remote, "git", "config", "receive.denyNonFastForwards", "true")
	for _, n := range []string{"a", "b"} {
		sh(t, root, "git", "clone", "-q", remote, filepath.Join(root, n))
	}
	return remote, newFixture(t, filepath.Join(root, "a")), newFixture(t, filepath.Join(root, "b"))
}

func TestPushRejectedThenRetried(t *testing.T) {
	is := is.New(t)
	remote, a, b := twoClones(t)
	ctx := context.Background()
	ra := a.work("w1", map[string]string{"a.txt": "a\n"})
	rb := b.work("w1", map[string]string{"b.txt": "b\n"})
	qa := &Queue{Repo: a.repo, Target: "main", Remote: "origin"}
	first := true
	qb := &Queue{Repo: b.repo, Target: "main", Remote: "origin", Verify: func(ctx context.Context, dir string) error {
		if first { // clone a gets there first, while b verifies
			first = false
			res, err := qa.Integrate(ctx, ra)
			if err != nil || !res.Integrated {
				t.Errorf("a: %+v %v", res, err)
			}
		}
		return nil
	}}
	res, err := qb.Integrate(ctx, rb)
	is.NoErr(err)
	is.True(res.Integrated)
	is.Equal(res.Rounds, 2) // rejected once, then fetched, rebased, verified, pushed
	tip := sh(t, remote, "git", "rev-parse", "main")
	is.Equal(tip, res.Commit)
	files := sh(t, remote, "git", "ls-tree", "--name-only", "main")
	is.True(strings.Contains(files, "a.txt") && strings.Contains(files, "b.txt")) // nobody's work lost
	is.Equal(sh(t, remote, "git", "rev-list", "--count", "main"), "3")
	is.Equal(sh(t, b.repo, "git", "rev-parse", "main"), tip) // b's local main followed
	b.clean()
}

func TestPushRejectedEveryTime(t *testing.T) {
	is := is.New(t)
	remote, a, b := twoClones(t)
	ctx := context.Background()
	rb := b.work("w1", map[string]string{"b.txt": "b\n"})
	n := 0
	qb := &Queue{Repo: b.repo, Target: "main", Remote: "origin", MaxPushTries: 3, Verify: func(ctx context.Context, dir string) error {
		n++ // someone always gets there first
		r := a.work("w1", map[string]string{"a.txt": strings.Repeat("a", n)})
		if res, err := (&Queue{Repo: a.repo, Target: "main", Remote: "origin"}).Integrate(ctx, r); err != nil || !res.Integrated {
			t.Errorf("a: %+v %v", res, err)
		}
		return nil
	}}
	res, err := qb.Integrate(ctx, rb)
	is.NoErr(err)
	is.True(!res.Integrated)
	is.True(res.Rejected)
	is.Equal(res.Rounds, 3) // bounded
	is.Equal(sh(t, remote, "git", "show", "main:a.txt"), "aaa")
	is.Equal(sh(t, b.repo, "git", "show", res.Kept+":b.txt"), "b")
}

// TestRecover covers every point where a crash can stop a move of the
// checked-out target.
func TestRecover(t *testing.T) {
	for _, c := range []struct {
		name  string
		crash func(f *fixture, old, tip string)
	}{
		{"journal only", func(f *fixture, old, tip string) {}},
		{"files and index moved, ref not", func(f *fixture, old, tip string) {
			sh(f.t, f.repo, "git", "read-tree", "-m", "-u", old, tip)
		}},
		{"files half written, index old", func(f *fixture, old, tip string) {
			write(f.t, filepath.Join(f.repo, "a.txt"), "partial")
			write(f.t, filepath.Join(f.repo, "shared.txt"), "half\n")
			write(f.t, filepath.Join(f.repo, ".git", "index.lock"), "")
		}},
		{"everything moved", func(f *fixture, old, tip string) {
			sh(f.t, f.repo, "git", "read-tree", "-m", "-u", old, tip)
			sh(f.t, f.repo, "git", "update-ref", "refs/heads/main", tip, old)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			r := f.work("w1", map[string]string{"a.txt": "a\n", "shared.txt": "changed\n"})
			old := sh(t, f.repo, "git", "rev-parse", "main")
			tip := sh(t, r.Dir, "git", "rev-parse", "HEAD")
			q := &Queue{Repo: f.repo, Target: "main"}
			jp, err := q.journalPath(ctx)
			is.NoErr(err)
			is.NoErr(writeJournal(jp, f.repo, old, tip))
			c.crash(f, old, tip)
			did, err := q.Recover(ctx)
			is.NoErr(err)
			is.True(did)
			is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), tip)
			is.Equal(sh(t, f.repo, "cat", "a.txt"), "a")
			f.clean()
			_, err = os.Stat(jp)
			is.True(os.IsNotExist(err))
			did, err = q.Recover(ctx)
			is.NoErr(err)
			is.True(!did) // nothing left
		})
	}
}

func TestParseJournal(t *testing.T) {
	h := strings.Repeat("a", 40)
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"/r\n" + h + "\n" + h + "\n", true},
		{"r\n" + h + "\n" + h + "\n", false},
		{"/r\n" + h + "\n", false},
		{"/r\n" + h + "\nzz\n", false},
		{"", false},
	} {
		if _, _, _, ok := parseJournal(c.in); ok != c.ok {
			t.Errorf("parseJournal(%q) ok=%v", c.in, ok)
		}
	}
}

func FuzzParseJournal(f *testing.F) {
	f.Add("/r\n" + strings.Repeat("a", 40) + "\n" + strings.Repeat("b", 40) + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		dir, old, tip, ok := parseJournal(s)
		if ok && (!filepath.IsAbs(dir) || !git.IsHash(old) || !git.IsHash(tip)) {
			t.Fatalf("accepted %q", s)
		}
	})
}

func TestPushRejected(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"To /r.git\n!\tabc:refs/heads/main\t[rejected] (fetch first)\nDone\n", true},
		{"To /r.git\n!\tabc:refs/heads/main\t[rejected] (non-fast-forward)\nDone\n", true},
		{"To /r.git\n!\tabc:refs/heads/main\t[remote rejected] (cannot lock ref)\nDone\n", true},
		{"To /r.git\n!\tabc:refs/heads/main\t[remote failure] (remote failed to report status)\n", false},
		{"To /r.git\n \tabc:refs/heads/main\t1111..2222\nDone\n", false},
		{"fatal: could not read from remote repository", false},
		{"", false},
	} {
		if got := pushRejected(c.out); got != c.want {
			t.Errorf("pushRejected(%q) = %v", c.out, got)
		}
	}
}

func FuzzPushRejected(f *testing.F) {
	f.Add("!\tabc:refs/heads/main\t[rejected] (fetch first)\n")
	f.Fuzz(func(t *testing.T, s string) {
		if pushRejected(s) && !strings.Contains(s, "!\t") {
			t.Fatalf("rejected without a flagged line: %q", s)
		}
	})
}

// An agent can write the git directory, even sandboxed. A journal there,
// naming the target's checkout, the target's tip as "old" and the agent's
// commit as "new", would have the next start finish a move to unverified
// work. ralphd keeps its journal in its state directory (Queue.Journal),
// so one planted in the git directory is not read; and a journal naming a
// directory other than the target's checkout is refused.
func TestRecoverIgnoresPlantedJournals(t *testing.T) {
	ctx := context.Background()
	t.Run("planted in the git directory", func(t *testing.T) {
		is := is.New(t)
		f := newRepo(t)
		r := f.work("w1", map[string]string{"evil.txt": "unverified\n"})
		old := sh(t, f.repo, "git", "rev-parse", "main")
		evil := sh(t, r.Dir, "git", "rev-parse", "HEAD")
		common := sh(t, f.repo, "git", "rev-parse", "--path-format=absolute", "--git-common-dir")
		is.NoErr(os.WriteFile(filepath.Join(common, journalName), []byte(f.repo+"\n"+old+"\n"+evil+"\n"), 0o644))
		q := &Queue{Repo: f.repo, Target: "main", Journal: filepath.Join(t.TempDir(), "mergeq.journal")}
		did, err := q.Recover(ctx)
		is.NoErr(err)
		is.True(!did)
		is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), old) // the target did not move
		_, err = os.Stat(filepath.Join(f.repo, "evil.txt"))
		is.True(os.IsNotExist(err))
	})
	t.Run("naming another directory", func(t *testing.T) {
		is := is.New(t)
		f := newRepo(t)
		r := f.work("w1", map[string]string{"a.txt": "a\n"})
		old := sh(t, f.repo, "git", "rev-parse", "main")
		tip := sh(t, r.Dir, "git", "rev-parse", "HEAD")
		q := &Queue{Repo: f.repo, Target: "main", Journal: filepath.Join(t.TempDir(), "mergeq.journal")}
		is.NoErr(writeJournal(q.Journal, r.Dir, old, tip))
		did, err := q.Recover(ctx)
		is.True(did)
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "not where main is checked out"))
		is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), old)
	})
}

// TestTrackerFilesAreNotIntegrated: work that changes the tracker's own
// files (where every clone's bd finds the tracker) is kept, never
// integrated; bd's own interactions.jsonl is not such a change.
func TestTrackerFilesAreNotIntegrated(t *testing.T) {
	const meta = `{"dolt_mode": "server", "dolt_server_host": "tracker.lan", "dolt_database": "p"}` + "\n"
	for _, tc := range []struct {
		name  string
		agent func(t *testing.T, dir string) // commits in the worker's worktree
		want  []string                       // Result.Tracker; nil: integrated
	}{
		{"redirect the database", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".beads", "metadata.json"), strings.Replace(meta, `"p"`, `"evil"`, 1))
			write(t, filepath.Join(dir, "a.txt"), "a\n")
		}, []string{".beads/metadata.json"}},
		{"add a config", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".beads", "config.yaml"), "dolt:\n  host: evil.example\n")
		}, []string{".beads/config.yaml"}},
		{"delete the metadata", func(t *testing.T, dir string) {
			sh(t, dir, "git", "rm", "-q", ".beads/metadata.json")
		}, []string{".beads/metadata.json"}},
		{"rename it away", func(t *testing.T, dir string) {
			sh(t, dir, "git", "mv", ".beads/metadata.json", ".beads/metadata.json.bak")
		}, []string{".beads/metadata.json", ".beads/metadata.json.bak"}},
		{"replace .beads with a symlink", func(t *testing.T, dir string) {
			sh(t, dir, "git", "rm", "-q", "-r", ".beads")
			if err := os.Symlink("/tmp", filepath.Join(dir, ".beads")); err != nil {
				t.Fatal(err)
			}
		}, []string{".beads", ".beads/metadata.json"}},
		{"bd's own log and code", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".beads", "interactions.jsonl"), "{}\n")
			write(t, filepath.Join(dir, "a.txt"), "a\n")
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			write(t, filepath.Join(f.repo, ".beads", "metadata.json"), meta)
			sh(t, f.repo, "git", "add", "-A")
			sh(t, f.repo, "git", "commit", "-q", "-m", "server mode")
			ctx := context.Background()
			q := &Queue{Repo: f.repo, Target: "main"}
			tr, _, err := f.wt.Open(ctx, "w1", "main")
			is.NoErr(err)
			tc.agent(t, tr.Dir)
			sh(t, tr.Dir, "git", "add", "-A")
			sh(t, tr.Dir, "git", "commit", "-q", "-m", "work")
			before := sh(t, f.repo, "git", "rev-parse", "main")
			tip := sh(t, tr.Dir, "git", "rev-parse", "HEAD")

			res, err := q.Integrate(ctx, Request{Worker: "w1", Issue: "is-w1", Dir: tr.Dir, Branch: tr.Branch})
			is.NoErr(err)
			if tc.want == nil {
				is.True(res.Integrated)
				return
			}
			is.True(!res.Integrated)
			is.Equal(res.Tracker, tc.want)
			is.True(strings.Contains(res.Reason(), ".beads/"))
			is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), before)                     // the target did not move
			is.Equal(sh(t, f.repo, "git", "rev-parse", res.Kept), tip)                      // the work is kept
			is.Equal(sh(t, f.repo, "cat", ".beads/metadata.json"), strings.TrimSpace(meta)) // every clone's tracker is where it was
			f.clean()
		})
	}
}

// TestHandThenIntegrate: a worker hands its work over (what it left
// uncommitted too) and goes on to its next issue in the same worktree;
// the queue integrates exactly what was handed over, in its own worktree,
// never the worker's, and leaves no worktree behind once removed.
func TestHandThenIntegrate(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	var verifiedIn string
	q := &Queue{Repo: f.repo, Target: "main", Verify: func(ctx context.Context, dir string) error {
		verifiedIn = dir
		for _, name := range []string{"a.txt", "left.txt"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
		return nil
	}}
	req := f.work("w1", map[string]string{"a.txt": "a\n"})
	write(t, filepath.Join(req.Dir, "left.txt"), "uncommitted\n")
	commit, err := q.Hand(ctx, req)
	is.NoErr(err)
	is.Equal(sh(t, req.Dir, "git", "status", "--porcelain"), "") // the leftovers are in the handed commit
	// The worker's next issue, in the same worktree, before the queue runs.
	next := f.work("w1", map[string]string{"b.txt": "next issue\n"})
	is.Equal(next.Dir, req.Dir)

	res, err := q.Integrate(ctx, Request{Worker: "w1", Issue: "is-1", Commit: commit})
	is.NoErr(err)
	is.True(res.Integrated)
	is.True(verifiedIn != "" && verifiedIn != req.Dir)
	sh(t, f.repo, "git", "cat-file", "-e", "main:a.txt")
	sh(t, f.repo, "git", "cat-file", "-e", "main:left.txt")
	if _, err := exec.Command("git", "-C", f.repo, "cat-file", "-e", "main:b.txt").CombinedOutput(); err == nil {
		t.Fatal("the worker's next issue reached the target with the work handed over before it")
	}
	is.Equal(sh(t, req.Dir, "git", "rev-parse", "HEAD"), sh(t, req.Dir, "git", "rev-parse", "refs/heads/"+next.Branch)) // the worker's worktree is untouched
	f.clean()
	is.NoErr(q.RemoveTree(ctx))
	left, err := git.List(ctx, f.repo)
	is.NoErr(err)
	is.Equal(len(left), 2) // main and the worker's
}

// TestIntegrateRefusesNonCommit: a request's commit must be a commit id.
func TestIntegrateRefusesNonCommit(t *testing.T) {
	f := newRepo(t)
	q := &Queue{Repo: f.repo, Target: "main"}
	for _, c := range []string{"main", "--upload-pack=x", "HEAD~1"} {
		if _, err := q.Integrate(context.Background(), Request{Worker: "w1", Issue: "is-1", Commit: c}); err == nil {
			t.Errorf("Integrate took %q as the work", c)
		}
	}
}

// TestHandChecked: a request whose refs the caller has just checked
// (Checked) is handed over at Tip without another look, even when the
// branch moves after the check: the work is the commit checked, not what
// the branch names now. With changes left to commit, which go wherever
// HEAD points, Hand looks again: a HEAD moved to another branch is put
// back and reported, and the leftovers land on the worker's branch.
func TestHandChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		left  bool // the worker left a change uncommitted
		moves bool // a HEAD move is reported
	}{
		{"nothing left", false, false},
		{"leftovers", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			var moves []git.Move
			q := &Queue{Repo: f.repo, Target: "main", Moved: func(m git.Move) { moves = append(moves, m) }}
			req := f.work("w1", map[string]string{"a.txt": "a\n"})
			req.Tip = sh(t, req.Dir, "git", "rev-parse", "HEAD")
			req.Checked = true
			// After the check: another agent points the worker's HEAD
			// at a branch of its own, at the same commit.
			sh(t, req.Dir, "git", "branch", "other", req.Tip)
			sh(t, req.Dir, "git", "symbolic-ref", "HEAD", "refs/heads/other")
			if tc.left {
				write(t, filepath.Join(req.Dir, "left.txt"), "uncommitted\n")
			}
			commit, err := q.Hand(ctx, req)
			is.NoErr(err)
			is.Equal(len(moves) > 0, tc.moves)
			if !tc.left {
				is.Equal(commit, req.Tip) // the commit checked
				return
			}
			is.Equal(sh(t, req.Dir, "git", "symbolic-ref", "HEAD"), "refs/heads/"+req.Branch) // put back
			is.Equal(sh(t, f.repo, "git", "rev-parse", "refs/heads/"+req.Branch), commit)
			is.Equal(sh(t, f.repo, "git", "rev-parse", commit+"^"), req.Tip) // the leftovers, on the work
			sh(t, f.repo, "git", "cat-file", "-e", commit+":left.txt")
			is.Equal(sh(t, f.repo, "git", "rev-parse", "other"), req.Tip) // not on the other branch
		})
	}
}

// TestRecoverUnfinishedTreeAdd: a kill mid `git worktree add` of the
// queue's worktree can leave it registered and locked, with a .git file
// git does not take for one, which `git worktree remove --force --force`
// refuses. Recover forgets it anyway, and the next integration makes the
// worktree afresh.
func TestRecoverUnfinishedTreeAdd(t *testing.T) {
	for _, tc := range []struct {
		name string
		git  string // what the worktree's .git holds
	}{
		{"empty .git", ""},
		{"garbage .git", "not a gitdir line\n"},
		{"no .git", "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			tree := filepath.Join(t.TempDir(), "mergeq")
			q := &Queue{Repo: f.repo, Target: "main", Tree: tree}
			sh(t, f.repo, "git", "worktree", "add", "-q", "--detach", tree, "main")
			sh(t, f.repo, "git", "worktree", "lock", "--reason", "initializing", tree)
			if tc.git == "-" {
				is.NoErr(os.Remove(filepath.Join(tree, ".git")))
			} else {
				write(t, filepath.Join(tree, ".git"), tc.git)
			}
			_, err := q.Recover(ctx)
			is.NoErr(err)
			is.True(!strings.Contains(sh(t, f.repo, "git", "worktree", "list", "--porcelain"), tree)) // forgotten
			if _, err := os.Stat(tree); !os.IsNotExist(err) {
				t.Fatalf("the worktree's directory is still there: %v", err)
			}
			req := f.work("w1", map[string]string{"a.txt": "a\n"})
			res, err := q.Integrate(ctx, req)
			is.NoErr(err)
			is.True(res.Integrated)
		})
	}
}

package git

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository with one commit, a tracked file under .beads/
// and a file staged by the user.
func newRepo(t *testing.T) (string, Repo) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("GIT_AUTHOR_NAME", "T")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@x")
	t.Setenv("GIT_COMMITTER_NAME", "T")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@x")
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a.txt", "one\n")
	write(t, dir, ".beads/issues.jsonl", "v1\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "base")
	return dir, Repo{Dir: dir}
}

func TestSignals(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, r := newRepo(t)
	head, err := r.Head(ctx)
	is.NoErr(err)
	is.Equal(head, git(t, dir, "rev-parse", "HEAD"))
	branch, err := r.Branch(ctx)
	is.NoErr(err)
	is.Equal(branch, "main")

	clean, err := r.DiffHash(ctx)
	is.NoErr(err)
	dirty, err := r.Dirty(ctx)
	is.NoErr(err)
	is.True(!dirty)

	write(t, dir, ".beads/issues.jsonl", "v2\n") // bd's own writes are not work
	h, err := r.DiffHash(ctx)
	is.NoErr(err)
	is.Equal(h, clean)
	dirty, _ = r.Dirty(ctx)
	is.True(!dirty)

	write(t, dir, "a.txt", "two\n")
	h2, err := r.DiffHash(ctx)
	is.NoErr(err)
	is.True(h2 != clean) // a tracked edit changes the hash

	write(t, dir, "new/b.txt", "x\n")
	h3, err := r.DiffHash(ctx)
	is.NoErr(err)
	is.True(h3 != h2) // so does an untracked file
	write(t, dir, "new/b.txt", "y\n")
	h4, _ := r.DiffHash(ctx)
	is.True(h4 != h3) // and its content

	changed, err := r.Changed(ctx)
	is.NoErr(err)
	is.Equal(changed, []string{"a.txt", "new/b.txt"})
}

func TestFailureBranch(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, r := newRepo(t)
	base, _ := r.Head(ctx)

	// The agent committed once, then left more work uncommitted.
	write(t, dir, "a.txt", "committed work\n")
	git(t, dir, "commit", "-qam", "agent commit")
	write(t, dir, "a.txt", "uncommitted work\n")
	write(t, dir, "new.txt", "untracked work\n")
	write(t, dir, ".beads/issues.jsonl", "tracker moved on\n")

	sha, err := r.FailureBranch(ctx, "wip/ralph-fail-t-a-20260101-000000", "ralphd: keep the work on t-a", base)
	is.NoErr(err)
	is.True(sha != "")

	// The branch holds all of it...
	is.Equal(git(t, dir, "show", "wip/ralph-fail-t-a-20260101-000000:a.txt"), "uncommitted work")
	is.Equal(git(t, dir, "show", "wip/ralph-fail-t-a-20260101-000000:new.txt"), "untracked work")
	is.Equal(git(t, dir, "log", "-1", "--format=%s", "wip/ralph-fail-t-a-20260101-000000"), "ralphd: keep the work on t-a")
	is.Equal(git(t, dir, "rev-parse", "wip/ralph-fail-t-a-20260101-000000~1~1"), base)
	// ...and the working branch is back at base, with .beads/ untouched.
	is.Equal(git(t, dir, "rev-parse", "HEAD"), base)
	is.Equal(git(t, dir, "symbolic-ref", "--short", "HEAD"), "main")
	b, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	is.Equal(string(b), "one\n")
	_, err = os.Stat(filepath.Join(dir, "new.txt"))
	is.True(os.IsNotExist(err))
	b, _ = os.ReadFile(filepath.Join(dir, ".beads/issues.jsonl"))
	is.Equal(string(b), "tracker moved on\n")
}

func TestFailureBranchNothingToKeep(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	_, r := newRepo(t)
	base, _ := r.Head(ctx)
	sha, err := r.FailureBranch(ctx, "wip/x", "m", base)
	is.NoErr(err)
	is.Equal(sha, "") // no work, no branch
}

func TestParsePorcelain(t *testing.T) {
	is := is.New(t)
	out := []byte(" M a.txt\x00?? new dir/b c.txt\x00R  renamed.txt\x00old.txt\x00A  added.go\x00")
	is.Equal(parsePorcelain(out), []string{"a.txt", "new dir/b c.txt", "renamed.txt", "added.go"}) // the rename's source is not listed
	is.Equal(len(parsePorcelain(nil)), 0)
}

func FuzzParsePorcelain(f *testing.F) {
	f.Add([]byte(" M a.txt\x00?? b\x00R  c\x00d\x00"))
	f.Add([]byte("R  \x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, p := range parsePorcelain(out) {
			if bytes.IndexByte([]byte(p), 0) >= 0 {
				t.Fatalf("path %q holds a NUL", p)
			}
		}
	})
}

func TestFreeBranchName(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, r := newRepo(t)
	name, err := r.FreeBranchName(ctx, "wip/ralph-fail-t-a-20260101-000000")
	is.NoErr(err)
	is.Equal(name, "wip/ralph-fail-t-a-20260101-000000") // free as it is
	git(t, dir, "branch", name)
	git(t, dir, "branch", name+"-2")
	again, err := r.FreeBranchName(ctx, name)
	is.NoErr(err)
	is.Equal(again, name+"-3") // the same second again: a suffix, not a clash
}

// DiffHash is Status's Diff alone.
func (r Repo) DiffHash(ctx context.Context) (string, error) {
	st, err := r.Status(ctx)
	return st.Diff, err
}

// Branch returns the current branch name, or "" on a detached HEAD.
func (r Repo) Branch(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// TestGitDirs: Layout and CommonDir find the work tree's git dir and
// git's common dir, in the main work tree and in a linked one.
func TestGitDirs(t *testing.T) {
	is := is.New(t)
	dir, r := newRepo(t)
	dir, _ = filepath.EvalSymlinks(dir)
	l, err := r.Layout(t.Context(), "")
	is.NoErr(err)
	is.Equal(l.GitDir, filepath.Join(dir, ".git"))
	is.Equal(l.CommonDir, filepath.Join(dir, ".git"))
	common, err := CommonDir(t.Context(), dir)
	is.NoErr(err)
	is.Equal(common, filepath.Join(dir, ".git"))

	linked := filepath.Join(t.TempDir(), "linked")
	git(t, dir, "worktree", "add", "-q", linked)
	l, err = Repo{Dir: linked}.Layout(t.Context(), "")
	is.NoErr(err)
	is.Equal(l.GitDir, filepath.Join(dir, ".git", "worktrees", "linked")) // the linked worktree's own git dir
	is.Equal(l.CommonDir, filepath.Join(dir, ".git"))                     // the main repository's
	common, err = CommonDir(t.Context(), linked)
	is.NoErr(err)
	is.Equal(common, filepath.Join(dir, ".git")) // the main repository's
}

func TestLayout(t *testing.T) {
	is := is.New(t)
	dir, r := newRepo(t)
	dir, _ = filepath.EvalSymlinks(dir)
	head := git(t, dir, "rev-parse", "HEAD")

	l, err := r.Layout(t.Context(), ".ralph")
	is.NoErr(err)
	is.Equal(l, Layout{GitDir: filepath.Join(dir, ".git"), CommonDir: filepath.Join(dir, ".git"), Head: head}) // no .ralph at HEAD

	write(t, dir, ".ralph/config.toml", "x = 1\n")
	git(t, dir, "add", ".ralph")
	git(t, dir, "commit", "-qm", "ralph")
	head = git(t, dir, "rev-parse", "HEAD")
	// A file named like the revision is no revision: the answer stays.
	write(t, dir, "HEAD:.ralph", "planted\n")
	write(t, dir, "HEAD", "planted\n")
	l, err = r.Layout(t.Context(), ".ralph")
	is.NoErr(err)
	is.Equal(l.Head, head)
	is.Equal(l.Tree, git(t, dir, "rev-parse", "HEAD:.ralph"))

	l, err = r.Layout(t.Context(), "")
	is.NoErr(err)
	is.Equal(l.Tree, "") // not asked for
	is.Equal(l.Head, head)

	empty := t.TempDir()
	git(t, empty, "init", "-q")
	l, err = Repo{Dir: empty}.Layout(t.Context(), ".ralph")
	is.NoErr(err)
	is.Equal(l.Head, "") // no commits: neither HEAD nor HEAD:.ralph
	is.Equal(l.Tree, "")
	is.True(filepath.IsAbs(l.GitDir))

	_, err = Repo{Dir: t.TempDir()}.Layout(t.Context(), ".ralph")
	is.True(err != nil) // not a repository
	is.NoErr(os.Remove(filepath.Join(dir, "HEAD")))
}

func TestParseLayout(t *testing.T) {
	oid := strings.Repeat("b", 40)
	cases := []struct {
		in      string
		withSub bool
		want    Layout
		bad     bool
	}{
		{"/g\n/c\n", true, Layout{GitDir: "/g", CommonDir: "/c"}, false},
		{"/g\n/c\n" + oid + "\n", true, Layout{GitDir: "/g", CommonDir: "/c", Head: oid}, false},
		{"/g\n/c\n" + oid + "\n" + oid + "\n", true, Layout{GitDir: "/g", CommonDir: "/c", Head: oid, Tree: oid}, false},
		{"/g\n/c\n" + oid + "\n" + oid + "\n", false, Layout{}, true}, // a line too many
		{"/g\n", true, Layout{}, true},
		{"g\n/c\n", true, Layout{}, true},
		{"/g\n/c\nHEAD\n", true, Layout{}, true},
		{"", false, Layout{}, true},
	}
	for _, c := range cases {
		is := is.New(t)
		got, err := parseLayout(c.in, c.withSub)
		is.Equal(err != nil, c.bad)
		is.Equal(got, c.want)
	}
}

func FuzzParseLayout(f *testing.F) {
	f.Add("/g\n/c\n", true)
	f.Add("/g\n/c\n"+strings.Repeat("0", 40)+"\n", false)
	f.Fuzz(func(t *testing.T, out string, withSub bool) {
		l, err := parseLayout(out, withSub)
		if err != nil {
			return
		}
		if !filepath.IsAbs(l.GitDir) || !filepath.IsAbs(l.CommonDir) {
			t.Fatalf("relative dirs: %+v", l)
		}
		if l.Tree != "" && l.Head == "" {
			t.Fatalf("a tree without HEAD: %+v", l)
		}
	})
}

// TestWorkTreeID: the id names the work tree's content as `git add -A`
// would stage it: the same for the same tree, whatever the index holds;
// another after any tracked or untracked change; the same after a change
// to an ignored file or under .beads/ (the tracker's).
func TestWorkTreeID(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		same   bool
	}{
		{"nothing", func(*testing.T, string) {}, true},
		{"staged, same content", func(t *testing.T, dir string) { git(t, dir, "add", "-A") }, true},
		{"a tracked file edited", func(t *testing.T, dir string) { write(t, dir, "a.txt", "two\n") }, false},
		{"a tracked file removed", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "a.txt")) }, false},
		{"an untracked file", func(t *testing.T, dir string) { write(t, dir, "new/b.txt", "b\n") }, false},
		{"an untracked file edited", func(t *testing.T, dir string) { write(t, dir, "wip.txt", "more\n") }, false},
		{"an ignored file", func(t *testing.T, dir string) { write(t, dir, "build.log", "x\n") }, true},
		{"the tracker", func(t *testing.T, dir string) { write(t, dir, ".beads/issues.jsonl", "v2\n") }, true},
		{"the mode", func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "a.txt"), 0o755) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, r := newRepo(t)
			write(t, dir, ".gitignore", "*.log\n")
			write(t, dir, "wip.txt", "started\n")
			before, err := r.WorkTreeID(ctx)
			if err != nil || before == "" {
				t.Fatalf("%q, %v", before, err)
			}
			tc.change(t, dir)
			after, err := r.WorkTreeID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if (after == before) != tc.same {
				t.Errorf("the id is the same: %v, want %v", after == before, tc.same)
			}
			// The user's index is not touched: what was untracked stays so.
			if st := git(t, dir, "status", "--porcelain"); tc.name != "staged, same content" && !strings.Contains(st, "?? wip.txt") {
				t.Errorf("WorkTreeID staged files in the user's index: %q", st)
			}
		})
	}
}

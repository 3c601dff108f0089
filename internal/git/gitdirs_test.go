package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

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

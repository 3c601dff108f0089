package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// oldDiffHash is the hash as ralphd computed it before Status, with one
// plain git call per untracked file: Status must give the same.
func oldDiffHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	h.Write([]byte(git(t, dir, "diff", "--binary", "HEAD", "--", ".", ":(exclude).beads") + "\n"))
	for _, p := range strings.Split(git(t, dir, "ls-files", "-z", "--others", "--exclude-standard", "--", ".", ":(exclude).beads"), "\x00") {
		if p != "" {
			fmt.Fprintf(h, "%s %s\n", p, git(t, dir, "hash-object", "--no-filters", "--", p))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func TestStatus(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, r := newRepo(t)

	st, err := r.Status(ctx)
	is.NoErr(err)
	is.Equal(st.Head, git(t, dir, "rev-parse", "HEAD"))
	is.Equal(len(st.Changed), 0)
	clean := st.Diff

	write(t, dir, "a.txt", "two\n")
	write(t, dir, "new dir/b c.txt", "x\n")
	write(t, dir, ".beads/issues.jsonl", "v2\n") // not work
	st, err = r.Status(ctx)
	is.NoErr(err)
	is.Equal(st.Changed, []string{"a.txt", "new dir/b c.txt"})
	is.True(st.Diff != clean)
	is.Equal(st.Diff, oldDiffHash(t, dir)) // the same hash as diff, ls-files and hash-object give

	is.NoErr(os.Symlink("a.txt", filepath.Join(dir, "link")))
	withLink, err := r.Status(ctx)
	is.NoErr(err)
	is.Equal(withLink.Changed, []string{"a.txt", "link", "new dir/b c.txt"})
	is.True(withLink.Diff != st.Diff) // a new symlink is a change
	st = withLink

	git(t, dir, "add", "a.txt")
	staged, err := r.Status(ctx)
	is.NoErr(err)
	is.Equal(staged.Diff, st.Diff) // staging is not a change of the work

	write(t, dir, "long.txt", strings.Repeat("a line that stays\n", 20))
	git(t, dir, "add", "long.txt")
	git(t, dir, "commit", "-qm", "long")
	git(t, dir, "mv", "long.txt", "renamed.txt")
	st, err = r.Status(ctx)
	is.NoErr(err)
	is.Equal(st.Changed, []string{"renamed.txt", "link", "new dir/b c.txt"}) // a rename's new path only
}

// A repository without commits has no HEAD; its staged files are the work.
func TestStatusWithoutCommits(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	r := Repo{Dir: dir}
	st, err := r.Status(context.Background())
	is.NoErr(err)
	is.Equal(st.Head, "")
	write(t, dir, "a.txt", "one\n")
	git(t, dir, "add", "a.txt")
	staged, err := r.Status(context.Background())
	is.NoErr(err)
	is.Equal(staged.Changed, []string{"a.txt"})
	is.True(staged.Diff != st.Diff)
}

// A FIFO or a device left among the untracked files is not read: Status
// neither blocks on it nor reads forever. (git does not list a FIFO; a
// symlink to a device it does, and one can be swapped in after the look.)
func TestStatusDoesNotReadSpecialFiles(t *testing.T) {
	is := is.New(t)
	dir, r := newRepo(t)
	before, err := r.Status(context.Background())
	is.NoErr(err)
	is.NoErr(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	is.NoErr(os.Symlink("/dev/zero", filepath.Join(dir, "zero")))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := r.Status(ctx)
	is.NoErr(err)
	is.NoErr(ctx.Err()) // it returned on its own: `git hash-object zero` never does
	is.Equal(st.Changed, []string{"zero"})
	is.True(st.Diff != before.Diff)
	_, err = blobID(filepath.Join(dir, "fifo"))
	is.True(err != nil) // refused, not read
}

func TestParseStatusV2(t *testing.T) {
	oid := strings.Repeat("a", 40)
	cases := []struct {
		name string
		in   string
		want statusV2
	}{
		{"empty", "", statusV2{}},
		{"clean", "# branch.oid " + oid + "\x00# branch.head main\x00", statusV2{head: oid}},
		{"initial", "# branch.oid (initial)\x00# branch.head main\x00? a\x00", statusV2{changed: []string{"a"}, untracked: []string{"a"}}},
		{"changed", "1 .M N... 100644 100644 100644 " + oid + " " + oid + " dir/a b.txt\x00", statusV2{changed: []string{"dir/a b.txt"}, tracked: true}},
		{"rename", "2 R. N... 100644 100644 100644 " + oid + " " + oid + " R100 new name\x00old name\x00? u\x00",
			statusV2{changed: []string{"new name", "u"}, tracked: true, untracked: []string{"u"}}},
		{"unmerged", "u UU N... 100644 100644 100644 100644 " + oid + " " + oid + " " + oid + " c.txt\x00", statusV2{changed: []string{"c.txt"}, tracked: true}},
		{"short records", "1 .M\x002\x00u x\x00?\x00? \x00", statusV2{}},
		{"bad oid", "# branch.oid zz\x00", statusV2{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is.New(t).Equal(parseStatusV2([]byte(c.in)), c.want)
		})
	}
}

func FuzzParseStatusV2(f *testing.F) {
	f.Add([]byte("# branch.oid (initial)\x00? a\x00"))
	f.Add([]byte("2 R. N... 1 1 1 a b R1 x y\x00z\x00"))
	f.Add([]byte("u \x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		st := parseStatusV2(out)
		if len(st.untracked) > len(st.changed) {
			t.Fatalf("more untracked paths than changed ones: %+v", st)
		}
		for _, p := range st.changed {
			if p == "" || strings.IndexByte(p, 0) >= 0 {
				t.Fatalf("path %q is empty or holds a NUL", p)
			}
		}
		if st.head != "" && !IsHash(st.head) {
			t.Fatalf("head %q is not an object id", st.head)
		}
	})
}

package git

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

// nobody is the user the permission tests run as when the tests run as
// root, who may list any directory.
const nobody = 65534

// TestUnlistableDirs: an agent makes a directory where git looks
// unlistable (chmod 000, or 300: git still opens a path it knows there,
// a FIFO included). Scrub makes it listable and removes the FIFO in it,
// instead of failing, which would stop every worker; ScrubTree skips an
// unlistable directory of the work tree, whose .gitignore git cannot
// read either.
func TestUnlistableDirs(t *testing.T) {
	if os.Getenv("GITSCRUB_UNLISTABLE") == "" && os.Geteuid() == 0 {
		asNobody(t, "TestUnlistableDirs")
		return
	}
	is := is.New(t)
	r := newScrubRepo(t)
	locked := filepath.Join(r.common, "refs", "heads", "locked")
	is.NoErr(os.Mkdir(locked, 0o755))
	mkfifo(t, filepath.Join(locked, "x"))
	is.NoErr(os.Chmod(locked, 0o300))
	closed := filepath.Join(r.common, "logs", "closed")
	is.NoErr(os.Mkdir(closed, 0o000))

	found, err := r.scrub().Scrub(r.dir, r.tree)
	is.NoErr(err)
	var what []string
	for _, p := range found {
		is.NoErr(p.Err)
		what = append(what, p.Path+": "+p.What)
	}
	is.Equal(what, []string{
		closed + ": a directory ralphd may not list",
		locked + ": a directory ralphd may not list",
		filepath.Join(locked, "x") + ": a FIFO",
	})
	r.usable(t)

	hidden := filepath.Join(r.tree, "hidden")
	is.NoErr(os.Mkdir(hidden, 0o755))
	mkfifo(t, filepath.Join(hidden, ".gitignore"))
	is.NoErr(os.Chmod(hidden, 0o300))
	found, err = ScrubTree(r.tree)
	is.NoErr(err)
	is.Equal(len(found), 0)
	scrubGit(t, r.tree, "status", "--porcelain") // git skips it too
	is.NoErr(os.Chmod(hidden, 0o755))            // for the test's cleanup
}

// asNobody runs the test named run again, as the user nobody, in a copy
// of the test binary that user may run, and fails t if it fails.
func asNobody(t *testing.T, run string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gitscrub-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, d := range []string{dir, filepath.Join(dir, "tmp"), filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gitscrub.test")
	copyFile(t, self, bin)
	cmd := exec.Command(bin, "-test.run=^"+run+"$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GITSCRUB_UNLISTABLE=1", "TMPDIR="+filepath.Join(dir, "tmp"), "HOME="+filepath.Join(dir, "home"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

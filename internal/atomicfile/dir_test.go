package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// userFiles makes a directory of "the person's" with a canary file in it,
// and returns the directory and the canary's path.
func userFiles(t *testing.T) (dir, canary string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "user")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	canary = filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(canary, []byte("canary\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, canary
}

// assertCanary fails unless the person's directory holds exactly the
// canary, as it was.
func assertCanary(t *testing.T, dir, canary string) {
	t.Helper()
	data, err := os.ReadFile(canary)
	if err != nil || string(data) != "canary\n" {
		t.Errorf("canary changed: %q, %v", data, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("person's directory holds %v, want only the canary", names)
	}
}

// plant is something put in the place of ralphd's file or directory.
type plant struct {
	name string
	// make puts it at path; dir and canary are the person's.
	make func(t *testing.T, path, dir, canary string)
	// what is a word the error must say.
	what string
}

var plants = []plant{
	{"symlink to a directory", func(t *testing.T, path, dir, _ string) { must(t, os.Symlink(dir, path)) }, "symlink"},
	{"symlink to a file", func(t *testing.T, path, _, canary string) { must(t, os.Symlink(canary, path)) }, "symlink"},
	{"fifo", func(t *testing.T, path, _, _ string) { must(t, syscall.Mkfifo(path, 0o600)) }, "FIFO"},
	{"hard link", func(t *testing.T, path, _, canary string) { must(t, os.Link(canary, path)) }, "hard link"},
	{"directory", func(t *testing.T, path, _, _ string) { must(t, os.Mkdir(path, 0o700)) }, "directory"},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// withTimeout fails the test if f blocks: a FIFO must never hang an
// operation.
func withTimeout(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked")
	}
}

// TestDirRefusesPlantedFiles plants each kind of foreign thing where one
// of ralphd's files should be, and runs each operation on it: none
// touches the person's files, none blocks, and each says what it found.
func TestDirRefusesPlantedFiles(t *testing.T) {
	ops := []struct {
		name string
		run  func(d *Dir) error // on "sub/f" in d
	}{
		{"read", func(d *Dir) error { _, err := d.ReadFile("sub/f", 1<<20); return err }},
		{"open append", func(d *Dir) error {
			f, err := d.OpenFile("sub/f", os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil {
				_, _ = f.WriteString("ralphd's line\n")
				_ = f.Close()
			}
			return err
		}},
		{"write", func(d *Dir) error { return d.WriteFile("sub/f", []byte("ralphd's record\n"), 0o600) }},
		{"remove", func(d *Dir) error { return d.Remove("sub/f") }},
		{"check", func(d *Dir) error { return d.Check("sub/f") }},
	}
	for _, op := range ops {
		for _, p := range plants {
			t.Run(op.name+"/"+p.name, func(t *testing.T) {
				is := is.New(t)
				udir, canary := userFiles(t)
				root := t.TempDir()
				must(t, os.Mkdir(filepath.Join(root, "sub"), 0o700))
				path := filepath.Join(root, "sub", "f")
				p.make(t, path, udir, canary)
				d, err := OpenDir(root)
				is.NoErr(err)
				defer d.Close()
				var opErr error
				withTimeout(t, func() { opErr = op.run(d) })
				is.True(opErr != nil)                            // a foreign file is reported
				is.True(IsForeign(opErr))                        // as foreign
				is.True(strings.Contains(opErr.Error(), p.what)) // saying what it is
				is.True(strings.Contains(opErr.Error(), path))   // and where
				assertCanary(t, udir, canary)
				_, err = os.Lstat(path)
				is.NoErr(err) // the planted thing is left where it is
			})
		}
	}
}

// TestDirRefusesPlantedDirectories plants each kind of foreign thing where
// one of ralphd's directories should be, and reaches a file through it.
func TestDirRefusesPlantedDirectories(t *testing.T) {
	ops := []struct {
		name string
		run  func(d *Dir) error
	}{
		{"read", func(d *Dir) error { _, err := d.ReadFile("sub/id_ed25519", 1<<20); return err }},
		{"write", func(d *Dir) error { return d.WriteFile("sub/id_ed25519", []byte("x"), 0o600) }},
		{"remove", func(d *Dir) error { return d.Remove("sub/id_ed25519") }},
		{"remove all", func(d *Dir) error { return d.RemoveAll("sub/id_ed25519") }},
		{"list", func(d *Dir) error { _, err := d.ReadDir("sub"); return err }},
		{"make dir", func(d *Dir) error { _, err := d.MakeDir("sub", 0o700); return err }},
		{"make dir below", func(d *Dir) error { _, err := d.MakeDir("sub/x", 0o700); return err }},
		{"rename into", func(d *Dir) error {
			_ = os.WriteFile(d.Join("mine"), []byte("x"), 0o600)
			return d.Rename("mine", "sub/mine")
		}},
		{"symlink into", func(d *Dir) error { return d.Symlink("x", "sub/l") }},
	}
	dirPlants := []plant{plants[0], plants[2], plants[3]} // symlink to dir, FIFO, a file
	dirPlants[2].what = "regular file"
	for _, op := range ops {
		for _, p := range dirPlants {
			t.Run(op.name+"/"+p.name, func(t *testing.T) {
				is := is.New(t)
				udir, canary := userFiles(t)
				root := t.TempDir()
				path := filepath.Join(root, "sub")
				p.make(t, path, udir, canary)
				d, err := OpenDir(root)
				is.NoErr(err)
				defer d.Close()
				var opErr error
				withTimeout(t, func() { opErr = op.run(d) })
				is.True(opErr != nil) // reaching through a foreign directory fails
				is.True(IsForeign(opErr) || errors.Is(opErr, syscall.ENOTDIR))
				assertCanary(t, udir, canary)
			})
		}
	}
}

// TestDirMoveAsideThenWrite checks that the person's file keeps its
// content when ralphd moves a hard link to it aside and writes its own
// file: a rename moves a name, never a file's bytes.
func TestDirMoveAsideThenWrite(t *testing.T) {
	is := is.New(t)
	udir, canary := userFiles(t)
	root := t.TempDir()
	must(t, os.Link(canary, filepath.Join(root, "f")))
	d, err := OpenDir(root)
	is.NoErr(err)
	defer d.Close()
	err = d.WriteFile("f", []byte("ralphd"), 0o600)
	is.True(errors.Is(err, ErrHardLink)) // refused before anything is written
	is.NoErr(d.Rename("f", "f.corrupt"))
	is.NoErr(d.WriteFile("f", []byte("ralphd"), 0o600))
	got, err := d.ReadFile("f", 100)
	is.NoErr(err)
	is.Equal(string(got), "ralphd")
	assertCanary(t, udir, canary)
}

func TestDirRenameNoReplace(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "b"), []byte("b"), 0o600))
	d, err := OpenDir(root)
	is.NoErr(err)
	defer d.Close()
	err = d.Rename("a", "b")
	is.True(errors.Is(err, fs.ErrExist)) // never replaces
	got, _ := os.ReadFile(filepath.Join(root, "b"))
	is.Equal(string(got), "b")
}

func TestOpenDirRefusesLink(t *testing.T) {
	is := is.New(t)
	udir, canary := userFiles(t)
	link := filepath.Join(t.TempDir(), "state")
	must(t, os.Symlink(udir, link))
	_, err := OpenDir(link)
	is.True(errors.Is(err, ErrNotDir))                   // a link is not ralphd's directory
	is.True(strings.Contains(err.Error(), "symlink to")) // says what it is
	is.True(strings.Contains(err.Error(), udir))         // and where it leads
	_, err = MakeDirAll(link, 0o700)
	is.True(errors.Is(err, ErrNotDir)) // nor when making it
	assertCanary(t, udir, canary)
}

// TestDirRoundTrip exercises the ordinary operations on ralphd's own files.
func TestDirRoundTrip(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	d, err := MakeDirAll(filepath.Join(root, "a", "b"), 0o700)
	is.NoErr(err)
	defer d.Close()
	sub, err := d.MakeDir("x/y", 0o700)
	is.NoErr(err)
	is.NoErr(sub.Close())
	is.NoErr(d.WriteFile("x/y/f", []byte("one"), 0o640))
	is.NoErr(d.WriteFile("x/y/f", []byte("two"), 0o600))
	got, err := d.ReadFile("x/y/f", 10)
	is.NoErr(err)
	is.Equal(string(got), "two")
	fi, err := d.Lstat("x/y/f")
	is.NoErr(err)
	is.Equal(fi.Mode(), fs.FileMode(0o600))
	is.Equal(fi.Size(), int64(3))
	es, err := d.ReadDir("x/y")
	is.NoErr(err)
	is.Equal(len(es), 1) // no temp file left
	is.Equal(es[0].Name(), "f")
	f, err := d.OpenFile("x/y/g", os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	is.NoErr(err)
	_, err = f.WriteString("line\n")
	is.NoErr(err)
	is.NoErr(f.Close())
	is.NoErr(d.Remove("x/y/f"))
	is.True(errors.Is(d.Check("x/y/f"), fs.ErrNotExist))
	is.NoErr(d.Check("x/y/g"))
	is.NoErr(d.Symlink("g", "x/y/l"))
	target, err := d.Readlink("x/y/l")
	is.NoErr(err)
	is.Equal(target, "g")
	is.NoErr(d.RemoveAll("x"))
	es, err = d.ReadDir(".")
	is.NoErr(err)
	is.Equal(len(es), 0)
	_, err = d.OpenFile("f", os.O_RDWR|os.O_TRUNC, 0)
	is.True(err != nil) // O_TRUNC would cut a file before it is checked
}

// TestDirRemoveAllStaysInside removes a tree holding a link to the
// person's directory: the link goes, what it points to stays.
func TestDirRemoveAllStaysInside(t *testing.T) {
	is := is.New(t)
	udir, canary := userFiles(t)
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "t", "u"), 0o700))
	must(t, os.Symlink(udir, filepath.Join(root, "t", "u", "l")))
	must(t, os.Link(canary, filepath.Join(root, "t", "hl")))
	d, err := OpenDir(root)
	is.NoErr(err)
	defer d.Close()
	is.NoErr(d.RemoveAll("t"))
	_, err = os.Lstat(filepath.Join(root, "t"))
	is.True(errors.Is(err, fs.ErrNotExist))
	assertCanary(t, udir, canary)
}

func TestSplitName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"f", true}, {"a/b", true}, {".f", true}, {"..f", true},
		{"", false}, {"/a", false}, {"a/", false}, {"a//b", false}, {".", false},
		{"..", false}, {"a/../b", false}, {"a/./b", false}, {"a\x00b", false},
	} {
		parts, err := SplitName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("SplitName(%q) = %q, %v; want ok %v", tc.name, parts, err, tc.ok)
		}
	}
}

// FuzzSplitName checks that every name SplitName accepts stays below the
// directory: joined and cleaned, it neither climbs out nor is absolute,
// and its parts put back together are the name.
func FuzzSplitName(f *testing.F) {
	for _, s := range []string{"f", "a/b", "../x", "a/../../b", "/etc", ".", "a//b", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		parts, err := SplitName(name)
		if err != nil {
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("error %v does not wrap ErrBadName", err)
			}
			return
		}
		if strings.Join(parts, "/") != name {
			t.Fatalf("parts %q do not make %q", parts, name)
		}
		clean := filepath.Clean(name)
		if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean != name {
			t.Fatalf("accepted %q, which cleans to %q", name, clean)
		}
		for _, p := range parts {
			if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "/\x00") {
				t.Fatalf("accepted part %q of %q", p, name)
			}
		}
	})
}

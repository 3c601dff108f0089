package git

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

func TestRestore(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), ".ralph")
	is.NoErr(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_stuck": 3}`), 0o644))
	is.NoErr(os.WriteFile(filepath.Join(dir, "sub", "PROMPT_build.md"), []byte("build"), 0o644))
	s, err := TakeDir(dir)
	is.NoErr(err)
	ch, err := s.Changed()
	is.NoErr(err)
	is.Equal(len(ch), 0)

	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_stuck": 50}`), 0o644))
	is.NoErr(os.Remove(filepath.Join(dir, "sub", "PROMPT_build.md")))
	is.NoErr(os.WriteFile(filepath.Join(dir, "PROMPT_plan.md"), []byte("plan"), 0o644))
	is.NoErr(os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	ch, err = s.Restore()
	is.NoErr(err)
	is.Equal(ch, []string{"PROMPT_plan.md", "config.json", "link", "sub/PROMPT_build.md"})
	got, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	is.Equal(string(got), `{"max_stuck": 3}`)
	got, _ = os.ReadFile(filepath.Join(dir, "sub", "PROMPT_build.md"))
	is.Equal(string(got), "build")
	_, err = os.Lstat(filepath.Join(dir, "link"))
	is.True(os.IsNotExist(err))
	ch, err = s.Changed()
	is.NoErr(err)
	is.Equal(len(ch), 0)
}

func TestMissingDirIsEmpty(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), ".ralph")
	s, err := TakeDir(dir)
	is.NoErr(err)
	is.NoErr(os.MkdirAll(dir, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644))
	ch, err := s.Restore()
	is.NoErr(err)
	is.Equal(ch, []string{"config.json"})
	_, err = os.Stat(filepath.Join(dir, "config.json"))
	is.True(os.IsNotExist(err))
}

// RestoreDir undoes each kind of replacement: a file replaced by a directory
// comes back, a directory planted where nothing was goes with its
// content, a symlink replaced by a file or pointed elsewhere comes back
// with its target, and a held FIFO replaced by a file cannot be made
// again, so the file goes and the error says so.
func TestRestoreReplacements(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	paths := []string{"config", "link", "link2", "fifo", "planted"}
	is.NoErr(os.WriteFile(filepath.Join(dir, "config"), []byte("held"), 0o600))
	is.NoErr(os.Symlink("config", filepath.Join(dir, "link")))
	is.NoErr(os.Symlink("../shared/hook", filepath.Join(dir, "link2")))
	is.NoErr(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	was := DirFiles{}
	for _, rel := range paths {
		is.NoErr(was.Read(dir, rel))
	}
	is.Equal(len(was), 4) // an absent path is not held

	is.NoErr(os.Remove(filepath.Join(dir, "config")))
	is.NoErr(os.MkdirAll(filepath.Join(dir, "config", "sub"), 0o755))
	is.NoErr(os.MkdirAll(filepath.Join(dir, "planted", "deep"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "planted", "deep", "hook"), []byte("#!/bin/sh"), 0o755))
	is.NoErr(os.Remove(filepath.Join(dir, "link")))
	is.NoErr(os.WriteFile(filepath.Join(dir, "link"), []byte("#!/bin/sh\nevil"), 0o755))
	is.NoErr(os.Remove(filepath.Join(dir, "link2")))
	is.NoErr(os.Symlink("/tmp/evil", filepath.Join(dir, "link2"))) // same mode, other target
	is.NoErr(os.Remove(filepath.Join(dir, "fifo")))
	is.NoErr(os.WriteFile(filepath.Join(dir, "fifo"), []byte("x"), 0o600))

	now := DirFiles{}
	for _, rel := range paths {
		is.NoErr(now.Read(dir, rel))
	}
	changed := ChangedFiles(was, now)
	is.Equal(changed, []string{"config", "fifo", "link", "link2", "planted"})
	err := RestoreDir(dir, was, changed)
	is.True(err != nil) // the FIFO is not made again
	is.True(strings.Contains(err.Error(), "restore fifo: held as p"))

	got, rerr := os.ReadFile(filepath.Join(dir, "config"))
	is.NoErr(rerr)
	is.Equal(string(got), "held")
	fi, serr := os.Stat(filepath.Join(dir, "config"))
	is.NoErr(serr)
	is.Equal(fi.Mode(), os.FileMode(0o600))
	for link, target := range map[string]string{"link": "config", "link2": "../shared/hook"} {
		got, lerr := os.Readlink(filepath.Join(dir, link))
		is.NoErr(lerr)
		is.Equal(got, target)
	}
	for _, gone := range []string{"planted", "fifo"} {
		_, serr = os.Lstat(filepath.Join(dir, gone))
		is.True(os.IsNotExist(serr))
	}
	left, derr := os.ReadDir(dir)
	is.NoErr(derr)
	is.Equal(len(left), 3) // no temp file left behind
	now = DirFiles{}
	for _, rel := range paths {
		is.NoErr(now.Read(dir, rel))
	}
	is.Equal(ChangedFiles(was, now), []string{"fifo"})
}

// A file replaced by a tree of files comes back, and the tree's files,
// which went with it, are no error.
func TestRestoreFileReplacedByTree(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte("held"), 0o644))
	s, err := TakeDir(dir)
	is.NoErr(err)
	is.NoErr(os.Remove(filepath.Join(dir, "config.json")))
	is.NoErr(os.MkdirAll(filepath.Join(dir, "config.json", "sub"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json", "sub", "x"), []byte("planted"), 0o644))
	changed, err := s.Restore()
	is.NoErr(err)
	is.Equal(changed, []string{"config.json", "config.json/sub/x"})
	got, err := os.ReadFile(filepath.Join(dir, "config.json"))
	is.NoErr(err)
	is.Equal(string(got), "held")
}

// A held symlink to a directory elsewhere, replaced by a directory with a
// file of the same name as one there: restoring removes the planted file
// before the link is made again, never the file the link points at.
func TestRestoreNeverReachesThroughARestoredLink(t *testing.T) {
	is := is.New(t)
	dir, outside := t.TempDir(), t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(outside, "keep"), []byte("the user's"), 0o644))
	is.NoErr(os.Symlink(outside, filepath.Join(dir, "link")))
	s, err := TakeDir(dir)
	is.NoErr(err)
	is.NoErr(os.Remove(filepath.Join(dir, "link")))
	is.NoErr(os.Mkdir(filepath.Join(dir, "link"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "link", "keep"), []byte("planted"), 0o644))
	changed, err := s.Restore()
	is.NoErr(err)
	is.Equal(changed, []string{"link", "link/keep"})
	got, err := os.ReadFile(filepath.Join(outside, "keep"))
	is.NoErr(err) // still there
	is.Equal(string(got), "the user's")
	target, err := os.Readlink(filepath.Join(dir, "link"))
	is.NoErr(err)
	is.Equal(target, outside)
}

// ChangedFiles sees content, mode and presence, and nothing else.
func TestChanged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		was, now DirFiles
		want     []string
	}{
		{"same", DirFiles{"a": {Data: []byte("x"), Mode: 0o644}}, DirFiles{"a": {Data: []byte("x"), Mode: 0o644}}, nil},
		{"content", DirFiles{"a": {Data: []byte("x"), Mode: 0o644}}, DirFiles{"a": {Data: []byte("y"), Mode: 0o644}}, []string{"a"}},
		{"mode", DirFiles{"a": {Data: []byte("x"), Mode: 0o644}}, DirFiles{"a": {Data: []byte("x"), Mode: 0o755}}, []string{"a"}},
		{"type", DirFiles{"a": {Mode: 0o644}}, DirFiles{"a": {Mode: os.ModeSymlink | 0o777}}, []string{"a"}},
		{"added and gone", DirFiles{"b": {}}, DirFiles{"a": {}}, []string{"a", "b"}},
		{"both empty", nil, DirFiles{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is.New(t).Equal(ChangedFiles(tc.was, tc.now), tc.want)
		})
	}
}

// FuzzRestore builds a small tree from the input, holds it, changes it
// as the rest of the input says (files, directories and symlinks made,
// replaced and removed at overlapping paths; a symlink may point at a
// directory outside) and restores it: RestoreDir reports no error, nothing
// differs from what was held afterwards, and nothing outside changed.
func FuzzRestore(f *testing.F) {
	f.Add([]byte{0, 0, 'x', 2, 1, 1}, []byte{3, 0, 0, 1, 0, 0, 0, 3, 'y'})
	f.Add([]byte{0, 2, 'a', 2, 5, 3}, []byte{3, 2, 0, 0, 2, 'b', 2, 3, 1, 4, 5, 0})
	f.Add([]byte{}, []byte{1, 1, 0, 0, 3, 'z', 2, 4, 2})
	f.Add([]byte{2, 0, 6}, []byte{1, 0, 0, 0, 1, 'p'}) // a link out, replaced by a tree
	paths := []string{"a", "a/x", "a/x/deep", "b", "b/y", "c"}
	apply := func(dir, outside string, ops []byte) {
		for i := 0; i+2 < len(ops); i += 3 {
			op, p, arg := ops[i]%5, filepath.Join(dir, paths[int(ops[i+1])%len(paths)]), ops[i+2]
			_ = os.MkdirAll(filepath.Dir(p), 0o755) // may fail: a parent is a file
			switch op {
			case 0:
				_ = os.RemoveAll(p)
				_ = os.WriteFile(p, []byte{arg}, 0o644)
			case 1:
				_ = os.RemoveAll(p)
				_ = os.Mkdir(p, 0o755)
			case 2:
				_ = os.RemoveAll(p)
				target := outside
				if int(arg)%(len(paths)+1) < len(paths) {
					target = paths[int(arg)%(len(paths)+1)]
				}
				_ = os.Symlink(target, p)
			case 3:
				_ = os.RemoveAll(p)
			case 4: // files only: a directory without x cannot be read
				if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
					_ = os.Chmod(p, os.FileMode(0o600|int(arg)&0o055))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, build, change []byte) {
		root := t.TempDir()
		dir, outside := filepath.Join(root, "held"), filepath.Join(root, "outside")
		for _, p := range []string{"x", "y", "keep"} {
			if err := os.MkdirAll(filepath.Join(outside, p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, p, "deep"), []byte("outside"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		apply(dir, outside, build)
		s, err := TakeDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		// The change goes through the held tree only: with a link out in
		// place, it could reach outside, which is then held as changed.
		apply(dir, outside, change)
		out, err := TakeDir(outside)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Restore(); err != nil {
			t.Fatalf("restore: %v", err)
		}
		if left, err := s.Changed(); err != nil || len(left) > 0 {
			t.Fatalf("after restore, still changed: %v (%v)", left, err)
		}
		if touched, err := out.Changed(); err != nil || len(touched) > 0 {
			t.Fatalf("restore changed outside: %v (%v)", touched, err)
		}
	})
}

// The held directory itself swapped for a link to one elsewhere: the link
// goes, the held files come back in a real directory, and nothing
// outside is touched.
func TestRestoreRootSwappedForALinkOut(t *testing.T) {
	is := is.New(t)
	root, outside := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, ".ralph")
	is.NoErr(os.MkdirAll(dir, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte("held"), 0o644))
	is.NoErr(os.WriteFile(filepath.Join(outside, "config.json"), []byte("the user's"), 0o644))
	is.NoErr(os.WriteFile(filepath.Join(outside, "victim"), []byte("the user's"), 0o644))
	s, err := TakeDir(dir)
	is.NoErr(err)
	is.NoErr(os.RemoveAll(dir))
	is.NoErr(os.Symlink(outside, dir))
	_, err = s.Restore()
	is.NoErr(err)
	for _, f := range []string{"config.json", "victim"} {
		got, err := os.ReadFile(filepath.Join(outside, f))
		is.NoErr(err)
		is.Equal(string(got), "the user's")
	}
	fi, err := os.Lstat(dir)
	is.NoErr(err)
	is.True(fi.IsDir())
	got, err := os.ReadFile(filepath.Join(dir, "config.json"))
	is.NoErr(err)
	is.Equal(string(got), "held")
}

// TestRestorePastTheBudget: the agent edits a held file and adds a file
// past TakeDir's budget beside it. RestoreDir still runs (it does not read the
// big file): the edit is put back, the big file removed.
func TestRestorePastTheBudget(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), ".ralph")
	is.NoErr(os.MkdirAll(dir, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_stuck": 3}`), 0o644))
	s, err := TakeDir(dir)
	is.NoErr(err)

	is.NoErr(os.WriteFile(filepath.Join(dir, "aaa.bin"), make([]byte, maxBytes+1), 0o644))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_stuck": 50}`), 0o644))
	ch, err := s.Restore()
	is.NoErr(err)
	is.Equal(ch, []string{"aaa.bin", "config.json"})
	got, err := os.ReadFile(filepath.Join(dir, "config.json"))
	is.NoErr(err)
	is.Equal(string(got), `{"max_stuck": 3}`)
	_, err = os.Lstat(filepath.Join(dir, "aaa.bin"))
	is.True(os.IsNotExist(err))
	ch, err = s.Changed()
	is.NoErr(err)
	is.Equal(len(ch), 0)
}

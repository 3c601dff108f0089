package git

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

// TestDirSnapshotNeverFollowsPlants holds a .ralph/ tree, lets an "agent"
// put a link to the user's directory (or a FIFO, or a hard link to the
// user's file) in place of .ralph/ itself, of a directory in it, or of a
// file in it, and restores: the user's directory and canary come out
// untouched, and .ralph/ is as it was held.
func TestDirSnapshotNeverFollowsPlants(t *testing.T) {
	plants := []struct {
		name string
		put  func(p, udir, canary string) error
	}{
		{"symlink to the user's directory", func(p, udir, _ string) error { return os.Symlink(udir, p) }},
		{"symlink to the user's file", func(p, _, canary string) error { return os.Symlink(canary, p) }},
		{"FIFO", func(p, _, _ string) error { return syscall.Mkfifo(p, 0o600) }},
		{"hard link to the user's file", func(p, _, canary string) error { return os.Link(canary, p) }},
	}
	for _, where := range []string{".ralph", ".ralph/sub", ".ralph/sub/id_ed25519", ".ralph/config.toml"} {
		for _, pl := range plants {
			t.Run(where+"/"+pl.name, func(t *testing.T) {
				is := is.New(t)
				udir := filepath.Join(t.TempDir(), "userdir")
				is.NoErr(os.Mkdir(udir, 0o700))
				canary := filepath.Join(udir, "id_ed25519")
				is.NoErr(os.WriteFile(canary, []byte("canary\n"), 0o600))
				tree := t.TempDir()
				ralph := filepath.Join(tree, ".ralph")
				is.NoErr(os.MkdirAll(filepath.Join(ralph, "sub"), 0o755))
				is.NoErr(os.WriteFile(filepath.Join(ralph, "config.toml"), []byte("held\n"), 0o644))
				is.NoErr(os.WriteFile(filepath.Join(ralph, "sub", "id_ed25519"), []byte("ralph's\n"), 0o644))
				snap, err := TakeDir(ralph)
				is.NoErr(err)

				p := filepath.Join(tree, where)
				is.NoErr(os.RemoveAll(p))
				is.NoErr(pl.put(p, udir, canary))
				changed, err := snap.Restore()
				is.NoErr(err)
				is.True(len(changed) > 0) // the plant is reported as a change

				data, err := os.ReadFile(canary)
				is.NoErr(err)
				is.Equal(string(data), "canary\n") // the user's file is untouched
				es, _ := os.ReadDir(udir)
				is.Equal(len(es), 1) // and alone
				fi, err := os.Lstat(ralph)
				is.NoErr(err)
				is.True(fi.IsDir()) // .ralph is a directory again
				got, err := os.ReadFile(filepath.Join(ralph, "sub", "id_ed25519"))
				is.NoErr(err)
				is.Equal(string(got), "ralph's\n") // and holds what was held
				got, err = os.ReadFile(filepath.Join(ralph, "config.toml"))
				is.NoErr(err)
				is.Equal(string(got), "held\n")
			})
		}
	}
}

// TestRestoreDirLinkSwappedIn puts a link to the user's directory in place
// of .ralph/sub after the changes were listed (as a process the agent left
// behind could): restoring a file under it must not write through it.
func TestRestoreDirLinkSwappedIn(t *testing.T) {
	is := is.New(t)
	udir := filepath.Join(t.TempDir(), "userdir")
	is.NoErr(os.Mkdir(udir, 0o700))
	canary := filepath.Join(udir, "id_ed25519")
	is.NoErr(os.WriteFile(canary, []byte("canary\n"), 0o600))
	ralph := filepath.Join(t.TempDir(), ".ralph")
	is.NoErr(os.MkdirAll(filepath.Join(ralph, "sub"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(ralph, "sub", "id_ed25519"), []byte("ralph's\n"), 0o644))
	snap, err := TakeDir(ralph)
	is.NoErr(err)
	is.NoErr(os.RemoveAll(filepath.Join(ralph, "sub")))
	is.NoErr(os.Symlink(udir, filepath.Join(ralph, "sub")))
	err = RestoreDir(ralph, snap.files, []string{"sub/id_ed25519"})
	is.True(err != nil) // the link is in the way, and said to be
	data, rerr := os.ReadFile(canary)
	is.NoErr(rerr)
	is.Equal(string(data), "canary\n") // never written through
}

package logjsonl

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestPruneNeverFollowsPlants plants, among old logs, each kind of thing
// an agent could put where a log or the logs directory should be: log
// retention must leave the user's directory and canary alone, never
// block, and name what it left.
func TestPruneNeverFollowsPlants(t *testing.T) {
	plants := []struct {
		name string
		put  func(t *testing.T, path, udir, canary string) error
	}{
		{"symlink to the user's directory", func(_ *testing.T, p, udir, _ string) error { return os.Symlink(udir, p) }},
		{"symlink to the user's file", func(_ *testing.T, p, _, canary string) error { return os.Symlink(canary, p) }},
		{"FIFO", func(_ *testing.T, p, _, _ string) error { return syscall.Mkfifo(p, 0o600) }},
		{"hard link to the user's file", func(_ *testing.T, p, _, canary string) error { return os.Link(canary, p) }},
	}
	for _, where := range []string{"old log", "logs dir"} {
		for _, pl := range plants {
			t.Run(where+"/"+pl.name, func(t *testing.T) {
				is := is.New(t)
				udir := filepath.Join(t.TempDir(), "userdir")
				is.NoErr(os.Mkdir(udir, 0o700))
				canary := filepath.Join(udir, "2020-01-01T00-00-00.log") // named like a log
				is.NoErr(os.WriteFile(canary, []byte("canary\n"), 0o600))
				logs := filepath.Join(t.TempDir(), "logs")
				is.NoErr(os.Mkdir(logs, 0o700))
				for _, n := range []string{"2025-01-01T00-00-00.log", "2025-01-02T00-00-00.log"} {
					is.NoErr(os.WriteFile(filepath.Join(logs, n), nil, 0o600))
				}
				path := filepath.Join(logs, "2020-01-01T00-00-00.log")
				if where == "logs dir" {
					path = logs
					is.NoErr(os.RemoveAll(logs))
				}
				is.NoErr(pl.put(t, path, udir, canary))
				var err error
				done := make(chan struct{})
				go func() { defer close(done); _, err = Prune(logs, 1, "") }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("retention blocked")
				}
				is.True(err != nil)                          // what was left is reported
				is.True(strings.Contains(err.Error(), path)) // by its path
				data, rerr := os.ReadFile(canary)
				is.NoErr(rerr)
				is.Equal(string(data), "canary\n") // the user's file is untouched
				es, _ := os.ReadDir(udir)
				is.Equal(len(es), 1) // and nothing was added beside it
			})
		}
	}
}

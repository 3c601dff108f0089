package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/judge"
)

// A plant is something an agent puts where ralphd's own file or
// directory should be, to make ralphd read, write or delete one of the
// user's files through it.
type nofollowPlant struct {
	name string
	// put plants it at path; udir is the user's directory and canary the
	// file in it.
	put func(t *testing.T, path, udir, canary string)
	// forDir: it is also foreign where a directory belongs (a directory
	// there is ralphd's own).
	forDir, forFile bool
}

var nofollowPlants = []nofollowPlant{
	{"symlink to the user's directory", func(t *testing.T, p, udir, _ string) { must(t, os.Symlink(udir, p)) }, true, true},
	{"symlink to the user's file", func(t *testing.T, p, _, canary string) { must(t, os.Symlink(canary, p)) }, true, true},
	{"FIFO", func(t *testing.T, p, _, _ string) { must(t, syscall.Mkfifo(p, 0o600)) }, true, true},
	{"hard link to the user's file", func(t *testing.T, p, _, canary string) { must(t, os.Link(canary, p)) }, true, true},
	{"directory", func(t *testing.T, p, _, _ string) { must(t, os.Mkdir(p, 0o700)) }, false, true},
}

// TestStateNeverFollowsPlants runs each kind of state operation after an
// agent planted each kind of foreign thing where the operation's file or
// directory should be. The user's directory and its canary file must come
// out untouched, nothing may block, and ralphd must say (in the error or a
// warning) which path it found what at.
func TestStateNeverFollowsPlants(t *testing.T) {
	fail := func(s *Store) error {
		return s.RecordFailure("bd-1", Judgement{LastError: "x"}, judge.Attempt{Iteration: 1, LastGate: "verify", ExitCode: 1})
	}
	ops := []struct {
		name   string
		target string // where the plant goes, relative to the state dir ("" = project dir)
		dir    bool   // target is a directory
		setup  func(t *testing.T, s *Store)
		run    func(t *testing.T, s *Store) error
	}{
		{name: "write attempts", target: AttemptsFile,
			run: func(t *testing.T, s *Store) error { _, err := s.IncrementAttempt("bd-1"); return err }},
		{name: "write attempt record", target: AttemptsDirName, dir: true,
			setup: func(t *testing.T, s *Store) { _, err := s.IncrementAttempt("bd-1"); must(t, err) },
			run:   func(t *testing.T, s *Store) error { return fail(s) }},
		{name: "write attempt record file", target: "attempts/bd-1.md",
			setup: func(t *testing.T, s *Store) { _, err := s.IncrementAttempt("bd-1"); must(t, err) },
			run:   func(t *testing.T, s *Store) error { return fail(s) }},
		{name: "read attempts", target: "attempts/bd-1.json",
			setup: func(t *testing.T, s *Store) { _, err := s.IncrementAttempt("bd-1"); must(t, err); must(t, fail(s)) },
			run:   func(t *testing.T, s *Store) error { _, err := s.Issue("bd-1"); return err }},
		{name: "read attempts dir", target: AttemptsDirName, dir: true,
			setup: func(t *testing.T, s *Store) { _, err := s.IncrementAttempt("bd-1"); must(t, err); must(t, fail(s)) },
			run:   func(t *testing.T, s *Store) error { _, err := s.Issue("bd-1"); return err }},
		{name: "list and reset", target: AttemptsDirName, dir: true,
			setup: func(t *testing.T, s *Store) { _, err := s.IncrementAttempt("bd-1"); must(t, err) },
			run:   func(t *testing.T, s *Store) error { _, err := s.ResetAll(); return err }},
		{name: "reset one", target: "attempts/bd-1.md",
			setup: func(t *testing.T, s *Store) { _, err := s.IncrementAttempt("bd-1"); must(t, err); must(t, fail(s)) },
			run:   func(t *testing.T, s *Store) error { _, err := s.Reset("bd-1"); return err }},
		{name: "seal and restore", target: AttemptsDirName, dir: true,
			setup: func(t *testing.T, s *Store) {
				_, err := s.IncrementAttempt("bd-1")
				must(t, err)
				must(t, fail(s))
				must(t, s.Seal())
			},
			run: func(t *testing.T, s *Store) error {
				restored, err := s.Unseal()
				// The record is back, in a directory of ralphd's.
				if _, rerr := s.root.ReadFile("attempts/bd-1.md", 1<<20); rerr != nil {
					t.Errorf("record not restored (restored %v): %v", restored, rerr)
				}
				return err
			}},
		{name: "seal and restore a file", target: "attempts/bd-1.md",
			setup: func(t *testing.T, s *Store) {
				_, err := s.IncrementAttempt("bd-1")
				must(t, err)
				must(t, fail(s))
				must(t, s.Seal())
			},
			run: func(t *testing.T, s *Store) error { _, err := s.Unseal(); return err }},
		{name: "reports retention", target: "reports/20200101T000000Z-00000001.md",
			setup: func(t *testing.T, s *Store) {
				for _, id := range []string{"20250101T000000Z-00000002", "20250101T000000Z-00000003"} {
					_, err := s.WriteReport(id, []byte("{}"), []byte("# r\n"))
					must(t, err)
				}
			},
			run: func(t *testing.T, s *Store) error { return s.PruneReports(1, "") }},
		{name: "reports retention dir", target: ReportsDirName, dir: true,
			run: func(t *testing.T, s *Store) error { return s.PruneReports(1, "") }},
		{name: "write report", target: ReportsDirName, dir: true,
			run: func(t *testing.T, s *Store) error {
				_, err := s.WriteReport("20250101T000000Z-00000002", []byte("{}"), []byte("# r\n"))
				return err
			}},
		{name: "history append", target: HistoryFile,
			run: func(t *testing.T, s *Store) error {
				return s.AppendHistory(Record{RunID: "r", Mode: "build", Iteration: 1})
			}},
		{name: "history read", target: HistoryFile,
			run: func(t *testing.T, s *Store) error { _, err := s.History(); return err }},
		{name: "lock file", target: LockFile,
			run: func(t *testing.T, s *Store) error {
				l, err := s.Lock("build")
				if err == nil {
					must(t, l.Release())
				}
				return err
			}},
		{name: "lock holder", target: LockFile,
			run: func(t *testing.T, s *Store) error { _, err := LockHolder(s.LockPath()); return err }},
		{name: "running marker write", target: RunningFile,
			run: func(t *testing.T, s *Store) error { return s.WriteRunning(Running{PID: 1, Mode: "build", RunID: "r"}) }},
		{name: "running marker read", target: RunningFile,
			run: func(t *testing.T, s *Store) error { _, err := s.ReadRunning(); return err }},
		{name: "running marker clear", target: RunningFile,
			run: func(t *testing.T, s *Store) error { return s.ClearRunning() }},
		{name: "metadata", target: MetadataFile,
			run: func(t *testing.T, s *Store) error { return s.MarkRun("r", "build") }},
		{name: "stale temps", target: ".attempts.txt" + "." + "ralphd-tmp-x",
			run: func(t *testing.T, s *Store) error { _, err := s.RemoveStaleTemps(); return err }},
		{name: "legacy migration", target: "",
			run: func(t *testing.T, s *Store) error { _, err := s.Migrate(s.id.TopLevel); return err }},
	}
	for _, op := range ops {
		for _, pl := range nofollowPlants {
			if (op.dir && !pl.forDir) || (!op.dir && !pl.forFile) {
				continue
			}
			t.Run(op.name+"/"+pl.name, func(t *testing.T) {
				is := is.New(t)
				udir, canary := userDir(t)
				id := testIdentity(t)
				id.TopLevel = t.TempDir()
				s, err := Open(context.Background(), t.TempDir(), id, "v0.test")
				is.NoErr(err)
				s.Now = fixedNow
				if op.setup != nil {
					op.setup(t, s)
				}
				_ = s.Warnings()
				path := s.path(op.target)
				if op.target == "" {
					path = LegacyAttemptsPath(id.TopLevel)
				}
				must(t, os.RemoveAll(path))
				pl.put(t, path, udir, canary)

				var opErr error
				done := make(chan struct{})
				go func() { defer close(done); opErr = op.run(t, s) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("the operation blocked")
				}
				said := strings.Join(append(s.Warnings(), errString(opErr)), "\n")
				is.True(strings.Contains(said, path)) // ralphd names the path it found the plant at
				checkUserDir(t, udir, canary)
			})
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// userDir makes a directory of the user's holding a canary file.
func userDir(t *testing.T) (dir, canary string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "userdir")
	must(t, os.Mkdir(dir, 0o700))
	canary = filepath.Join(dir, "id_ed25519")
	must(t, os.WriteFile(canary, []byte("canary\n"), 0o600))
	return dir, canary
}

// checkUserDir fails unless the user's directory holds the canary alone,
// unchanged.
func checkUserDir(t *testing.T, dir, canary string) {
	t.Helper()
	data, err := os.ReadFile(canary)
	if err != nil || string(data) != "canary\n" {
		t.Errorf("the user's canary changed: %q, %v", data, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the user's directory holds %d entries (%v), want the canary alone", len(entries), err)
	}
}

// TestOpenRefusesLinkedStateDir checks that a state directory that is a
// link, at any level ralphd makes, is refused with an error that names it
// and says what to do, and that nothing is made through it.
func TestOpenRefusesLinkedStateDir(t *testing.T) {
	id := testIdentity(t)
	for _, level := range []string{"", "projects", "projects/" + id.ID} {
		t.Run("level="+level, func(t *testing.T) {
			is := is.New(t)
			udir, canary := userDir(t)
			root := filepath.Join(t.TempDir(), "ralph")
			link := filepath.Join(root, level)
			must(t, os.MkdirAll(filepath.Dir(link), 0o700))
			must(t, os.Symlink(udir, link))
			_, err := Open(context.Background(), root, id, "v0.test")
			is.True(err != nil)                                       // a linked state dir is refused
			is.True(strings.Contains(err.Error(), link))              // naming it
			is.True(strings.Contains(err.Error(), "RALPH_STATE_DIR")) // and saying what to do
			_, err = ReadStatus(root, id, 3)
			is.True(err != nil) // status refuses it too
			checkUserDir(t, udir, canary)
		})
	}
}

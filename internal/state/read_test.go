package state

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// planters put something that is not a regular file where a state file
// goes, as a crash, a person or an agent running as the same user could.
var planters = []struct {
	name string
	kind string // what the warnings call it
	make func(t *testing.T, path string)
}{
	{"directory", "a directory", func(t *testing.T, p string) { must(t, os.Mkdir(p, 0o700)) }},
	{"FIFO", "a FIFO", func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o600)) }},
	{"symlink to /dev/zero", "a symlink", func(t *testing.T, p string) { must(t, os.Symlink("/dev/zero", p)) }},
	{"dangling symlink", "a symlink", func(t *testing.T, p string) { must(t, os.Symlink("/nonexistent/x", p)) }},
}

// within fails the test when f does not return in time: a FIFO or
// /dev/zero read whole would block forever.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOddStateFiles: whatever stands in place of a state file, `ralphd
// status` (ReadStatus) reports it without blocking, and the next run
// (Open) moves it aside, keeping it, says so, and works as if the file
// were missing.
func TestOddStateFiles(t *testing.T) {
	for _, name := range []string{MetadataFile, AttemptsFile, HistoryFile, RunningFile, BaselineFile, LockFile, runningPrefix + "w1.json", baselinePrefix + "w1.json"} {
		for _, pl := range planters {
			t.Run(name+"/"+pl.name, func(t *testing.T) {
				root, id := t.TempDir(), testIdentity(t)
				dir := ProjectDir(root, id.ID)
				must(t, os.MkdirAll(dir, 0o700))
				p := filepath.Join(dir, name)
				pl.make(t, p)

				var st Status
				var err error
				within(t, "ReadStatus", func() { st, err = ReadStatus(root, id, 3) })
				must(t, err)
				if name == MetadataFile || name == AttemptsFile || name == RunningFile || name == HistoryFile {
					if pl.name != "dangling symlink" && !strings.Contains(strings.Join(st.Warnings, "\n"), p) {
						t.Errorf("status warnings %q do not name %s", st.Warnings, p)
					}
				}

				var s *Store
				within(t, "Open", func() { s, err = Open(context.Background(), root, id, "v0.test") })
				must(t, err)
				warns := strings.Join(s.Warnings(), "\n")
				if !strings.Contains(warns, p+": ") || !strings.Contains(warns, "("+pl.kind+")") || !strings.Contains(warns, "moved aside to "+p+".corrupt-") {
					t.Errorf("Open warnings %q do not say %s was %s and where it went", warns, p, pl.kind)
				}
				kept, _ := filepath.Glob(p + ".corrupt-*")
				if len(kept) != 1 {
					t.Fatalf("kept %v; want the planted file kept once", kept)
				}
				if fi := mustLstat(t, kept[0]); fi.Mode().IsRegular() {
					t.Errorf("what was kept at %s is a regular file, not what was planted", kept[0])
				}
				within(t, "a run's state calls", func() {
					lock, err := s.Lock("build")
					must(t, err)
					defer lock.Release()
					_, err = s.IncrementAttempt("bd-1")
					must(t, err)
					must(t, s.AppendHistory(Record{Mode: "build", IssueID: "bd-1"}))
					r, err := s.ReadRunning()
					must(t, err)
					if r != nil {
						t.Errorf("ReadRunning = %+v; want none", r)
					}
					b, err := s.ReadBaseline()
					must(t, err)
					if b != nil {
						t.Errorf("ReadBaseline = %+v; want none", b)
					}
				})
			})
		}
	}
}

func mustLstat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	return fi
}

// TestOddStateFilesMidRun: what an agent plants in place of a state file
// while ralphd runs (after Open) never blocks a read, and is moved aside or
// replaced with a warning, never followed.
func TestOddStateFilesMidRun(t *testing.T) {
	for _, pl := range planters {
		t.Run(pl.name, func(t *testing.T) {
			s := openStore(t)
			_, err := s.IncrementAttempt("bd-1")
			must(t, err)
			s.Warnings()
			must(t, os.Remove(s.AttemptsPath()))
			pl.make(t, s.AttemptsPath())
			within(t, "Attempts", func() {
				counts, err := s.Attempts()
				must(t, err)
				if len(counts) != 0 {
					t.Errorf("Attempts = %v; want none", counts)
				}
			})
			if w := strings.Join(s.Warnings(), "\n"); pl.name != "dangling symlink" && !strings.Contains(w, "it was moved to") {
				t.Errorf("warnings %q do not say where the planted file went", w)
			}
			// The running record, read at the next start.
			must(t, s.WriteRunning(Running{PID: 1}))
			must(t, os.Remove(s.RunningPath()))
			pl.make(t, s.RunningPath())
			within(t, "ReadRunning", func() {
				r, err := s.ReadRunning()
				must(t, err)
				if r != nil {
					t.Errorf("ReadRunning = %+v; want none", r)
				}
			})
		})
	}
}

// TestUnsealOddFile: an agent that puts a FIFO, a directory or a symlink
// in place of a sealed state file while sealed neither blocks Unseal nor
// keeps it: the file ralphd wrote is put back.
func TestUnsealOddFile(t *testing.T) {
	for _, pl := range planters {
		t.Run(pl.name, func(t *testing.T) {
			s := openStore(t)
			_, err := s.IncrementAttempt("bd-1")
			must(t, err)
			want := readFile(t, s.AttemptsPath())
			must(t, s.Seal())
			must(t, os.Remove(s.AttemptsPath()))
			pl.make(t, s.AttemptsPath())
			var restored []string
			within(t, "Unseal", func() { restored, err = s.Unseal() })
			must(t, err)
			if len(restored) != 1 || restored[0] != AttemptsFile {
				t.Errorf("restored %v; want [%s]", restored, AttemptsFile)
			}
			if got := readFile(t, s.AttemptsPath()); got != want {
				t.Errorf("attempts.txt = %q; want %q", got, want)
			}
			if kept, _ := filepath.Glob(s.AttemptsPath() + ".corrupt-*"); len(kept) != 1 {
				t.Errorf("kept %v; want what the agent planted kept once", kept)
			}
		})
	}
}

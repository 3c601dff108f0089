package state

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// TestAttemptsWriteFailureAtEachStep injects a failure at each step of the
// atomic write of attempts.txt: the increment fails, and the file is
// always readable, holding the old count (or, once renamed, the new one),
// with no temp file left behind.
func TestAttemptsWriteFailureAtEachStep(t *testing.T) {
	injected := errors.New("injected failure")
	for step := range atomicfile.NumSteps {
		t.Run(step.String(), func(t *testing.T) {
			is := is.New(t)
			s := openStore(t)
			writeFile(t, s.AttemptsPath(), "bd-1:2\nbd-2:5\n")
			s.writer.hook = func(st atomicfile.Step, path string) error {
				if st == step && path == s.AttemptsPath() {
					return injected
				}
				return nil
			}
			_, err := s.IncrementAttempt("bd-1")
			is.True(errors.Is(err, injected))

			counts, bad := ParseAttempts([]byte(readFile(t, s.AttemptsPath())))
			is.Equal(len(bad), 0)
			want := 2
			if step > atomicfile.StepRename {
				want = 3 // renamed: new content in place, only the dir fsync failed
			}
			is.Equal(counts, []AttemptCount{{"bd-1", want}, {"bd-2", 5}})
			entries, err := os.ReadDir(s.Dir())
			is.NoErr(err)
			for _, e := range entries {
				is.True(!atomicfile.IsTemp(e.Name())) // temp file cleaned up
			}

			// The store keeps working once the failure is gone.
			s.writer.hook = nil
			n, err := s.IncrementAttempt("bd-1")
			is.NoErr(err)
			is.Equal(n, want+1)
		})
	}
}

// TestAttemptsCrashAtEachStep kills a real process (SIGKILL, from inside
// the write) before each write step of an increment that also has to
// repair a corrupt attempts file: 2 writes for the repair, 1 for the
// increment. After every crash attempts.txt parses, holds the old or the
// new count, and the corrupt line is still somewhere on disk.
func TestAttemptsCrashAtEachStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per step")
	}
	const garbage = "bd-x:\x00garbage"
	initial := "bd-1:2\n" + garbage + "\nbd-2:5\n"
	crashes := 0
	for k := 0; k < 100; k++ {
		is := is.New(t)
		root := t.TempDir()
		dir := ProjectDir(root, testID)
		writeFile(t, filepath.Join(dir, AttemptsFile), initial)

		cmd := helper(t, "crash", root, "HELPER_CRASH_AT="+strconv.Itoa(k))
		out, err := cmd.Output()
		if err == nil {
			// k is past the last step: the increment completed.
			is.Equal(crashes, 3*int(atomicfile.NumSteps))
			is.Equal(readFile(t, filepath.Join(dir, AttemptsFile)), "bd-1:3\nbd-2:5\n")
			return
		}
		var ee *exec.ExitError
		is.True(errors.As(err, &ee))
		ws, ok := ee.Sys().(syscall.WaitStatus)
		is.True(ok)
		is.True(ws.Signaled() && ws.Signal() == syscall.SIGKILL) // a real crash, not an error exit
		crashes++
		t.Logf("k=%d: %s", k, strings.TrimSpace(string(out)))

		counts, bad := ParseAttempts([]byte(readFile(t, filepath.Join(dir, AttemptsFile))))
		got := map[string]int{}
		for _, c := range counts {
			got[c.IssueID] = c.Count
		}
		is.True(got["bd-1"] == 2 || got["bd-1"] == 3)
		is.Equal(got["bd-2"], 5)
		// The garbage line is never lost: still in attempts.txt, or saved.
		saved := false
		for _, b := range bad {
			saved = saved || b == garbage
		}
		corrupt, _ := filepath.Glob(filepath.Join(dir, AttemptsFile+".corrupt-*"))
		for _, c := range corrupt {
			saved = saved || strings.Contains(readFile(t, c), garbage)
		}
		is.True(saved)

		// The next ralphd starts cleanly and counts on.
		s, err := Open(context.Background(), root, Identity{ID: testID, TopLevel: root}, "v")
		is.NoErr(err)
		_, err = s.RemoveStaleTemps()
		is.NoErr(err)
		n, err := s.IncrementAttempt("bd-1")
		is.NoErr(err)
		is.Equal(n, got["bd-1"]+1)
	}
	t.Fatal("the helper never completed its increment")
}

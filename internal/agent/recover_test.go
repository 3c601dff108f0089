//go:build linux

package agent

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/proc"
)

// startTree starts forkingAgent outside Run, as a crashed ralphd would
// have left it, and returns its record and all its pids.
func startTree(t *testing.T, marker string) (Started, []int) {
	t.Helper()
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("sh", "-c", forkingAgent)
	cmd.Env = append(testEnv(), "PIDS="+pids, RunMarkerEnv+"="+marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil { // "ready\n": all pids written
		t.Fatal(err)
	}
	st, err := proc.StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rec := Started{PID: cmd.Process.Pid, PGID: cmd.Process.Pid, StartTime: st, Marker: marker}
	return rec, readPIDs(t, pids)
}

func TestEndRecordedEndsTheRecordedTree(t *testing.T) {
	is := is.New(t)
	rec, pids := startTree(t, "run-1")
	is.Equal(len(pids), 4)
	is.Equal(EndRecorded(rec, 100*time.Millisecond), 0)
	assertAllGone(t, pids)
}

func TestEndRecordedByMarkerWhenTheLeaderIsGone(t *testing.T) {
	is := is.New(t)
	rec, pids := startTree(t, "run-2")
	// The leader died; its children live on (as after a ralphd SIGKILL,
	// whose Pdeathsig reaches only the leader).
	is.NoErr(syscall.Kill(rec.PID, syscall.SIGKILL))
	for i := 0; proc.Alive(rec.PID, rec.StartTime); i++ {
		if i > 1000 {
			t.Fatal("the leader does not die")
		}
		time.Sleep(10 * time.Millisecond)
	}
	is.Equal(EndRecorded(rec, 100*time.Millisecond), 0)
	assertAllGone(t, pids)
}

func TestEndRecordedLeavesARecycledGroupAlone(t *testing.T) {
	is := is.New(t)
	// An unrelated process group whose ids match the record, but whose
	// start time does not, and which carries no marker.
	rec, pids := startTree(t, "unrelated")
	stale := Started{PID: rec.PID, PGID: rec.PGID, StartTime: rec.StartTime - 1, Marker: "crashed-run"}
	is.Equal(EndRecorded(stale, 100*time.Millisecond), 0)
	for _, pid := range pids {
		is.True(proc.Alive(pid, 0)) // left alone
	}
	// An empty record touches nothing either.
	is.Equal(EndRecorded(Started{PGID: rec.PGID}, 0), 0)
	is.True(proc.Alive(rec.PID, rec.StartTime))
}

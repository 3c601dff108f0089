package state

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestRunningRecord(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	r, err := s.ReadRunning()
	is.NoErr(err)
	is.Equal(r, (*Running)(nil))
	is.NoErr(s.ClearRunning()) // nothing to clear is fine

	want := Running{PGID: 100, PID: 100, StartTicks: 12345, BootID: "b", Iteration: 4, IssueID: "bd-1", Attempt: 2,
		Mode: "build", RunID: "r1", StartedAt: fixedNow()}
	is.NoErr(s.WriteRunning(want))
	fi, err := os.Stat(s.RunningPath())
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	r, err = s.ReadRunning()
	is.NoErr(err)
	is.Equal(*r, want)

	is.NoErr(s.ClearRunning())
	r, err = s.ReadRunning()
	is.NoErr(err)
	is.Equal(r, (*Running)(nil))
}

func TestCorruptRunningRecord(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	writeFile(t, s.RunningPath(), `{"pgid": 12, "pid":`)
	r, err := s.ReadRunning()
	is.NoErr(err)
	is.Equal(r, (*Running)(nil))
	warns := s.Warnings()
	is.Equal(len(warns), 1)
	matches, _ := filepath.Glob(s.RunningPath() + ".corrupt-*")
	is.Equal(len(matches), 1)
	is.True(strings.Contains(warns[0], matches[0]))
	is.Equal(readFile(t, matches[0]), `{"pgid": 12, "pid":`)
	_, err = os.Stat(s.RunningPath())
	is.True(os.IsNotExist(err))
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		file string
		want ProcStat
	}{
		{"proc-stat-cat.txt", ProcStat{PID: 17070, Comm: "cat", State: 'R', PPID: 17068, PGID: 17068, StartTicks: 35994}},
		{"proc-stat-init.txt", ProcStat{PID: 1, Comm: "process_api", State: 'S', PPID: 0, PGID: 0, StartTicks: 24}},
		// A command name with spaces and parentheses.
		{"proc-stat-odd.txt", ProcStat{PID: 17136, Comm: "a) b (c", State: 'S', PPID: 17135, PGID: 17131, StartTicks: 36117}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			got, err := ParseProcStat([]byte(readFile(t, filepath.Join("testdata", tt.file))))
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
	for _, bad := range []string{"", "1 (x", "x (sh) S 1 1", "1 (sh) S 1 1 1 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0", "1 (sh) S a 1 1 0 -1 4 1 0 0 0 0 0 0 0 20 0 1 0 5", "1 (sh) SS 1 1 1 0 -1 4 1 0 0 0 0 0 0 0 20 0 1 0 5"} {
		is := is.New(t)
		_, err := ParseProcStat([]byte(bad))
		is.True(err != nil)
	}
}

func TestProcStartTimeAndLeaderAlive(t *testing.T) {
	is := is.New(t)
	cmd := exec.Command("sleep", "60")
	is.NoErr(cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	start, err := ProcStartTime(pid)
	is.NoErr(err)
	is.True(start > 0)
	self, err := ProcStartTime(os.Getpid())
	is.NoErr(err)
	is.True(start >= self) // the child started after us
	boot, err := BootID()
	is.NoErr(err)
	is.True(boot != "")

	rec := Running{PGID: pid, PID: pid, StartTicks: start, BootID: boot, StartedAt: time.Now()}
	alive, err := rec.LeaderAlive()
	is.NoErr(err)
	is.True(alive)

	recycled := rec
	recycled.StartTicks = start - 1 // same PID, another process
	alive, err = recycled.LeaderAlive()
	is.NoErr(err)
	is.True(!alive)

	rebooted := rec
	rebooted.BootID = "another-boot"
	alive, err = rebooted.LeaderAlive()
	is.NoErr(err)
	is.True(!alive)

	is.NoErr(cmd.Process.Kill())
	_ = cmd.Wait()
	alive, err = rec.LeaderAlive()
	is.NoErr(err)
	is.True(!alive) // gone

	_, err = ProcStartTime(-1)
	is.True(err != nil)
}

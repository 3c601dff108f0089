//go:build linux

package agent

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the agent in its own process group and asks the kernel
// to SIGKILL it when the thread that started it dies. Go never ends its
// threads while they are in use (only a goroutine that exits while locked
// to its thread takes the thread with it, and Run does not lock threads),
// so in practice the agent dies with ralphd.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// intoCgroup makes the process start inside the cgroup open as fd
// (clone3 with CLONE_INTO_CGROUP), so that it never runs outside it.
func intoCgroup(a *syscall.SysProcAttr, fd int) {
	a.UseCgroupFD = true
	a.CgroupFD = fd
}

// BecomeSubreaper makes the calling process a child subreaper
// (prctl(PR_SET_CHILD_SUBREAPER)): orphaned descendants, such as a process
// an agent started with setsid or a double fork, are re-parented to this
// process instead of init. Run then ends them and reaps them when the
// iteration ends. Call it once, early in main; it affects the whole
// process.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}

// IsSubreaper reports whether the calling process is a child subreaper.
func IsSubreaper() bool {
	var v int32
	// PR_GET_CHILD_SUBREAPER stores an int at the address in arg2.
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
	return err == nil && v != 0
}

// procStat is what the runner needs from /proc/<pid>/stat.
type procStat struct {
	PID       int
	State     byte
	PPID      int
	PGID      int
	SID       int
	StartTime uint64 // clock ticks after boot
}

// readProcStat parses /proc/<pid>/stat. The command name (field 2) may
// contain spaces and parentheses, so parsing starts after its last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(pid, b)
}

func parseProcStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: no command field", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); field n is f[n-3]; starttime is field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	atoi := func(s []byte) int { n, _ := strconv.Atoi(string(s)); return n }
	st, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat starttime: %w", pid, err)
	}
	return procStat{
		PID:       pid,
		State:     f[0][0],
		PPID:      atoi(f[1]),
		PGID:      atoi(f[2]),
		SID:       atoi(f[3]),
		StartTime: st,
	}, nil
}

// ProcessStartTime returns the start time of process pid in clock ticks
// after boot (field 22 of /proc/<pid>/stat). Together with the pid it
// identifies a process across PID reuse: a recorded (pid, start time) pair
// whose start time no longer matches belongs to another process.
func ProcessStartTime(pid int) (uint64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, fmt.Errorf("read start time of process %d: %w", pid, err)
	}
	return st.StartTime, nil
}

// listPIDs returns the numeric entries of /proc.
func listPIDs() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// hasMarker reports whether process pid's initial environment contains
// RunMarkerEnv=token. It is false for zombies and unreadable processes.
func hasMarker(pid int, token string) bool {
	if token == "" {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(RunMarkerEnv + "=" + token)
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if bytes.Equal(kv, want) {
			return true
		}
	}
	return false
}

// treeQuery says which processes belong to one agent run.
type treeQuery struct {
	PGID      int    // the agent's process group; 0 for none
	Token     string // the run's RunMarkerEnv value
	MinStart  uint64 // processes started before this cannot be descendants
	Self      int    // our pid
	SelfSID   int    // our session id
	Subreaper bool   // we are a child subreaper
	// Known are processes found in earlier scans (pid to start time); they
	// stay part of the tree after they became zombies and lost their
	// marker, so that they can be reaped.
	Known map[int]uint64
}

// findTree returns the processes of one agent run that still exist
// (including zombies): members of its process group, processes carrying
// its run marker, processes found before (q.Known), and, when we are a
// subreaper, zombie children of ours that live in a session of their own
// (a setsid escapee that died before it could be found by its marker;
// ralphd's own children never call setsid).
func findTree(q treeQuery) ([]procStat, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	var out []procStat
	for _, pid := range pids {
		if pid == q.Self {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.StartTime < q.MinStart {
			continue
		}
		known, ok := q.Known[pid]
		switch {
		case ok && known == st.StartTime:
		case q.PGID > 0 && st.PGID == q.PGID:
		case st.State == 'Z' && q.Subreaper && st.PPID == q.Self && st.SID != q.SelfSID:
		case st.State != 'Z' && hasMarker(pid, q.Token):
		default:
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// signalTree sends sig to the group and to every process in procs that is
// still running. Errors (the process is gone already) are ignored.
func signalTree(pgid int, procs []procStat, sig syscall.Signal) {
	if pgid > 0 {
		_ = unix.Kill(-pgid, sig)
	}
	for _, p := range procs {
		if p.State == 'Z' {
			continue
		}
		// Check the start time again right before the signal so that a
		// pid recycled since the scan is not touched.
		if st, err := readProcStat(p.PID); err == nil && st.StartTime == p.StartTime {
			_ = unix.Kill(p.PID, sig)
		}
	}
}

// reapOurs reaps the processes in procs that are zombie children of ours.
// It waits for those pids only, never for any child, so that it cannot
// steal the exit status of a process another goroutine is waiting for.
func reapOurs(self int, procs []procStat) {
	for _, p := range procs {
		if p.PPID != self || p.State != 'Z' {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.PID, &ws, unix.WNOHANG, nil)
	}
}

// running returns the processes in procs that are not zombies.
func running(procs []procStat) []procStat {
	var out []procStat
	for _, p := range procs {
		if p.State != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// ProcessAlive reports whether the process pid with the given start time
// (see ProcessStartTime) exists and is not a zombie. A start time of 0
// matches any process with that pid.
func ProcessAlive(pid int, startTime uint64) bool {
	st, err := readProcStat(pid)
	if err != nil {
		return false
	}
	if startTime != 0 && st.StartTime != startTime {
		return false
	}
	return st.State != 'Z' && st.State != 'X'
}

// selfSID returns the session id of the calling process, or 0.
func selfSID() int {
	sid, err := unix.Getsid(0)
	if err != nil {
		return 0
	}
	return sid
}

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTick is one unit of the CPU times in /proc/<pid>/stat. Linux reports
// them in USER_HZ, which is 100 on every architecture Go runs on.
const ClockTick = 10 * time.Millisecond

// Stat is the part of /proc/<pid>/stat that ralphd reads.
type Stat struct {
	PID   int
	Comm  string // the command name, without its parentheses
	State byte   // R, S, D, Z, ...
	PPID  int
	PGID  int
	SID   int
	// UTime, STime, CUTime and CSTime are the user and system CPU of the
	// process itself and of its waited-for children, in clock ticks.
	UTime, STime, CUTime, CSTime uint64
	Threads                      int
	// StartTime is field 22, starttime: clock ticks after boot. With the
	// PID it identifies a process across PID reuse.
	StartTime uint64
}

// CPU returns the process's own CPU time (user plus system), without its
// children's.
func (s Stat) CPU() time.Duration {
	return time.Duration(s.UTime+s.STime) * ClockTick
}

// Gone reports whether the process has exited: a zombie (exited, not yet
// reaped) or dead.
func (s Stat) Gone() bool { return s.State == 'Z' || s.State == 'X' }

// ParseStat parses the content of /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may itself hold spaces and parentheses,
// so the fields after it are counted from the last ')'.
func ParseStat(data []byte) (Stat, error) {
	s := string(bytes.TrimRight(data, "\n"))
	open := strings.IndexByte(s, '(')
	closing := strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return Stat{}, errors.New("parse proc stat: no command name")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return Stat{}, fmt.Errorf("parse proc stat: pid: %w", err)
	}
	// f[0] is field 3 (state); field n is f[n-3].
	f := strings.Fields(s[closing+1:])
	const last = 22 // starttime
	if len(f) < last-2 {
		return Stat{}, fmt.Errorf("parse proc stat: %d fields after the command name, want at least %d", len(f), last-2)
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("parse proc stat: state %q", f[0])
	}
	st := Stat{PID: pid, Comm: s[open+1 : closing], State: f[0][0]}
	for _, x := range []struct {
		field int
		dst   *int
	}{{4, &st.PPID}, {5, &st.PGID}, {6, &st.SID}, {20, &st.Threads}} {
		if *x.dst, err = strconv.Atoi(f[x.field-3]); err != nil {
			return Stat{}, fmt.Errorf("parse proc stat: field %d: %w", x.field, err)
		}
	}
	for _, x := range []struct {
		field int
		dst   *uint64
	}{{14, &st.UTime}, {15, &st.STime}, {16, &st.CUTime}, {17, &st.CSTime}, {22, &st.StartTime}} {
		if *x.dst, err = strconv.ParseUint(f[x.field-3], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("parse proc stat: field %d: %w", x.field, err)
		}
	}
	return st, nil
}

// ReadStat reads and parses /proc/<pid>/stat. It works on a zombie too.
// A process that does not exist gives an error matching fs.ErrNotExist.
func ReadStat(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, fmt.Errorf("read proc stat: invalid pid %d", pid)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, fmt.Errorf("read proc stat: %w", err)
	}
	st, err := ParseStat(data)
	if err != nil {
		return Stat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// StartTime returns the start time of process pid in clock ticks after
// boot (see Stat.StartTime).
func StartTime(pid int) (uint64, error) {
	st, err := ReadStat(pid)
	if err != nil {
		return 0, fmt.Errorf("read start time of process %d: %w", pid, err)
	}
	return st.StartTime, nil
}

// Alive reports whether process pid, started at startTime (see
// StartTime), exists and has not exited. A startTime of 0 matches any
// process with that pid. Outside Linux, where there is no /proc, the start
// time cannot be checked and any existing pid counts.
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := ReadStat(pid)
	if errors.Is(err, os.ErrNotExist) && !haveProc() {
		return signalZero(pid)
	}
	if err != nil {
		return false
	}
	if startTime != 0 && st.StartTime != startTime {
		return false
	}
	return !st.Gone()
}

// PIDs returns the numeric entries of /proc: every process on the machine.
func PIDs() ([]int, error) {
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

// HasEnv reports whether process pid's initial environment holds the exact
// entry kv ("KEY=value"). It is false for zombies, other users' processes
// and anything unreadable.
func HasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(kv)
	for len(b) > 0 {
		var e []byte
		e, b, _ = bytes.Cut(b, []byte{0})
		if bytes.Equal(e, want) {
			return true
		}
	}
	return false
}

// haveProc reports whether this system has a /proc with process entries.
func haveProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

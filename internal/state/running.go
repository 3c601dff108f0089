package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Running describes the agent of the iteration in flight. It is written
// (atomically) before the agent starts and cleared once the iteration's
// history record is appended, so after a crash the next ralphd knows which
// process group to end and which iteration to settle.
type Running struct {
	// PGID is the agent's process group (its leader's PID, as ralphd starts
	// every agent in its own group).
	PGID int `json:"pgid"`
	// PID is the agent process.
	PID int `json:"pid"`
	// StartTicks is the agent's start time in clock ticks after boot (field
	// 22 of /proc/<pid>/stat), so a recycled PID is told apart.
	StartTicks uint64 `json:"start_ticks"`
	// BootID is /proc/sys/kernel/random/boot_id when the record was
	// written; after a reboot no recorded process can be alive.
	BootID string `json:"boot_id,omitempty"`
	// Marker is the value of the agent's run-marker environment variable,
	// which finds processes of its tree that left its process group.
	Marker    string    `json:"marker,omitempty"`
	Iteration int       `json:"iteration"`
	IssueID   string    `json:"issue_id,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Mode      string    `json:"mode"`
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
}

// ParseRunning parses running.json.
func ParseRunning(data []byte) (Running, error) {
	trimmed := bytes.TrimSpace(data)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return Running{}, errors.New("parse running record: not a JSON object")
	}
	var r Running
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return Running{}, fmt.Errorf("parse running record: %w", err)
	}
	return r, nil
}

// RunningPath returns the path of running.json.
func (s *Store) RunningPath() string { return s.path(RunningFile) }

// WriteRunning records the agent that is about to run (or has just
// started), atomically.
func (s *Store) WriteRunning(r Running) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write running record: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writer.write(s.RunningPath(), append(data, '\n'), filePerm); err != nil {
		return fmt.Errorf("write running record: %w", err)
	}
	return nil
}

// ReadRunning returns the running record, or nil when there is none. An
// unreadable record is moved to running.json.corrupt-<timestamp> (with a
// queued warning that says which processes may need a manual check) and
// nil is returned.
func (s *Store) ReadRunning() (*Running, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.RunningPath()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read running record: %w", err)
	}
	r, err := ParseRunning(data)
	if err != nil {
		dst, mvErr := s.moveAside(path)
		if mvErr != nil {
			return nil, mvErr
		}
		s.warn("%s could not be parsed (%v); it was moved to %s. An agent from a previous run may still be running: check with `ps -ef`", path, err, dst)
		return nil, nil
	}
	return &r, nil
}

// ClearRunning removes the running record. A missing record is not an
// error.
func (s *Store) ClearRunning() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(s.RunningPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear running record: %w", err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("clear running record: %w", err)
	}
	return nil
}

// ProcStat holds the fields of /proc/<pid>/stat that ralphd uses.
type ProcStat struct {
	PID   int
	Comm  string
	State byte
	PPID  int
	PGID  int
	// StartTicks is field 22, starttime: clock ticks after boot.
	StartTicks uint64
}

// ParseProcStat parses the content of /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may itself contain spaces and
// parentheses, so the fields after it are found after the last ')'.
func ParseProcStat(data []byte) (ProcStat, error) {
	s := string(bytes.TrimRight(data, "\n"))
	open := strings.IndexByte(s, '(')
	closing := strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return ProcStat{}, errors.New("parse proc stat: no command name")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return ProcStat{}, fmt.Errorf("parse proc stat: pid: %w", err)
	}
	// Fields after the command name start at field 3 (state).
	rest := strings.Fields(s[closing+1:])
	const startField = 22
	if len(rest) < startField-2 {
		return ProcStat{}, fmt.Errorf("parse proc stat: %d fields after the command name, want at least %d", len(rest), startField-2)
	}
	if len(rest[0]) != 1 {
		return ProcStat{}, fmt.Errorf("parse proc stat: state %q", rest[0])
	}
	ppid, err := strconv.Atoi(rest[1])
	if err != nil {
		return ProcStat{}, fmt.Errorf("parse proc stat: ppid: %w", err)
	}
	pgid, err := strconv.Atoi(rest[2])
	if err != nil {
		return ProcStat{}, fmt.Errorf("parse proc stat: pgid: %w", err)
	}
	start, err := strconv.ParseUint(rest[startField-3], 10, 64)
	if err != nil {
		return ProcStat{}, fmt.Errorf("parse proc stat: starttime: %w", err)
	}
	return ProcStat{PID: pid, Comm: s[open+1 : closing], State: rest[0][0], PPID: ppid, PGID: pgid, StartTicks: start}, nil
}

// ReadProcStat reads and parses /proc/<pid>/stat. A process that does not
// exist gives an error matching fs.ErrNotExist.
func ReadProcStat(pid int) (ProcStat, error) {
	if pid <= 0 {
		return ProcStat{}, fmt.Errorf("read proc stat: invalid pid %d", pid)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, fmt.Errorf("read proc stat: %w", err)
	}
	return ParseProcStat(data)
}

// ProcStartTime returns a process's start time in clock ticks after boot
// (field 22 of /proc/<pid>/stat). Two processes with the same PID never
// have the same start time within one boot.
func ProcStartTime(pid int) (uint64, error) {
	st, err := ReadProcStat(pid)
	if err != nil {
		return 0, err
	}
	return st.StartTicks, nil
}

// BootID returns the kernel's boot id, which changes at every boot.
func BootID() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// LeaderAlive reports whether the recorded agent process is still the same
// process: same boot (when recorded), a live PID, and the same start time.
// A zombie counts as not alive. False means the PID is gone or recycled
// and must not be signalled.
func (r Running) LeaderAlive() (bool, error) {
	if r.PID <= 0 || r.StartTicks == 0 {
		return false, nil
	}
	if r.BootID != "" {
		boot, err := BootID()
		if err != nil {
			return false, err
		}
		if boot != r.BootID {
			return false, nil
		}
	}
	st, err := ReadProcStat(r.PID)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return st.StartTicks == r.StartTicks && st.State != 'Z', nil
}

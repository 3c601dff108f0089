//go:build !linux

package agent

import (
	"errors"
	"syscall"
)

// errUnsupported is returned by process inspection on systems without /proc.
var errUnsupported = errors.New("not supported on this system")

// sysProcAttr puts the agent in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// intoCgroup does nothing: there are no cgroups outside Linux.
func intoCgroup(*syscall.SysProcAttr, int) {}

// BecomeSubreaper is only supported on Linux.
func BecomeSubreaper() error { return errUnsupported }

// IsSubreaper is always false outside Linux.
func IsSubreaper() bool { return false }

// ProcessStartTime is only supported on Linux.
func ProcessStartTime(pid int) (uint64, error) { return 0, errUnsupported }

type procStat struct {
	PID       int
	State     byte
	PPID      int
	PGID      int
	SID       int
	StartTime uint64
}

type treeQuery struct {
	PGID      int
	Token     string
	MinStart  uint64
	Self      int
	SelfSID   int
	Subreaper bool
	Known     map[int]uint64
}

// findTree can only see the process group without /proc: it reports the
// group as one running process while kill(-pgid, 0) succeeds.
func findTree(q treeQuery) ([]procStat, error) {
	if q.PGID > 0 && syscall.Kill(-q.PGID, 0) == nil {
		return []procStat{{PID: -q.PGID, State: 'R', PGID: q.PGID}}, nil
	}
	return nil, nil
}

func signalTree(pgid int, _ []procStat, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}

func reapOurs(int, []procStat) {}

func running(procs []procStat) []procStat { return procs }

// ProcessAlive reports whether a process pid exists; outside Linux the
// start time cannot be checked.
func ProcessAlive(pid int, _ uint64) bool { return syscall.Kill(pid, 0) == nil }

func selfSID() int { return 0 }

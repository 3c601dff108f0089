package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcStatus is the part of /proc/<pid>/status (or of one thread's
// /proc/<pid>/task/<tid>/status) the benchmarks read.
type ProcStatus struct {
	VmHWM    int64  // peak resident set size, bytes
	VmRSS    int64  // resident set size now, bytes
	Switches uint64 // voluntary plus involuntary context switches
}

// ParseStatus parses the contents of a /proc status file. Memory lines are
// absent for a zombie; they read as zero.
func ParseStatus(b []byte) (ProcStatus, error) {
	var s ProcStatus
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			continue
		}
		switch key {
		case "VmHWM", "VmRSS":
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return ProcStatus{}, fmt.Errorf("parse status %s: %w", key, err)
			}
			if key == "VmHWM" {
				s.VmHWM = kb * 1024
			} else {
				s.VmRSS = kb * 1024
			}
		case "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches":
			n, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return ProcStatus{}, fmt.Errorf("parse status %s: %w", key, err)
			}
			s.Switches += n
		}
	}
	if err := sc.Err(); err != nil {
		return ProcStatus{}, fmt.Errorf("parse status: %w", err)
	}
	return s, nil
}

// ReadStatus reads /proc/<pid>/status.
func ReadStatus(pid int) (ProcStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcStatus{}, fmt.Errorf("read status of %d: %w", pid, err)
	}
	return ParseStatus(b)
}

// ParseSchedstat returns the time on CPU, the first field of
// /proc/<pid>/task/<tid>/schedstat, in nanoseconds.
func ParseSchedstat(b []byte) (time.Duration, error) {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, fmt.Errorf("parse schedstat: %d fields, want 3", len(f))
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse schedstat: %w", err)
	}
	return time.Duration(ns), nil
}

// Threads sums what every live thread of a process has done.
type Threads struct {
	Count    int           // live threads
	CPU      time.Duration // time on CPU, nanosecond precision (schedstat)
	Switches uint64        // context switches: each one is a wake-up or a preemption
}

// ReadThreads sums schedstat and the context switches over
// /proc/<pid>/task/*. Threads that exited are not counted; an idle Go
// process keeps its threads.
func ReadThreads(pid int) (Threads, error) {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(dirs) == 0 {
		return Threads{}, fmt.Errorf("list threads of %d: no /proc entry", pid)
	}
	var t Threads
	for _, d := range dirs {
		sb, err := os.ReadFile(filepath.Join(d, "schedstat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		cpu, err := ParseSchedstat(sb)
		if err != nil {
			return Threads{}, err
		}
		st, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		s, err := ParseStatus(st)
		if err != nil {
			return Threads{}, err
		}
		t.Count++
		t.CPU += cpu
		t.Switches += s.Switches
	}
	return t, nil
}

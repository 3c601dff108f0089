package agent

import (
	"syscall"

	"github.com/ralphd/ralphd/internal/proc"
)

// The process tree of one agent run, found through /proc (internal/proc).

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
//
// Without /proc (outside Linux) only the process group can be seen: it is
// reported as one running process while kill(-pgid, 0) succeeds.
func findTree(q treeQuery) ([]proc.Stat, error) {
	pids, err := proc.PIDs()
	if err != nil {
		if q.PGID > 0 && syscall.Kill(-q.PGID, 0) == nil {
			return []proc.Stat{{PID: -q.PGID, State: 'R', PGID: q.PGID}}, nil
		}
		return nil, nil
	}
	var out []proc.Stat
	for _, pid := range pids {
		if pid == q.Self {
			continue
		}
		st, err := proc.ReadStat(pid)
		if err != nil || st.StartTime < q.MinStart {
			continue
		}
		known, ok := q.Known[pid]
		switch {
		case ok && known == st.StartTime:
		case q.PGID > 0 && st.PGID == q.PGID:
		case st.State == 'Z' && q.Subreaper && st.PPID == q.Self && st.SID != q.SelfSID:
		case st.State != 'Z' && q.Token != "" && proc.HasEnv(pid, RunMarkerEnv+"="+q.Token):
		default:
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// signalTree sends sig to the group and to every process in procs that is
// still running. Errors (the process is gone already) are ignored.
func signalTree(pgid int, procs []proc.Stat, sig syscall.Signal) {
	if pgid > 0 {
		_ = proc.SignalGroup(pgid, sig)
	}
	for _, p := range procs {
		if p.State == 'Z' {
			continue
		}
		// Check the start time again right before the signal so that a
		// pid recycled since the scan is not touched.
		if st, err := proc.ReadStat(p.PID); err == nil && st.StartTime == p.StartTime {
			_ = syscall.Kill(p.PID, sig)
		}
	}
}

// reapOurs reaps the processes in procs that are zombie children of ours.
// It waits for those pids only, never for any child, so that it cannot
// steal the exit status of a process another goroutine is waiting for.
func reapOurs(self int, procs []proc.Stat) {
	for _, p := range procs {
		if p.PPID != self || p.State != 'Z' {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.PID, &ws, syscall.WNOHANG, nil)
	}
}

// running returns the processes in procs that are not zombies.
func running(procs []proc.Stat) []proc.Stat {
	var out []proc.Stat
	for _, p := range procs {
		if p.State != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

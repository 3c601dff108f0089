package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/text"
)

// idleResult is what section 4 measured.
type idleResult struct {
	Window      time.Duration // the idle measurement window
	CPU         time.Duration // the daemon's CPU over the window (schedstat, ns precision)
	TickCPU     time.Duration // the same from /proc/<pid>/stat (10 ms ticks), a cross-check
	BDCalls     int           // bd calls during the window
	Switches    uint64        // context switches of all its threads during the window
	Threads     int
	RSSIdle     int64 // VmHWM after the idle window
	RSSAfter    int64 // VmHWM after the wakes
	Latencies   []time.Duration
	CallsPerRun float64 // bd calls per wake (decide, one iteration, back to idle)
	Command     string
	Exit        int
	Dashboard   *idleDashboard // figure 4f, the same with --http and an SSE client
}

// idleAgent records when it starts (to the nanosecond), then closes its
// issue.
func idleAgent(starts string) string {
	return fmt.Sprintf("date +%%s.%%N >> %s && %s", text.ShellQuote(starts), agentCmd)
}

// measureIdle runs section 4: a daemon over an empty tracker, idle for
// window, then woken wakes times by a `bd create` from another process.
func measureIdle(ctx context.Context, e *benchEnv, window time.Duration, wakes int, say func(string, ...any)) (*idleResult, error) {
	dir := filepath.Join(e.work, "idle")
	if err := e.makeProject(ctx, dir, 0); err != nil {
		return nil, err
	}
	starts := filepath.Join(e.work, "idle-starts.txt")
	callLog := filepath.Join(e.work, "calls-idle.jsonl")
	logPath := filepath.Join(e.work, "daemon.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create daemon log: %w", err)
	}
	defer logf.Close()
	args := []string{"daemon", "--bd", filepath.Join(e.recBin, "bd"), "--agent-cmd", idleAgent(starts), "--poll", "60s"}
	res := &idleResult{Window: window, Command: "ralphd daemon --bd <counting bd> --agent-cmd " + text.ShellQuote(idleAgent("starts.txt")) + " --poll 60s"}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := command(dctx, e.recordEnv(callLog), dir, e.ralphd(), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	say("starting ralphd daemon on an empty tracker")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopDaemon := func() error {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case err := <-exited:
			res.Exit = cmd.ProcessState.ExitCode()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return fmt.Errorf("daemon: %w", err)
			}
			return nil
		case <-time.After(60 * time.Second):
			cancel()
			<-exited
			return errors.New("the daemon did not stop within 60 s of SIGTERM")
		}
	}
	idles := func() int { b, _ := os.ReadFile(logPath); return strings.Count(string(b), "idle: ") }
	waitFor := func(what string, limit time.Duration, ok func() bool) error {
		deadline := time.Now().Add(limit)
		for !ok() {
			select {
			case err := <-exited:
				b, _ := os.ReadFile(logPath)
				return fmt.Errorf("the daemon exited (%v) while waiting for %s:\n%s", err, what, tail(string(b), 2000))
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(logPath)
				return fmt.Errorf("no %s within %s:\n%s", what, limit, tail(string(b), 2000))
			}
		}
		return nil
	}
	fail := func(err error) (*idleResult, error) {
		_ = stopDaemon()
		return nil, err
	}
	if err := waitFor("idle line from the daemon", time.Minute, func() bool { return idles() > 0 }); err != nil {
		return fail(err)
	}
	// Let the start-up settle (its last allocations, a GC) before measuring.
	time.Sleep(2 * time.Second)

	say("measuring the idle daemon for %s", window)
	calls0, err := bench.ReadCalls(callLog)
	if err != nil {
		return fail(err)
	}
	t0, err := bench.ReadThreads(pid)
	if err != nil {
		return fail(err)
	}
	s0, err := proc.ReadStat(pid)
	if err != nil {
		return fail(err)
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	t1, err := bench.ReadThreads(pid)
	if err != nil {
		return fail(err)
	}
	s1, err := proc.ReadStat(pid)
	if err != nil {
		return fail(err)
	}
	calls1, err := bench.ReadCalls(callLog)
	if err != nil {
		return fail(err)
	}
	res.CPU = t1.CPU - t0.CPU
	res.TickCPU = s1.CPU() - s0.CPU()
	res.Switches = t1.Switches - t0.Switches
	res.Threads = t1.Count
	res.BDCalls = len(calls1) - len(calls0)
	if st, err := bench.ReadStatus(pid); err == nil {
		res.RSSIdle = st.VmHWM
	}

	for k := 1; k <= wakes; k++ {
		say("wake %d/%d: bd create from another process", k, wakes)
		before := idles()
		if _, err := run(ctx, e.env(), dir, e.bd(), "create", "Wake "+strconv.Itoa(k), "-p", "1", "-q"); err != nil {
			return fail(err)
		}
		created := time.Now()
		if err := waitFor("agent start", 30*time.Second, func() bool { return countLines(starts) >= k }); err != nil {
			return fail(err)
		}
		started, err := nthStart(starts, k)
		if err != nil {
			return fail(err)
		}
		res.Latencies = append(res.Latencies, started.Sub(created))
		if err := waitFor("return to idle", time.Minute, func() bool { return idles() > before }); err != nil {
			return fail(err)
		}
		// Spread the next create over the daemon's timers.
		time.Sleep(time.Second + time.Duration(k*137%400)*time.Millisecond)
	}
	calls2, err := bench.ReadCalls(callLog)
	if err != nil {
		return fail(err)
	}
	res.CallsPerRun = float64(len(calls2)-len(calls1)) / float64(max(wakes, 1))
	if st, err := bench.ReadStatus(pid); err == nil {
		res.RSSAfter = st.VmHWM
	}
	if err := stopDaemon(); err != nil {
		return nil, err
	}
	return res, nil
}

// countLines counts the lines of a file (0 when it is missing).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// nthStart reads line k (from 1) of the agent's start file: seconds since
// the epoch with nanoseconds, as `date +%s.%N` prints them.
func nthStart(path string, k int) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("read agent starts: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if k > len(lines) {
		return time.Time{}, fmt.Errorf("agent starts: %d lines, want %d", len(lines), k)
	}
	return parseEpoch(lines[k-1])
}

// parseEpoch parses "1763750000.123456789".
func parseEpoch(s string) (time.Time, error) {
	sec, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", s, err)
	}
	var ns int64
	if frac != "" {
		frac = (frac + "000000000")[:9]
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, fmt.Errorf("parse time %q: %w", s, err)
		}
	}
	return time.Unix(n, ns), nil
}

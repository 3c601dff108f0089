package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/proc"
)

// command returns a command in its own process group; cancelling ctx kills
// the whole group.
func command(ctx context.Context, env []string, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = dir
	proc.SetGroup(cmd)
	proc.EndGroupOnCancel(cmd, 0)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// measured is what measure found about one process.
type measured struct {
	Wall     time.Duration // from start to exit
	OwnCPU   time.Duration // user+system CPU of the process itself, not its children (10 ms ticks)
	TotalCPU time.Duration // user+system CPU of the process and every child it waited for
	PeakRSS  int64         // the process's own VmHWM, last sampled before it exited, bytes
	Exit     int           // exit code (-1 when killed by a signal)
	Stdout   string        // when captured
	Stderr   string        // when captured
}

// measureOptions tunes measure.
type measureOptions struct {
	// Capture keeps stdout and stderr (when the command has none set).
	Capture bool
	// Sample is how often the process's peak RSS is read; 0: never.
	Sample time.Duration
	// OnSample runs at each sample with the process's pid (the 4 GiB log
	// run truncates the log there).
	OnSample func(pid int)
}

// measure runs cmd and reports its wall time, its own CPU time (read from
// /proc while it is a zombie, so that its children's CPU is not in it),
// its total CPU time with its children's, and its own peak RSS.
func measure(cmd *exec.Cmd, o measureOptions) (measured, error) {
	var out, errb bytes.Buffer
	if o.Capture {
		if cmd.Stdout == nil {
			cmd.Stdout = &out
		}
		if cmd.Stderr == nil {
			cmd.Stderr = &errb
		}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return measured{}, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	var m measured
	stop := make(chan struct{})
	sampled := make(chan int64, 1)
	go func() {
		var peak int64
		if o.Sample <= 0 {
			<-stop
			sampled <- 0
			return
		}
		t := time.NewTicker(o.Sample)
		defer t.Stop()
		for {
			if st, err := bench.ReadStatus(pid); err == nil && st.VmHWM > peak {
				peak = st.VmHWM
			}
			if o.OnSample != nil {
				o.OnSample(pid)
			}
			select {
			case <-stop:
				sampled <- peak
				return
			case <-t.C:
			}
		}
	}()
	// Wait for the exit without reaping, so /proc/<pid>/stat still holds
	// the process's own CPU time.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	m.Wall = time.Since(start)
	if st, err := proc.ReadStat(pid); err == nil {
		m.OwnCPU = st.CPU()
	}
	close(stop)
	m.PeakRSS = <-sampled
	err := cmd.Wait()
	if ps := cmd.ProcessState; ps != nil {
		m.TotalCPU = ps.UserTime() + ps.SystemTime()
		m.Exit = ps.ExitCode()
	}
	m.Stdout, m.Stderr = out.String(), errb.String()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return m, fmt.Errorf("run %s: %w", cmd.Path, err)
	}
	return m, nil
}

// run runs a command to completion and returns its combined output; a
// non-zero exit is an error that quotes the output.
func run(ctx context.Context, env []string, dir, name string, args ...string) (string, error) {
	cmd := command(ctx, env, dir, name, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Run(); err != nil {
		return b.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(b.String(), 2000))
	}
	return b.String(), nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// copyTree copies a directory tree with cp -a, which keeps modes and times.
func copyTree(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("copy %s: %s already exists", src, dst)
	}
	_, err := run(ctx, os.Environ(), "", "cp", "-a", src, dst)
	return err
}

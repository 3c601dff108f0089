// Package proc starts short-lived helper processes (a version probe, a
// verification command) in their own process group, so that cancelling
// their context ends the whole tree, not just the leader.
package proc

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// Command is exec.CommandContext for a process that leads its own group:
// cancelling ctx sends SIGTERM to the group, then SIGKILL after grace
// (and Wait stops waiting for its pipes then too).
func Command(ctx context.Context, grace time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		go func(pid int) {
			time.Sleep(grace)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}(cmd.Process.Pid)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	cmd.WaitDelay = grace
	return cmd
}

// KillGroup sends SIGKILL to the process group led by cmd, to end anything
// the leader left behind after it exited.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

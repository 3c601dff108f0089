// Package proc is ralphd's one place for processes: starting a child in a
// process group of its own so that cancelling ends the whole tree, not
// just the leader; signalling a group; reading /proc (stat, environ, the
// process list); and the Linux child-subreaper setting. Everything that
// starts a subprocess (bd, the agent, the guard's real bd, acceptance
// commands, version probes) sets its group up here.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// Command is exec.CommandContext for a process that leads its own group:
// cancelling ctx sends SIGTERM to the group, then SIGKILL after grace
// (and Wait stops waiting for its pipes then too). A grace of 0 sends
// SIGKILL at once.
func Command(ctx context.Context, grace time.Duration, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	SetGroup(cmd)
	EndGroupOnCancel(cmd, grace)
	return cmd
}

// SetGroup makes cmd, not yet started, lead a process group of its own,
// keeping any SysProcAttr fields already set.
func SetGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// EndGroupOnCancel makes the cancellation of cmd (made with
// exec.CommandContext and SetGroup) end its whole group: SIGTERM, then
// SIGKILL after grace, when Wait also stops waiting for the pipes. A grace
// of 0 sends SIGKILL at once.
func EndGroupOnCancel(cmd *exec.Cmd, grace time.Duration) {
	cmd.Cancel = func() error {
		pid := cmd.Process.Pid
		if grace <= 0 {
			return SignalGroup(pid, syscall.SIGKILL)
		}
		err := SignalGroup(pid, syscall.SIGTERM)
		go func() {
			time.Sleep(grace)
			_ = SignalGroup(pid, syscall.SIGKILL)
		}()
		return err
	}
	if grace > 0 {
		cmd.WaitDelay = grace
	}
}

// SignalGroup sends sig to the process group pgid. A group that no longer
// exists is not an error.
func SignalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return fmt.Errorf("signal process group %d: not a process group", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", pgid, err)
	}
	return nil
}

// KillGroup sends SIGKILL to the process group led by cmd, to end anything
// the leader left behind after it exited.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
	}
}

// signalZero reports whether a process pid exists (kill(pid, 0)).
func signalZero(pid int) bool { return syscall.Kill(pid, 0) == nil }

// Sleep waits d, or until ctx ends, and returns ctx's error then. It is
// the one context-aware wait behind every retry, backoff and poll that
// waits between subprocess calls (bd claims, the loop's quota and poll
// waits, the merge queue's retries): a cancelled ctx ends it at once,
// and its timer is stopped either way.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

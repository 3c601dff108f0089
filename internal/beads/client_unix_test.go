//go:build unix

package beads_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// sleeperClient returns a Client whose bd starts a grandchild and sleeps,
// and the file the fake writes the grandchild's pid to.
func sleeperClient(t *testing.T) (*beads.Client, string) {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	t.Cleanup(func() {
		// Do not leak the grandchild if the test failed.
		if pid, err := readPid(pidFile); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	bin := writeScript(t, dir, fmt.Sprintf(sleepScript, shellQuote(pidFile)))
	return &beads.Client{Bin: bin, Dir: dir}, pidFile
}

// readPid reads the pid the sleeping fake wrote.
func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// waitGone waits until process pid has exited: it no longer exists or is
// a zombie. It fails the test if that takes unreasonably long, which only
// happens when the process was not killed at all.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if processGone(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running: the process group was not killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processGone reports whether pid has exited.
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// The state follows the parenthesised command name.
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] == 'Z' || s[i+2] == 'X'
		}
		return false
	}
	if _, serr := os.Stat("/proc/self/stat"); serr == nil {
		return true // /proc works and the pid is not in it
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// waitFile waits for the sleeping fake to write its pid file.
func waitFile(t *testing.T, path string, done <-chan struct{}) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-done:
			t.Fatal("bd returned before writing its pid file")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestClientCancelKillsProcessGroup(t *testing.T) {
	is := is.New(t)
	c, pidFile := sleeperClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = c.Ready(ctx, beads.ReadyOptions{})
	}()
	waitFile(t, pidFile, done)
	cancel()
	<-done

	is.True(errors.Is(err, context.Canceled)) // cancellation, not a timeout
	is.True(!errors.Is(err, beads.ErrTimeout))
	pid, perr := readPid(pidFile)
	is.NoErr(perr)
	waitGone(t, pid) // the grandchild died with the group
	is.Equal(c.Calls(), int64(1))
}

func TestClientTimeout(t *testing.T) {
	is := is.New(t)
	c, pidFile := sleeperClient(t)
	c.Timeout = 2 * time.Second

	_, err := c.List(context.Background(), beads.ListOptions{Status: "open"})
	is.True(errors.Is(err, beads.ErrTimeout))
	is.True(errors.Is(err, context.DeadlineExceeded))
	var te *beads.TimeoutError
	is.True(errors.As(err, &te))
	is.Equal(te.Timeout, 2*time.Second)
	is.Equal(te.Args, argv("list", "--limit", "0", "--status", "open", "--json"))
	is.True(strings.Contains(err.Error(), "bd list --limit 0 --status open --json")) // names the command
	is.True(strings.Contains(err.Error(), "2s"))                                     // and the limit

	// The fake writes its pid file right after it starts; on a very slow
	// machine the timeout may come first, and the cancel test covers the
	// group kill deterministically.
	if pid, err := readPid(pidFile); err == nil {
		waitGone(t, pid)
	} else {
		t.Logf("fake was killed before it started its child: %v", err)
	}
}

func TestClientStrayChildKeepsOutputOpen(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	t.Cleanup(func() {
		if pid, err := readPid(pidFile); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// bd prints its result and exits 0, but leaves a child that holds its
	// stdout open. The call still returns bd's output.
	script := fmt.Sprintf("#!/bin/sh\nsleep 600 &\necho $! > %s\necho '[]'\nexit 0\n", shellQuote(pidFile))
	c := &beads.Client{Bin: writeScript(t, dir, script), Dir: dir}
	got, err := c.Blocked(context.Background())
	is.NoErr(err)
	is.Equal(len(got), 0)
}

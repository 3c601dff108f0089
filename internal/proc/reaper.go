//go:build linux

package proc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReaperCommand is the hidden ralphd subcommand that runs a reaper:
// `ralphd internal-reaper CGROUP PID GRACE`.
const ReaperCommand = "internal-reaper"

// reaperKillWait bounds how long a reaper keeps killing a cgroup that does
// not empty (processes in uninterruptible sleep).
const reaperKillWait = 5 * time.Second

// Containment starts iterations in cgroups of their own under Parent,
// each watched by a reaper run from Self (ralphd's own executable).
type Containment struct {
	Parent Parent
	Self   string
}

// Describe says how iterations are contained, for status and the log.
func (c *Containment) Describe() string {
	if c == nil {
		return "process group and child subreaper (no usable cgroup v2)"
	}
	return "cgroup v2 under " + c.Parent.Dir
}

// Iteration is one iteration's cgroup and its reaper.
type Iteration struct {
	Group  *Group
	reaper *exec.Cmd
	exited chan struct{}
}

// Start creates the cgroup for one iteration (name is part of its
// directory's name) and starts its reaper: a process that outlives ralphd
// and, once ralphd is gone, gives the cgroup's processes SIGTERM and,
// after grace, SIGKILL. Start the agent in Group (SysProcAttr.CgroupFD)
// and call Close when the iteration is over.
func (c *Containment) Start(name string, grace time.Duration) (*Iteration, error) {
	g, err := c.Parent.New(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.Self, ReaperCommand, g.Path, strconv.Itoa(os.Getpid()), grace.String())
	// Its own process group: a terminal's ^C or a signal to ralphd's group
	// does not reach it.
	SetGroup(cmd)
	if err := cmd.Start(); err != nil {
		_ = g.Remove()
		return nil, fmt.Errorf("start the iteration's reaper: %w", err)
	}
	it := &Iteration{Group: g, reaper: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(it.exited)
	}()
	return it, nil
}

// ReaperAlive reports whether the reaper still runs; a reaper that died
// while its iteration ran was killed by someone.
func (it *Iteration) ReaperAlive() bool {
	select {
	case <-it.exited:
		return false
	default:
		return true
	}
}

// Close ends whatever is still in the cgroup (at once: the caller has
// given the iteration its grace already), removes the cgroup, and stops
// the reaper. It returns how many processes could not be ended.
func (it *Iteration) Close() int {
	left := it.Group.End(time.Now(), reaperKillWait)
	_ = it.Group.Remove()
	if it.reaper.Process != nil {
		_ = it.reaper.Process.Kill()
	}
	<-it.exited
	return left
}

// waitOwner returns once the process ppid (our parent) is gone, a signal
// arrives on term, or path no longer exists. It learns of the parent's
// death at once through a pidfd where the kernel has them (Linux 5.3),
// and by polling getppid otherwise.
func waitOwner(ppid int, path string, term <-chan os.Signal) {
	pidfd := -1
	if fd, err := unix.PidfdOpen(ppid, 0); err == nil {
		pidfd = fd
		defer unix.Close(fd)
	}
	for os.Getppid() == ppid { // checked after the open: no death is missed
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return
		}
		select {
		case <-term:
			return
		default:
		}
		if pidfd < 0 {
			time.Sleep(pollInterval)
			continue
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, int(ownerPoll/time.Millisecond)); err == nil && n > 0 {
			return // the parent has exited
		}
	}
}

// ownerPoll bounds how long the reaper sleeps in poll(2) between looks at
// its cgroup and its signals.
const ownerPoll = 200 * time.Millisecond

// RunReaper is the reaper's main (see Containment.Start), with args
// CGROUP PID GRACE. It waits until the process PID (ralphd, its parent)
// is gone or it gets SIGTERM, then ends the cgroup's processes within
// GRACE and removes the cgroup. When the cgroup goes away first (ralphd
// ended the iteration itself), it exits at once.
func RunReaper(args []string, stderr io.Writer) int {
	if len(args) != 3 {
		fmt.Fprintln(stderr, "usage: ralphd "+ReaperCommand+" CGROUP PID GRACE")
		return 2
	}
	path := args[0]
	ppid, err1 := strconv.Atoi(args[1])
	grace, err2 := time.ParseDuration(args[2])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(stderr, "ralphd %s: %v\n", ReaperCommand, err)
		return 2
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	waitOwner(ppid, path, term)
	g, err := Open(path)
	if err != nil {
		return 0 // already gone
	}
	if left := g.End(time.Now().Add(grace), reaperKillWait); left > 0 {
		fmt.Fprintf(stderr, "ralphd %s: %d process(es) of %s could not be ended\n", ReaperCommand, left, path)
	}
	_ = g.Remove()
	return 0
}

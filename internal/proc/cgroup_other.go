//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Prefix starts the name of every cgroup ralphd creates.
const Prefix = "ralphd-"

// ReaperCommand is the hidden ralphd subcommand that runs a reaper.
const ReaperCommand = "internal-reaper"

var errUnsupported = errors.New("cgroups exist on Linux only")

// Parent is a cgroup v2 directory; there are none outside Linux.
type Parent struct{ Dir string }

// Find always fails outside Linux.
func Find() (Parent, error) { return Parent{}, errUnsupported }

// Sweep does nothing outside Linux.
func Sweep(Parent, time.Duration) []string { return nil }

// Group is a cgroup; there are none outside Linux.
type Group struct{ Path string }

// FD is never used outside Linux.
func (g *Group) FD() int { return -1 }

// Containment cannot start anything outside Linux.
type Containment struct {
	Parent Parent
	Self   string
}

// Describe says how iterations are contained.
func (c *Containment) Describe() string { return "process group (no cgroups on this system)" }

// Start always fails outside Linux.
func (c *Containment) Start(string, time.Duration) (*Iteration, error) { return nil, errUnsupported }

// Iteration is never made outside Linux.
type Iteration struct{ Group *Group }

// ReaperAlive is always false.
func (it *Iteration) ReaperAlive() bool { return false }

// End does nothing.
func (g *Group) End(time.Time, time.Duration) int { return 0 }

// Close does nothing.
func (it *Iteration) Close() int { return 0 }

// RunReaper is never used outside Linux.
func RunReaper(_ []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, errUnsupported)
	return 2
}

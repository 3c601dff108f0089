//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// DieWithParent does nothing outside Linux, which has no parent-death
// signal.
func DieWithParent(*syscall.SysProcAttr) {}

// BecomeSubreaper is only supported on Linux.
func BecomeSubreaper() error {
	return errors.New("become child subreaper: not supported on this system")
}

// IsSubreaper is always false outside Linux.
func IsSubreaper() bool { return false }

// SelfSID is 0 outside Linux.
func SelfSID() int { return 0 }

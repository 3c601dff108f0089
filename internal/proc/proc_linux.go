//go:build linux

package proc

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DieWithParent makes the kernel SIGKILL cmd's process, not yet started,
// when the thread that started it dies. Go never ends its threads while
// they are in use (only a goroutine that exits while locked to its thread
// takes the thread with it), so in practice the child dies with ralphd.
func DieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// BecomeSubreaper makes the calling process a child subreaper
// (prctl(PR_SET_CHILD_SUBREAPER)): orphaned descendants, such as a process
// an agent started with setsid or a double fork, are re-parented to this
// process instead of init, so that they can be found and reaped. Call it
// once, early in main; it affects the whole process.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	return nil
}

// IsSubreaper reports whether the calling process is a child subreaper.
func IsSubreaper() bool {
	var v int32
	// PR_GET_CHILD_SUBREAPER stores an int at the address in arg2.
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
	return err == nil && v != 0
}

// SelfSID returns the session id of the calling process, or 0.
func SelfSID() int {
	sid, err := unix.Getsid(0)
	if err != nil {
		return 0
	}
	return sid
}

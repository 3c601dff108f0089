//go:build linux

package agent

import "syscall"

// intoCgroup makes the process start inside the cgroup open as fd
// (clone3 with CLONE_INTO_CGROUP), so that it never runs outside it.
func intoCgroup(a *syscall.SysProcAttr, fd int) {
	a.UseCgroupFD = true
	a.CgroupFD = fd
}

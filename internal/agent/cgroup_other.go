//go:build !linux

package agent

import "syscall"

// intoCgroup does nothing: there are no cgroups outside Linux.
func intoCgroup(*syscall.SysProcAttr, int) {}

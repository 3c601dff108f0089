//go:build unix

package main

import "golang.org/x/sys/unix"

// unixAccessW reports whether this process may write in dir.
func unixAccessW(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

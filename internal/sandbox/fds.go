package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// SealFDs marks every open file descriptor of this process above stderr
// close-on-exec, so that no child started afterwards inherits one that
// was opened without the flag: Go opens its own with it, but ralphd may
// have inherited others from whatever started it (a terminal, an editor,
// a supervisor), and one of those may be a connection to a program
// outside the sandbox. A child still gets its stdio and the files passed
// to it explicitly (exec.Cmd.ExtraFiles).
//
// Call it before starting a sandboxed agent; bwrap passes on whatever it
// inherits.
func SealFDs() error { return sealFDs() }

func sealFDs() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list open files: %w", err)
	}
	names, err := d.Readdirnames(-1)
	self := int(d.Fd())
	if err != nil {
		d.Close()
		return fmt.Errorf("list open files: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 || fd == self {
			continue
		}
		syscall.CloseOnExec(fd)
	}
	return d.Close()
}

//go:build linux

package broker

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// peerCred returns the pid and uid of the process at the other end of
// conn, as the kernel recorded them when it connected.
func peerCred(conn *net.UnixConn) (pid, uid int, err error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return int(cred.Pid), int(cred.Uid), nil
}

// maxDepth bounds the walk up the parent chain.
const maxDepth = 256

// descendsFrom reports whether pid is leader or one of its descendants,
// following parent pids in /proc. A process that detached (setsid and a
// double fork) is re-parented away from the leader and is refused; in a
// sandbox it is re-parented to the sandbox's init, a child of the leader.
func descendsFrom(pid, leader int) bool {
	for range maxDepth {
		if pid == leader {
			return true
		}
		if pid <= 1 {
			return false
		}
		ppid, err := parentOf(pid)
		if err != nil {
			return false
		}
		pid = ppid
	}
	return false
}

// parentOf reads a process's parent pid from /proc/<pid>/stat (field 4,
// after the command name, which may hold spaces and parentheses).
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	if i < 0 || len(f) < 2 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	return strconv.Atoi(string(f[1]))
}

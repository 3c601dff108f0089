//go:build linux

package broker

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/ralphd/ralphd/internal/proc"
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
		st, err := proc.ReadStat(pid)
		if err != nil {
			return false
		}
		pid = st.PPID
	}
	return false
}

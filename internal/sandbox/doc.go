// Package sandbox runs a BUILD agent under bubblewrap (bwrap), so that what
// belongs to PLANNING and to ralphd cannot be written from inside it.
//
// The sandbox shows the agent the whole filesystem read-only, then binds
// back, writable, only what the agent must write: the work tree, its
// private temp dir, and its CLI's own config and cache dirs (Project.AgentDirs).
// Over those it binds read-only again the tracker (.beads/), ralphd's
// project config (.ralph/), git's config and hooks, and ralphd's state
// dir. The agent runs in a pid namespace of its own with no
// capabilities, so it cannot see, signal or trace ralphd, cannot remount
// what was bound read-only, and nothing it starts outlives it: when the
// agent's leader exits, the namespace's init exits and the kernel kills
// what is left.
//
// Read-only is not enough for IPC: connect() on a unix socket and open()
// on a FIFO work through a read-only mount. So /tmp, /run and the user's
// runtime dir are private tmpfs (what the agent needs there is bound
// back), sockets and FIFOs found near the top of the home dir are masked
// by an empty file, IPC, UTS and cgroup namespaces are the sandbox's own,
// and SealFDs keeps ralphd's inherited fds from reaching the agent. With
// Net the sandbox has its own network namespace too (no abstract unix
// sockets, no host loopback), and the agent's only way out is Proxy, an
// HTTP proxy that ralphd runs on a unix socket and that lets through the
// allowed hosts only; the forwarder (ForwarderCommand) carries the
// agent's connections from 127.0.0.1 inside the namespace to it.
//
// Layout builds bwrap's argv; Probe says whether bwrap can run here and
// Choose turns the `sandbox` setting (auto, bwrap, off) and a Probe into
// a decision.
package sandbox

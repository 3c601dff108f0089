// Package sandbox runs a BUILD agent under bubblewrap (bwrap), so that what
// belongs to PLANNING and to ralphd cannot be written from inside it.
//
// The sandbox shows the agent the whole filesystem read-only, then binds
// back, writable, only what the agent must write: the work tree, its
// private temp dir, and its CLI's own config and cache dirs (Project.AgentDirs).
// Over those it binds read-only again the tracker (.beads/), ralphd's
// project config (.ralph/), git's config and hooks, and ralphd's state
// dir. The network stays open (the agent must reach its model). The agent
// runs in a pid namespace of its own with no capabilities, so it cannot
// see, signal or trace ralphd, cannot remount what was bound read-only,
// and nothing it starts outlives it: when the agent's leader exits, the
// namespace's init exits and the kernel kills what is left.
//
// Layout builds bwrap's argv; Probe says whether bwrap can run here and
// Choose turns the `sandbox` setting (auto, bwrap, off) and a Probe into
// a decision.
package sandbox

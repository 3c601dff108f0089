package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Layout says what a sandboxed agent may write. Everything else is
// visible and read-only.
type Layout struct {
	// Writable paths are bound read-write at the same path. Missing ones
	// are left out.
	Writable []string
	// Dirs are writable dirs that Prepare makes when they are missing (the
	// agent CLI's own dirs, which it would make on its first run).
	Dirs []string
	// ReadOnly paths are bound read-only, over any writable path that
	// contains them. Missing ones are left out.
	ReadOnly []string
	// Sealed dirs are read-only too, and when one does not exist inside a
	// writable path an empty read-only dir takes its place, so the agent
	// cannot create it (bwrap leaves the empty dir behind as the mount
	// point). One missing outside every writable path is left out: the
	// agent cannot create it, and bwrap could not make its mount point.
	Sealed []string
	// Hidden dirs are replaced by an empty private tmpfs (the user's
	// runtime dir, whose sockets reach services outside the sandbox).
	// Missing ones are left out.
	Hidden []string
}

// Prepare makes the missing Dirs (mode 0700), so that they can be bound
// writable.
func (l Layout) Prepare() error {
	for _, d := range l.Dirs {
		if !filepath.IsAbs(d) {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("make %s for the sandboxed agent: %w", d, err)
		}
	}
	return nil
}

// mount is one bwrap mount operation.
type mount struct {
	path string
	op   []string // bwrap options, without the paths
	rank int      // at the same path, lower ranks go first
}

// Args returns the command line that runs argv under bwrap with this
// layout. The order of bwrap's mounts matters (a later mount covers an
// earlier one at or above its path), so mounts are sorted by depth: a
// read-only dir inside the writable work tree is bound after it.
//
// The sandbox has its own pid namespace with a fresh /proc, a minimal
// /dev, no capabilities, a new session (no controlling terminal to inject
// keystrokes into), and dies with its parent. The network is shared.
func (l Layout) Args(bwrap string, argv []string) []string {
	args := []string{bwrap,
		"--die-with-parent", "--new-session", "--unshare-pid", "--cap-drop", "ALL",
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
	}
	var ms []mount
	for _, p := range clean(l.Hidden) {
		if isDir(p) {
			ms = append(ms, mount{p, []string{"--tmpfs"}, 0})
		}
	}
	var writable []string
	for _, p := range clean(append(l.Writable, l.Dirs...)) {
		if exists(p) {
			ms = append(ms, mount{p, []string{"--bind", p}, 1})
			writable = append(writable, p)
		}
	}
	for _, p := range clean(l.ReadOnly) {
		if exists(p) {
			ms = append(ms, mount{p, []string{"--ro-bind", p}, 2})
		}
	}
	for _, p := range clean(l.Sealed) {
		switch {
		case exists(p):
			ms = append(ms, mount{p, []string{"--ro-bind", p}, 2})
		case isDir(filepath.Dir(p)) && slices.ContainsFunc(writable, func(w string) bool { return within(p, w) }):
			// An empty tmpfs, made read-only once mounted.
			ms = append(ms, mount{p, []string{"--tmpfs"}, 2}, mount{p, []string{"--remount-ro"}, 3})
		}
	}
	slices.SortStableFunc(ms, func(a, b mount) int {
		if d := depth(a.path) - depth(b.path); d != 0 {
			return d
		}
		return a.rank - b.rank
	})
	for _, m := range ms {
		args = append(args, m.op...)
		args = append(args, m.path)
	}
	args = append(args, "--")
	return append(args, argv...)
}

// clean makes paths absolute and clean, resolves symlinks where it can
// (bwrap binds what a path resolves to, and the order of mounts must
// follow the resolved paths), and drops duplicates.
func clean(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		} else if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(r, filepath.Base(p))
		}
		if p == "/" || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func depth(p string) int { return strings.Count(p, "/") }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

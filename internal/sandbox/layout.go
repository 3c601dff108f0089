package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
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
	// Hidden dirs are replaced by an empty private tmpfs: /tmp, /run and
	// the user's runtime dir, whose sockets reach programs outside the
	// sandbox (a read-only mount does not stop connect() on a unix
	// socket). What an agent needs inside them is bound back by Writable
	// or ReadOnly, which go deeper. Missing ones are left out.
	Hidden []string
	// Masked are sockets and FIFOs outside the hidden dirs (found by
	// Strays), each covered by MaskWith, an empty read-only file.
	Masked   []string
	MaskWith string
	// Secrets are files and dirs the agent must not read at all (the
	// user's forge logins): a file is covered by MaskWith, a dir by an
	// empty read-only tmpfs. Missing ones are left out.
	Secrets []string
	// Binds are dirs of ralphd's bound writable in place of others (the
	// agent's own cache dir at the user's): Prepare makes both ends.
	Binds []Bind
	// Private are dirs of the agent CLI's state it later executes from
	// (Gemini CLI's checkpoint repositories), each replaced by a dir of
	// ralphd's (Src) kept between runs: Prepare makes Src, and Dest only
	// where its parent dir exists (no ~/.gemini is made for a user who
	// has none).
	Private []Bind
	// Copies are files the agent gets a copy of: Prepare copies each
	// Dest that is a regular file to Src, which is bound writable at
	// Dest. What the agent writes there is dropped with Src.
	Copies []Bind
	// Net, when set, gives the sandbox a network namespace of its own;
	// nil shares the host's network.
	Net *Net
}

// Bind is a path bound at another inside the sandbox.
type Bind struct{ Src, Dest string }

// maxCopy bounds a file Prepare copies (Layout.Copies): one larger is not
// copied, and stays read-only.
const maxCopy = 64 << 20

// Net is the network of a sandbox with a network namespace of its own:
// only loopback, and a way out through ralphd's proxy when Socket is set.
type Net struct {
	// Socket is the proxy's unix socket (Proxy). Its dir is bound
	// read-only into the sandbox, and the agent starts under Forwarder,
	// which listens on 127.0.0.1 inside the namespace, forwards what
	// reaches it to Socket, and points the agent's proxy variables at
	// itself. Empty: no way out at all.
	Socket string
	// Forwarder is the executable that runs ForwarderCommand: ralphd
	// itself. It is bound read-only into the sandbox.
	Forwarder string
	// NoProxy are the hosts the agent reaches directly, inside the
	// namespace (NoProxy says which).
	NoProxy []string
	// Pass are allowed endpoints on the host's loopback (Allow.Loopback)
	// that the forwarder also serves at the same address inside the
	// namespace, through the proxy.
	Pass []string
}

// Prepare makes the missing Dirs (mode 0700), so that they can be bound
// writable, and the empty file that masks strays and secrets.
func (l Layout) Prepare() error {
	if l.MaskWith != "" && (len(l.Masked) > 0 || len(l.Secrets) > 0) {
		if err := os.WriteFile(l.MaskWith, nil, 0o444); err != nil {
			return fmt.Errorf("make the sandbox's mask file: %w", err)
		}
	}
	for _, d := range l.Dirs {
		if !filepath.IsAbs(d) {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("make %s for the sandboxed agent: %w", d, err)
		}
	}
	for _, b := range l.Binds {
		for _, d := range []string{b.Src, b.Dest} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return fmt.Errorf("make %s for the sandboxed agent: %w", d, err)
			}
		}
	}
	for _, b := range l.Private {
		if err := os.MkdirAll(b.Src, 0o700); err != nil {
			return fmt.Errorf("make %s for the sandboxed agent: %w", b.Src, err)
		}
		if isDir(filepath.Dir(b.Dest)) {
			if err := os.Mkdir(b.Dest, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("make %s for the sandboxed agent: %w", b.Dest, err)
			}
		}
	}
	for _, c := range l.Copies {
		if err := copyFile(c.Dest, c.Src); err != nil {
			return fmt.Errorf("copy %s for the sandboxed agent: %w", c.Dest, err)
		}
	}
	return nil
}

// copyFile copies from, when it is a regular file no larger than maxCopy,
// to a new file to (0600), making its dir. Anything else is not copied.
func copyFile(from, to string) error {
	b, err := atomicfile.Read(from, maxCopy)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, atomicfile.ErrNotRegular) || errors.Is(err, atomicfile.ErrTooLarge) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(to, b, 0o600)
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
// The sandbox has its own pid, IPC (System V and POSIX message queues),
// UTS and, where the kernel allows, cgroup namespaces, a fresh /proc, a
// minimal /dev with a private /dev/shm, no capabilities, a new session
// (no controlling terminal to inject keystrokes into), and dies with its
// parent. With Net it has its own network namespace too, which also
// takes abstract unix sockets (they belong to a network namespace) and
// the host's loopback out of reach; without, the network is shared.
func (l Layout) Args(bwrap string, argv []string) []string {
	args := []string{bwrap,
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	}
	if l.Net != nil {
		args = append(args, "--unshare-net")
	}
	args = append(args,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
	)
	var ms []mount
	readOnly := l.ReadOnly
	if n := l.Net; n != nil && n.Socket != "" {
		readOnly = append(slices.Clip(readOnly), filepath.Dir(n.Socket), n.Forwarder)
		fwd := []string{n.Forwarder, ForwarderCommand, "-socket", n.Socket, "-no-proxy", strings.Join(n.NoProxy, ",")}
		if len(n.Pass) > 0 {
			fwd = append(fwd, "-pass", strings.Join(n.Pass, ","))
		}
		argv = append(append(fwd, "--"), argv...)
	}
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
	for _, b := range slices.Concat(l.Binds, l.Private, l.Copies) {
		// A dir on a dir, a file on a file: bwrap can bind nothing else.
		dest := clean([]string{b.Dest})
		if len(dest) == 1 && exists(b.Src) && exists(dest[0]) && isDir(b.Src) == isDir(dest[0]) {
			ms = append(ms, mount{dest[0], []string{"--bind", b.Src}, 1})
			writable = append(writable, dest[0])
		}
	}
	for _, p := range clean(readOnly) {
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
	if l.MaskWith != "" && exists(l.MaskWith) {
		for _, p := range clean(l.Masked) {
			if n := l.Net; n != nil && n.Socket != "" && within(p, filepath.Dir(n.Socket)) {
				continue // the proxy's socket, which ralphd gives the agent
			}
			ms = append(ms, mount{p, []string{"--ro-bind", l.MaskWith}, 4})
		}
	}
	for _, p := range clean(l.Secrets) {
		switch {
		case isDir(p):
			ms = append(ms, mount{p, []string{"--tmpfs"}, 5}, mount{p, []string{"--remount-ro"}, 6})
		case exists(p) && l.MaskWith != "" && exists(l.MaskWith):
			ms = append(ms, mount{p, []string{"--ro-bind", l.MaskWith}, 5})
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

// How far Strays looks: dirs this deep below a root, this many entries
// in all (a home dir's sockets sit near its top: ~/.ssh, ~/.gnupg, an
// editor's server dir).
const (
	strayDepth  = 3
	strayBudget = 20000
)

// Strays returns the unix sockets and FIFOs in roots, down to depth
// levels below each, looking at no more than budget entries, and not
// inside skip (dirs the sandbox hides, or binds writable: the agent
// may make sockets there itself). Symlinks are not followed.
func Strays(roots, skip []string, depth, budget int) []string {
	skip = clean(skip)
	var out []string
	for _, root := range clean(roots) {
		base := strings.Count(root, "/")
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if budget--; budget < 0 {
				return filepath.SkipAll
			}
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if p != root && (slices.Contains(skip, p) || strings.Count(p, "/")-base > depth) {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type()&(fs.ModeSocket|fs.ModeNamedPipe) != 0 && !slices.ContainsFunc(skip, func(s string) bool { return within(p, s) }) {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

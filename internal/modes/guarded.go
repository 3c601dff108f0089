package modes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// guardedHold is what a BUILD iteration found, before its agent started,
// of the agent CLIs' own configuration (agent.GuardedAll: settings with
// hooks and MCP servers, plugins, instructions, of every backend, since
// PLANNING or your own session may run another CLI than the agent). The
// sandbox binds what exists read-only; a path the agent made where there
// was none (the sandbox cannot stop that in a dir the CLI writes), and,
// without the sandbox, any change, is put back after the checks: what the
// iteration left there is moved aside, never deleted, and the held file
// or link written back.
type guardedHold []heldPath

// heldPath is one guarded path as held.
type heldPath struct {
	path string
	fi   fs.FileInfo // nil: there was none
	link string      // a link's target
	data []byte      // a regular file's content; nil past maxGuardedFile
}

// maxGuardedFile bounds a guarded file ralphd holds the content of.
const maxGuardedFile = 1 << 20

// holdGuarded takes each of paths as it is now.
func holdGuarded(paths []string) guardedHold {
	var g guardedHold
	for _, p := range paths {
		h := heldPath{path: p}
		fi, err := os.Lstat(p)
		if err == nil {
			h.fi = fi
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				h.link, _ = os.Readlink(p)
			case fi.Mode().IsRegular() && fi.Size() <= maxGuardedFile:
				h.data = readGuarded(p)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			continue // cannot be told: not held
		}
		g = append(g, h)
	}
	return g
}

// absent returns the held paths that did not exist.
func (g guardedHold) absent() []string {
	var out []string
	for _, h := range g {
		if h.fi == nil {
			out = append(out, h.path)
		}
	}
	return out
}

// sweepGuarded is guardedHold's restore after a crash, for what the
// running record kept (state.Running.GuardedAbsent): each path made
// since the iteration began is moved aside. Only paths that are guarded
// count: a record that names another file moves nothing. What changed
// of those that existed is not known after a crash (the sandbox keeps
// them read-only).
func sweepGuarded(absent, guarded []string, now time.Time) (changes []string, err error) {
	var g guardedHold
	for _, p := range absent {
		if slices.Contains(guarded, p) {
			g = append(g, heldPath{path: p})
		}
	}
	return g.restore(now)
}

// readGuarded reads a regular file without following a link or blocking
// on a FIFO swapped in; nil when it cannot.
func readGuarded(path string) []byte {
	b, err := atomicfile.Read(path, maxGuardedFile)
	if err != nil {
		return nil
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// restore puts back each held path the iteration changed and returns a
// line for each, for the violation.
func (g guardedHold) restore(now time.Time) (changes []string, err error) {
	var errs []error
	for i := range g {
		c, err := g[i].restore(now)
		if c != "" {
			changes = append(changes, c)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return changes, errors.Join(errs...)
}

// restore puts h back; what it writes back is held from then on.
func (h *heldPath) restore(now time.Time) (string, error) {
	cur, err := os.Lstat(h.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("look at %s: %w", h.path, err)
	}
	if h.fi == nil && cur != nil && cur.IsDir() && emptyDir(h.path) {
		// A CLI makes its own dirs when it starts: nothing in an empty
		// one runs. Removed all the same, so that no later iteration
		// finds it held as there and fills it unseen.
		_ = os.Remove(h.path)
		return "", nil
	}
	if h.unchanged(cur) {
		return "", nil
	}
	const why = "an agent CLI's configuration, which an unsandboxed run of it (PLANNING, your own session) would load"
	moved := ""
	if cur != nil {
		if moved, err = moveAside(h.path, now); err != nil {
			return fmt.Sprintf("%s was changed (%s), and could not be moved aside", h.path, why), err
		}
	}
	switch {
	case h.fi == nil:
		return fmt.Sprintf("%s was made (%s); moved to %s", h.path, why, movedOrGone(moved)), nil
	case h.fi.Mode()&fs.ModeSymlink != 0:
		if err := os.Symlink(h.link, h.path); err != nil {
			return fmt.Sprintf("%s was changed (%s); moved to %s, and the link could not be put back", h.path, why, moved), err
		}
	case h.fi.Mode().IsRegular() && h.data != nil:
		if err := atomicfile.Write(h.path, h.data, h.fi.Mode().Perm()); err != nil {
			return fmt.Sprintf("%s was changed (%s); moved to %s, and it could not be put back", h.path, why, moved), err
		}
		if fi, err := os.Lstat(h.path); err == nil {
			h.fi = fi
		}
	default: // a dir, or a file too large to hold
		h.fi = nil // gone: held as gone from now on
		return fmt.Sprintf("%s was replaced (%s); moved to %s (what was there is not held: look for it)", h.path, why, movedOrGone(moved)), nil
	}
	if moved == "" {
		return fmt.Sprintf("%s was removed (%s); put back", h.path, why), nil
	}
	return fmt.Sprintf("%s was changed (%s); put back, and what the iteration left moved to %s", h.path, why, moved), nil
}

func movedOrGone(moved string) string {
	if moved == "" {
		return "nowhere: it was gone"
	}
	return moved
}

// unchanged reports whether cur (nil: gone) is what h held: the same
// file, link or dir, and for a held file the same content.
func (h heldPath) unchanged(cur fs.FileInfo) bool {
	switch {
	case h.fi == nil || cur == nil:
		return h.fi == nil && cur == nil
	case h.fi.Mode().Type() != cur.Mode().Type():
		return false
	case h.fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(h.path)
		return err == nil && link == h.link
	case !os.SameFile(h.fi, cur):
		return false
	case h.fi.Mode().IsRegular() && h.data != nil:
		return bytes.Equal(readGuarded(h.path), h.data) && cur.Mode().Perm() == h.fi.Mode().Perm()
	case h.fi.Mode().IsRegular():
		return cur.Size() == h.fi.Size() && cur.ModTime().Equal(h.fi.ModTime())
	}
	return true
}

// emptyDir reports whether dir holds nothing.
func emptyDir(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// moveAside renames path to a free name beside it, which no agent CLI
// reads: <path>.ralphd-moved-<time>[-N].
func moveAside(path string, now time.Time) (string, error) {
	base := fmt.Sprintf("%s.ralphd-moved-%s", path, now.UTC().Format("20060102T150405Z"))
	for i := 0; i < 100; i++ {
		to := base
		if i > 0 {
			to = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := os.Lstat(to); err == nil {
			continue
		}
		if err := os.Rename(path, to); err != nil {
			return "", fmt.Errorf("move %s aside: %w", path, err)
		}
		return to, nil
	}
	return "", fmt.Errorf("move %s aside: no free name beside it", path)
}

// A watch tells when a beads database has really changed.
//
// Real bd 1.0.5 rewrites its Dolt manifest, journal index and journal with
// identical bytes even on read-only commands, and `bd show` rewrites
// .beads/last-touched. Watching mtimes, or waking on any fsnotify event,
// would therefore wake ralphd on its own reads. This package compares
// content instead: a Fingerprint of the files that hold bd's data, which
// changes only when their bytes or sizes do.

package modes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// ignored reports whether a file or directory name under .beads/ changes
// without bd's data changing, or is rewritten by bd's own reads.
func ignored(name string) bool {
	switch name {
	case "last-touched", // rewritten by `bd show`
		"hooks", "backup", "bd.sock", "daemon.pid":
		return true
	}
	return strings.HasSuffix(name, ".lock") || name == ".lock" || strings.HasSuffix(name, ".log") ||
		strings.HasSuffix(name, ".tmp") || strings.HasPrefix(name, ".tmp")
}

// Files up to this size are hashed whole; larger ones (a Dolt journal, a
// SQLite database) by size plus their first and last blocks. Appends change
// the size; SQLite bumps its change counter in the header on every write.
const (
	wholeFileLimit = 256 << 10
	headBytes      = 4 << 10
	tailBytes      = 64 << 10
)

// Fingerprint returns a digest of the content of the beads data under dir
// (a .beads directory). It changes when bd writes and not when bd only
// reads. A missing dir has the fingerprint "absent".
func Fingerprint(dir string) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "absent", nil
	}
	type entry struct {
		rel string
		sum string
	}
	var entries []entry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if path != dir && ignored(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		sum, err := fileSum(path)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, atomicfile.ErrNotRegular) {
			return nil // removed, or no longer a regular file, since listed
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		entries = append(entries, entry{rel, sum})
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%s\n", e.rel, e.sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// fileSum sums the regular file at path. It never blocks on a FIFO put
// in the file's place since it was listed (an agent can write .beads/):
// that is an error wrapping atomicfile.ErrNotRegular.
func fileSum(path string) (string, error) {
	f, err := atomicfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d:", st.Size())
	if st.Size() <= wholeFileLimit {
		if _, err := io.Copy(h, f); err != nil {
			return "", err
		}
	} else {
		if _, err := io.CopyN(h, f, headBytes); err != nil {
			return "", err
		}
		if _, err := f.Seek(-tailBytes, io.SeekEnd); err != nil {
			return "", err
		}
		if _, err := io.Copy(h, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Waiter blocks until the beads data under Dir changes.
type Waiter struct {
	Dir      string        // the .beads directory
	Debounce time.Duration // quiet time after the last event before looking (default 500ms)
	Poll     time.Duration // fallback check interval (default 60s)

	// OnCheck, if set, is called each time the waiter computes a
	// fingerprint, with why ("event" or "poll"); tests and benchmarks use it
	// to count wake-ups.
	OnCheck func(reason string)
}

// Wait returns the new fingerprint once the content under w.Dir differs from
// since. It makes no bd calls: it reads files only. It survives the
// directory being removed and created again.
func (w *Waiter) Wait(ctx context.Context, since string) (string, error) {
	debounce, poll := w.Debounce, w.Poll
	if debounce <= 0 {
		debounce = 500 * time.Millisecond
	}
	if poll <= 0 {
		poll = 60 * time.Second
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return "", fmt.Errorf("watch %s: %w", w.Dir, err)
	}
	defer fw.Close()
	parent := filepath.Dir(w.Dir)
	if err := fw.Add(parent); err != nil {
		return "", fmt.Errorf("watch %s: %w", parent, err)
	}
	watched := map[string]bool{}
	w.sync(fw, watched)

	check := func(reason string) (string, bool, error) {
		if w.OnCheck != nil {
			w.OnCheck(reason)
		}
		fp, err := Fingerprint(w.Dir)
		if err != nil {
			return "", false, err
		}
		return fp, fp != since, nil
	}
	// A change may have happened before we started watching.
	if fp, changed, err := check("start"); err != nil || changed {
		return fp, err
	}

	// A burst of events is looked at debounce after its first event, not
	// its last: reads by other processes (each bd call touches the
	// tracker's files) can go on without a pause, and a write among them
	// must not wait for the poll.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case ev, ok := <-fw.Events:
			if !ok {
				return "", errors.New("watch: fsnotify closed")
			}
			if !w.relevant(ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				w.sync(fw, watched)
			}
			if !armed {
				timer.Reset(debounce)
				armed = true
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return "", errors.New("watch: fsnotify closed")
			}
			return "", fmt.Errorf("watch %s: %w", w.Dir, err)
		case <-timer.C:
			armed = false
			fp, changed, err := check("event")
			if err != nil || changed {
				return fp, err
			}
		case <-ticker.C:
			w.sync(fw, watched)
			fp, changed, err := check("poll")
			if err != nil || changed {
				return fp, err
			}
		}
	}
}

// relevant reports whether an event path can affect the fingerprint.
func (w *Waiter) relevant(path string) bool {
	if path == w.Dir {
		return true
	}
	rel, err := filepath.Rel(w.Dir, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if ignored(part) {
			return false
		}
	}
	return true
}

// sync adds a watch on every directory under w.Dir not yet watched, and
// forgets the ones that are gone (fsnotify drops those by itself).
func (w *Waiter) sync(fw *fsnotify.Watcher, watched map[string]bool) {
	for d := range watched {
		if _, err := os.Stat(d); err != nil {
			delete(watched, d)
		}
	}
	_ = filepath.WalkDir(w.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if path != w.Dir && ignored(d.Name()) {
			return filepath.SkipDir
		}
		if !watched[path] && fw.Add(path) == nil {
			watched[path] = true
		}
		return nil
	})
}

// Package dirsnap holds a small directory tree in memory and puts it back:
// ralphd uses it for .ralph/, which belongs to PLANNING, around a BUILD
// iteration.
package dirsnap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// maxBytes bounds what a snapshot holds: .ralph/ is a few small files.
const maxBytes = 16 << 20

// Snapshot is the content of every regular file under a directory, by path
// relative to it. A directory that did not exist is an empty snapshot.
type Snapshot struct {
	dir   string
	files map[string]entry
}

type entry struct {
	data []byte
	mode fs.FileMode
}

// Take reads every file under dir. Anything but a regular file or a
// directory (a symlink, say) is held by its mode alone, so that it reads
// as a change if it is replaced.
func Take(dir string) (*Snapshot, error) {
	files, err := read(dir)
	if err != nil {
		return nil, err
	}
	return &Snapshot{dir: dir, files: files}, nil
}

func read(dir string) (map[string]entry, error) {
	files := map[string]entry{}
	total := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == dir {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			files[rel] = entry{mode: fi.Mode()}
			return nil
		}
		if total += int(fi.Size()); total > maxBytes {
			return fmt.Errorf("more than %d bytes under %s", maxBytes, dir)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[rel] = entry{data: data, mode: fi.Mode()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return files, nil
}

// Changed returns the files (relative to the directory) whose content or
// mode differs now, that appeared, or that went away, sorted.
func (s *Snapshot) Changed() ([]string, error) {
	now, err := read(s.dir)
	if err != nil {
		return nil, err
	}
	var changed []string
	for p, f := range now {
		if old, ok := s.files[p]; !ok || old.mode != f.mode || string(old.data) != string(f.data) {
			changed = append(changed, p)
		}
	}
	for p := range s.files {
		if _, ok := now[p]; !ok {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// Restore puts every held file back and removes the ones that appeared
// since. It returns what it changed, like Changed.
func (s *Snapshot) Restore() ([]string, error) {
	changed, err := s.Changed()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, p := range changed {
		path := filepath.Join(s.dir, p)
		f, ok := s.files[p]
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			continue
		}
		if !ok || !f.mode.IsRegular() {
			continue // an added file goes; a held non-file cannot be re-made, and is gone
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := (atomicfile.Writer{}).Write(path, f.data, f.mode.Perm()); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", p, err))
		}
	}
	return changed, errors.Join(errs...)
}

package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeStep is one step of an atomic file write. Tests inject failures and
// crashes before each step.
type writeStep int

const (
	stepCreateTemp writeStep = iota
	stepWrite
	stepChmod
	stepSync
	stepClose
	stepRename
	stepSyncDir
	numWriteSteps
)

// String returns the step's name, as used in test names.
func (s writeStep) String() string {
	switch s {
	case stepCreateTemp:
		return "create-temp"
	case stepWrite:
		return "write"
	case stepSync:
		return "fsync-file"
	case stepChmod:
		return "chmod"
	case stepClose:
		return "close"
	case stepRename:
		return "rename"
	case stepSyncDir:
		return "fsync-dir"
	}
	return fmt.Sprintf("step-%d", int(s))
}

// tempInfix marks ralphd's temp files: ".<name>.ralphd-tmp-<random>". It
// differs from the bash loop's "attempts.txt.tmp" on purpose.
const tempInfix = ".ralphd-tmp-"

// atomicWriter writes whole files atomically. hook, when set, runs before
// each step; an error from it aborts the write at that step (and a hook
// that ends the process simulates a crash there).
type atomicWriter struct {
	hook func(step writeStep, path string) error
	// redact, when set, is applied to the data of every write.
	redact func([]byte) []byte
}

// WriteFileAtomic replaces the file at path with data so that a reader (or
// a crash at any instant) sees either the old content or the new, never a
// mix: it writes a temp file in the same directory, fsyncs it, sets perm,
// renames it over path and fsyncs the directory.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicWriter{}.write(path, data, perm)
}

func (w atomicWriter) step(s writeStep, path string) error {
	if w.hook == nil {
		return nil
	}
	if err := w.hook(s, path); err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	return nil
}

func (w atomicWriter) write(path string, data []byte, perm os.FileMode) (err error) {
	if w.redact != nil {
		data = w.redact(data)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := w.step(stepCreateTemp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+base+tempInfix+"*")
	if err != nil {
		return fmt.Errorf("write %s: create temp file: %w", path, err)
	}
	tmp := f.Name()
	closed, renamed := false, false
	defer func() {
		if err != nil && !closed {
			_ = f.Close()
		}
		if err != nil && !renamed {
			_ = os.Remove(tmp)
		}
	}()
	if err := w.step(stepWrite, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.step(stepChmod, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: chmod: %w", path, err)
	}
	if err := w.step(stepSync, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := w.step(stepClose, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err := w.step(stepRename, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	// From here on the new content is in place; a failure only means its
	// durability is not confirmed.
	renamed = true
	if err := w.step(stepSyncDir, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync dir: %w", err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("fsync dir: %w", err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("fsync dir: %w", err)
	}
	return nil
}

// isTempName reports whether name is one of ralphd's atomic-write temp files.
func isTempName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempInfix)
}

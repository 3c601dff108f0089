// Package atomicfile replaces whole files atomically: a reader, or a crash
// at any instant, sees either the old content or the new, never a mix. It
// writes a temp file in the same directory, fsyncs it, sets its mode,
// renames it over the target and fsyncs the directory. Every whole-file
// write of ralphd's state, settings and unit files goes through it.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Step is one step of an atomic write. Tests inject failures and crashes
// before each step (Writer.Hook).
type Step int

// The steps of a write, in order.
const (
	StepCreateTemp Step = iota
	StepWrite
	StepChmod
	StepSync
	StepClose
	StepRename
	StepSyncDir
	NumSteps // the number of steps
)

// String returns the step's name, as used in test names.
func (s Step) String() string {
	switch s {
	case StepCreateTemp:
		return "create-temp"
	case StepWrite:
		return "write"
	case StepSync:
		return "fsync-file"
	case StepChmod:
		return "chmod"
	case StepClose:
		return "close"
	case StepRename:
		return "rename"
	case StepSyncDir:
		return "fsync-dir"
	}
	return fmt.Sprintf("step-%d", int(s))
}

// TempInfix marks ralphd's temp files: ".<name>.ralphd-tmp-<random>". It
// differs from the bash loop's "attempts.txt.tmp" on purpose.
const TempInfix = ".ralphd-tmp-"

// IsTemp reports whether the file name name is one of the temp files a
// write left behind when it was interrupted.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, TempInfix)
}

// Write replaces the file at path with data, with mode perm, atomically.
func Write(path string, data []byte, perm os.FileMode) error {
	return Writer{}.Write(path, data, perm)
}

// Writer writes files atomically. The zero Writer is Write.
type Writer struct {
	// Hook, when set, runs before each step; an error from it aborts the
	// write at that step (and a hook that ends the process simulates a
	// crash there). For tests.
	Hook func(step Step, path string) error
}

func (w Writer) step(s Step, path string) error {
	if w.Hook == nil {
		return nil
	}
	if err := w.Hook(s, path); err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	return nil
}

// Write replaces the file at path with data, with mode perm, atomically.
func (w Writer) Write(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := w.step(StepCreateTemp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+base+TempInfix+"*")
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
	if err := w.fill(f, path, data, perm, &closed); err != nil {
		return err
	}
	if err := w.step(StepRename, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	// From here on the new content is in place; a failure only means its
	// durability is not confirmed.
	renamed = true
	if err := w.step(StepSyncDir, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, which makes a rename, creation or
// removal of one of its entries durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync dir: %w", err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// fill writes data to the temp file f, sets its mode, fsyncs and closes
// it, each step after its failure point (Writer.Fail); *closed is set
// once f is closed, so the caller's cleanup does not close it again. The
// temp file of Write and of Dir's WriteIn are filled the same way.
func (w Writer) fill(f *os.File, path string, data []byte, perm os.FileMode, closed *bool) error {
	if err := w.step(StepWrite, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.step(StepChmod, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: chmod: %w", path, err)
	}
	if err := w.step(StepSync, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, err)
	}
	if err := w.step(StepClose, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	*closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	return nil
}

package gitsafe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// Snapshot holds the files of a git directory that make git run code or
// change what it reads: the configuration (config, config.worktree), the
// repository-wide attributes (info/attributes) and the hooks. ralphd's own
// git calls ignore all of them (see Command), but the person's next git
// command would not: a BUILD iteration that changes them has planted
// code, and Changed and Restore undo it.
//
// A file that config includes (include.path) from elsewhere is not held:
// the include line itself is in config, so adding one is a change here.
type Snapshot struct {
	gitDir string
	files  map[string]file // by path relative to gitDir; absent files are not in it
}

// file is one held file's content and permission bits.
type file struct {
	data []byte
	mode fs.FileMode
}

// TakeSnapshot reads the files of dir's git directory (the common one,
// for a linked worktree) that Snapshot describes.
func TakeSnapshot(ctx context.Context, dir string) (*Snapshot, error) {
	out, err := Output(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("find the git directory: %w", err)
	}
	return snapshotGitDir(strings.TrimSpace(string(out)))
}

// snapshotGitDir is TakeSnapshot for a known git directory.
func snapshotGitDir(gitDir string) (*Snapshot, error) {
	files, err := readWatched(gitDir)
	if err != nil {
		return nil, err
	}
	return &Snapshot{gitDir: gitDir, files: files}, nil
}

// Changed returns the held files (relative to the git directory) whose
// content or mode differs now, that appeared, or that went away, sorted.
func (s *Snapshot) Changed() ([]string, error) {
	now, err := readWatched(s.gitDir)
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

// Restore puts every held file back as it was when the snapshot was
// taken and removes the ones that appeared since. It returns what it
// changed, like Changed.
func (s *Snapshot) Restore() ([]string, error) {
	changed, err := s.Changed()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, p := range changed {
		path := filepath.Join(s.gitDir, p)
		f, ok := s.files[p]
		if !ok {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			}
			continue
		}
		if err := writeAtomic(path, f); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", p, err))
		}
	}
	return changed, errors.Join(errs...)
}

// watchedFiles are the single files Snapshot holds; every regular file in
// hooks/ is held as well.
var watchedFiles = []string{"config", "config.worktree", filepath.Join("info", "attributes")}

// readWatched reads the held files that exist under gitDir. A path that
// is not a regular file (a directory, a symlink planted in its place) is
// read as what it is not: a change, with mode to tell.
func readWatched(gitDir string) (map[string]file, error) {
	files := make(map[string]file)
	read := func(rel string) error {
		path := filepath.Join(gitDir, rel)
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			files[rel] = file{mode: fi.Mode()}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[rel] = file{data: data, mode: fi.Mode()}
		return nil
	}
	for _, rel := range watchedFiles {
		if err := read(rel); err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
	}
	hooks, err := os.ReadDir(filepath.Join(gitDir, "hooks"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read hooks: %w", err)
	}
	for _, h := range hooks {
		if err := read(filepath.Join("hooks", h.Name())); err != nil {
			return nil, fmt.Errorf("read hook %s: %w", h.Name(), err)
		}
	}
	return files, nil
}

// writeAtomic replaces path with f's content and mode atomically
// (internal/atomicfile), removing whatever directory is in its place.
func writeAtomic(path string, f file) error {
	if !f.mode.IsRegular() {
		return fmt.Errorf("held as %s, not a regular file; left as it is", f.mode.Type())
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	return atomicfile.Write(path, f.data, f.mode.Perm())
}

// snapshotJSON is a Snapshot's persisted form.
type snapshotJSON struct {
	GitDir string              `json:"git_dir"`
	Files  map[string]fileJSON `json:"files"`
}

type fileJSON struct {
	Data []byte      `json:"data"` // base64 in JSON
	Mode fs.FileMode `json:"mode"`
}

// MarshalJSON encodes the snapshot, so that it can be persisted with an
// iteration's baseline and a later ralphd (after a crash) can compare and
// restore against it.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	j := snapshotJSON{GitDir: s.gitDir, Files: make(map[string]fileJSON, len(s.files))}
	for p, f := range s.files {
		j.Files[p] = fileJSON{Data: f.data, Mode: f.mode}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes a snapshot MarshalJSON encoded. Paths that would
// leave the git directory are refused.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var j snapshotJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decode git snapshot: %w", err)
	}
	if !filepath.IsAbs(j.GitDir) {
		return fmt.Errorf("decode git snapshot: git dir %q is not absolute", j.GitDir)
	}
	files := make(map[string]file, len(j.Files))
	for p, f := range j.Files {
		if !filepath.IsLocal(p) {
			return fmt.Errorf("decode git snapshot: path %q leaves the git directory", p)
		}
		files[p] = file{data: f.Data, mode: f.Mode}
	}
	s.gitDir, s.files = j.GitDir, files
	return nil
}

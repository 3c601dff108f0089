package git

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	files  DirFiles // by path relative to gitDir
}

// SnapshotAt reads the files that Snapshot describes from gitDir, an
// absolute git directory: the common one, for a linked worktree (see
// worktree.Repo.Layout).
func SnapshotAt(gitDir string) (*Snapshot, error) {
	if !filepath.IsAbs(gitDir) {
		return nil, fmt.Errorf("snapshot the git directory: %q is not absolute", gitDir)
	}
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
	return ChangedFiles(s.files, now), nil
}

// Restore puts every held file back as it was when the snapshot was
// taken and removes the ones that appeared since (dirsnap.RestoreDir). It
// returns what it changed, like Changed.
func (s *Snapshot) Restore() ([]string, error) {
	changed, err := s.Changed()
	if err != nil {
		return nil, err
	}
	return changed, RestoreDir(s.gitDir, s.files, changed)
}

// watchedFiles are the single files Snapshot holds; every regular file in
// hooks/ is held as well.
var watchedFiles = []string{"config", "config.worktree", filepath.Join("info", "attributes")}

// watchedDirs hold watched files. Each is held as what it is: a directory,
// or a link or a file planted in its place, through which nothing is read
// (what is there is not the git directory's), so that Restore neither
// removes nor writes anything outside.
var watchedDirs = []string{"hooks", "info"}

// readWatched reads the held files that exist under gitDir. A path that
// is not a regular file (a directory, a symlink planted in its place) is
// read as what it is not: a change, with mode to tell.
func readWatched(gitDir string) (DirFiles, error) {
	files := DirFiles{}
	for _, rel := range watchedDirs {
		if err := files.Read(gitDir, rel); err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
	}
	realDir := func(rel string) bool { f, ok := files[rel]; return ok && f.Mode.IsDir() }
	for _, rel := range watchedFiles {
		if parent := filepath.Dir(rel); parent != "." && !realDir(parent) {
			continue
		}
		if err := files.Read(gitDir, rel); err != nil {
			return nil, fmt.Errorf("read %s: %w", rel, err)
		}
	}
	if !realDir("hooks") {
		return files, nil
	}
	hooks, err := os.ReadDir(filepath.Join(gitDir, "hooks"))
	if err != nil {
		return nil, fmt.Errorf("read hooks: %w", err)
	}
	for _, h := range hooks {
		if err := files.Read(gitDir, filepath.Join("hooks", h.Name())); err != nil {
			return nil, fmt.Errorf("read hook %s: %w", h.Name(), err)
		}
	}
	return files, nil
}

// snapshotJSON is a Snapshot's persisted form.
type snapshotJSON struct {
	GitDir string   `json:"git_dir"`
	Files  DirFiles `json:"files"`
}

// MarshalJSON encodes the snapshot, so that it can be persisted with an
// iteration's baseline and a later ralphd (after a crash) can compare and
// restore against it.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	return json.Marshal(snapshotJSON{GitDir: s.gitDir, Files: s.files})
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
	for p := range j.Files {
		if !filepath.IsLocal(p) {
			return fmt.Errorf("decode git snapshot: path %q leaves the git directory", p)
		}
	}
	s.gitDir, s.files = j.GitDir, j.Files
	return nil
}

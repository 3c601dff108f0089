package git

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// Snapshot holds the files of a git directory that make git run code or
// change what it reads: the configuration (config, config.worktree), the
// repository-wide attributes (info/attributes), the hooks, and the files
// watchedFiles names. ralphd's own
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
// Repo.Layout).
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
// taken and removes the ones that appeared since (RestoreDir). It
// returns what it changed, like Changed.
func (s *Snapshot) Restore() ([]string, error) {
	changed, err := s.Changed()
	if err != nil {
		return nil, err
	}
	return changed, RestoreDir(s.gitDir, s.files, changed)
}

// watchedFiles are the single files Snapshot holds; every regular file in
// hooks/ is held as well. Besides the files that run code, those that
// change what git reads: info/exclude (a path it ignores is one a
// failure branch's add -A and the clean after it treat as no work),
// shallow (history beyond it is unreachable to a gc, which prunes it),
// and the object store's alternates (objects only they hold look
// present, and are lost with them).
var watchedFiles = []string{"config", "config.worktree", filepath.Join("info", "attributes"), filepath.Join("info", "exclude"),
	"shallow", filepath.Join("objects", "info", "alternates"), filepath.Join("objects", "info", "http-alternates")}

// Why says why a change to the git directory's file rel (as Restore
// returns it) is put back, for the violation's line.
func Why(rel string) string {
	switch rel = filepath.ToSlash(rel); {
	case rel == "info/exclude":
		return "git would ignore the paths it names, and a failure branch would not keep them"
	case rel == "shallow":
		return "history beyond it would look cut off, and a gc would prune it"
	case strings.HasPrefix(rel, "objects/info/"):
		return "objects only it points at would look present, and be lost with it"
	default: // config, config.worktree, info/attributes, hooks/
		return "it would run code in git"
	}
}

// watchedDirs hold watched files. Each is held as what it is: a directory,
// or a link or a file planted in its place, through which nothing is read
// (what is there is not the git directory's), so that Restore neither
// removes nor writes anything outside.
var watchedDirs = []string{"hooks", "info", filepath.Join("objects", "info")}

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

// The files a snapshot holds: DirFiles holds files in memory, tells what
// changed since and puts them back. ralphd holds .ralph/, which belongs
// to PLANNING, as a whole tree (TakeDir, a DirSnapshot), and the git
// directory's configuration and hooks as chosen files (DirFiles.Read, for
// a Snapshot), around a BUILD iteration.

// maxBytes bounds what TakeDir holds: .ralph/ is a few small files.
const maxBytes = 16 << 20

// DirFile is one held path: a regular file's content and mode, a symlink's
// target and mode, or, for anything else (a directory, a FIFO), its mode
// alone, so that it reads as a change if it is replaced.
type DirFile struct {
	Data []byte      `json:"data"` // base64 in JSON
	Mode fs.FileMode `json:"mode"`
	// unread: found, but not read (past the walk's budget, or no longer a
	// regular file when opened); it reads as changed.
	unread bool
}

// DirFiles are held paths, by path relative to the directory they were read
// under. An absent path is not in it.
type DirFiles map[string]DirFile

// Read holds the path rel under dir, if it exists. The path itself is
// read, never what a symlink there points to.
func (f DirFiles) Read(dir, rel string) error {
	path := filepath.Join(dir, rel)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.add(path, rel, fi)
}

// add holds path, known as rel, whose Lstat is fi.
func (f DirFiles) add(path, rel string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		f[rel] = DirFile{Data: []byte(target), Mode: fi.Mode()}
		return nil
	}
	if !fi.Mode().IsRegular() {
		f[rel] = DirFile{Mode: fi.Mode()}
		return nil
	}
	// Not os.ReadFile: the directory is an agent's to write, and a FIFO
	// put in the file's place since the Lstat would block the read.
	data, err := atomicfile.Read(path, maxBytes)
	if err != nil {
		return err
	}
	f[rel] = DirFile{Data: data, Mode: fi.Mode()}
	return nil
}

// ChangedFiles returns the paths whose content or mode differs between was and
// now, or that only one of them holds, sorted.
func ChangedFiles(was, now DirFiles) []string {
	var changed []string
	for p, f := range now {
		if old, ok := was[p]; !ok || f.unread || old.Mode != f.Mode || string(old.Data) != string(f.Data) {
			changed = append(changed, p)
		}
	}
	for p := range was {
		if _, ok := now[p]; !ok {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	return changed
}

// RestoreDir puts each of paths (relative to dir) back as was holds it. A
// path was does not hold is removed, whatever it is now. A held regular
// file is written back atomically (internal/atomicfile), a held symlink is
// made again with its target, and a held directory is made again with its
// permissions, replacing whatever is in its place. Anything else (a FIFO,
// say) was held by its mode alone and cannot be made again: what is in
// its place is removed, and the error says so.
//
// Every operation goes through an atomicfile.Dir opened on dir's parent:
// no link under it is ever followed, not even one the agent put in place
// of dir itself or of a directory inside it, so nothing outside dir is
// ever written or removed. Removing a link removes the link, never what
// it points to. Every removal comes before every write.
func RestoreDir(dir string, was DirFiles, paths []string) error {
	dir = filepath.Clean(dir)
	if len(paths) == 0 {
		return nil
	}
	pd, err := atomicfile.OpenDir(filepath.Dir(dir))
	if err != nil {
		if gone(err) && len(was) == 0 {
			return nil // nothing was there, and nothing can be there now
		}
		return fmt.Errorf("restore %s: %w", dir, err)
	}
	defer pd.Close()
	base := filepath.Base(dir)
	name := func(p string) string {
		if p == "." {
			return base
		}
		return base + "/" + filepath.ToSlash(p)
	}
	var errs []error
	for _, p := range paths {
		if _, ok := was[p]; ok {
			continue
		}
		if err := pd.RemoveAll(name(p)); err != nil && !gone(err) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	for _, p := range paths {
		f, ok := was[p]
		if !ok {
			continue
		}
		n := name(p)
		if f.Mode.IsRegular() || f.Mode&fs.ModeSymlink != 0 {
			if err := writeBack(pd, n, f); err != nil {
				errs = append(errs, fmt.Errorf("restore %s: %w", p, err))
			}
			continue
		}
		if f.Mode.IsDir() {
			if err := makeDir(pd, n, f.Mode.Perm()); err != nil {
				errs = append(errs, fmt.Errorf("restore %s: %w", p, err))
			}
			continue
		}
		if err := pd.RemoveAll(n); err != nil && !gone(err) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			continue
		}
		errs = append(errs, fmt.Errorf("restore %s: held as %s, not a regular file: what replaced it is removed, and it is not made again", p, f.Mode.Type()))
	}
	return errors.Join(errs...)
}

// gone reports whether err says nothing is at a path any more: it does
// not exist, or a directory on the way to it is now a file (a file that
// had been replaced by a tree was written back before the tree's files
// came up).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, atomicfile.ErrNotDir)
}

// makeDir makes name below pd a directory with permissions perm, removing
// whatever else is in its place (a link is removed, never followed).
func makeDir(pd *atomicfile.Dir, name string, perm fs.FileMode) error {
	if fi, err := pd.Lstat(name); err == nil && !fi.IsDir() {
		if err := pd.RemoveAny(name); err != nil {
			return err
		}
	}
	d, err := pd.MakeDir(name, perm)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Chmod(".", perm)
}

// writeBack replaces name below pd with the held file or symlink f,
// removing whatever is in its place (never through it).
func writeBack(pd *atomicfile.Dir, name string, f DirFile) error {
	parent, base := path.Split(name)
	if parent != "" {
		d, err := pd.MakeDir(strings.TrimSuffix(parent, "/"), 0o755)
		if err != nil {
			return err
		}
		_ = d.Close()
	}
	if fi, err := pd.Lstat(name); err == nil && (fi.IsDir() || !f.Mode.IsRegular()) {
		if err := pd.RemoveAll(name); err != nil {
			return err
		}
	}
	if f.Mode.IsRegular() {
		err := atomicfile.Writer{}.WriteIn(pd, name, f.Data, f.Mode.Perm())
		if atomicfile.IsForeign(err) {
			// A link, FIFO or hard link in its place: the name is
			// removed (never what it leads to) and the file written.
			if err := pd.RemoveAny(name); err != nil {
				return err
			}
			err = atomicfile.Writer{}.WriteIn(pd, name, f.Data, f.Mode.Perm())
		}
		return err
	}
	tmp := parent + "." + base + atomicfile.TempInfix + "link"
	_ = pd.RemoveAny(tmp) // one a crash left
	if err := pd.Symlink(string(f.Data), tmp); err != nil {
		return err
	}
	if err := pd.Rename(tmp, name); err != nil {
		_ = pd.RemoveAny(tmp)
		return err
	}
	return pd.Sync()
}

// DirSnapshot is every file under a directory, by path relative to it. A
// directory that did not exist is an empty snapshot.
type DirSnapshot struct {
	dir   string
	files DirFiles
}

// TakeDir reads every file under dir, up to 16 MiB in all. Anything but a
// regular file or a directory (a symlink, say) is held by its mode alone.
func TakeDir(dir string) (*DirSnapshot, error) {
	files, err := walk(dir, true)
	if err != nil {
		return nil, err
	}
	return &DirSnapshot{dir: dir, files: files}, nil
}

// walk reads every file under dir. Holding (TakeDir), past maxBytes in all
// is an error; otherwise (what is there now, to compare) a file past that
// budget, or one that is no longer a regular file when it is opened, is
// not read and reads as changed: what the agent left there can then
// neither keep RestoreDir from running nor fill ralphd's memory.
func walk(dir string, holding bool) (DirFiles, error) {
	files := DirFiles{}
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
		if fi.Mode().IsRegular() {
			if total += int(fi.Size()); total > maxBytes {
				if holding {
					return fmt.Errorf("more than %d bytes under %s", maxBytes, dir)
				}
				files[rel] = DirFile{Mode: fi.Mode(), unread: true}
				return nil
			}
		}
		err = files.add(path, rel, fi)
		if !holding && (errors.Is(err, atomicfile.ErrNotRegular) || errors.Is(err, atomicfile.ErrTooLarge)) {
			files[rel], err = DirFile{Mode: fi.Mode(), unread: true}, nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return files, nil
}

// Dir is the directory the snapshot holds.
func (s *DirSnapshot) Dir() string { return s.dir }

// Changed returns the files (relative to the directory) whose content or
// mode differs now, that appeared, or that went away, sorted.
func (s *DirSnapshot) Changed() ([]string, error) {
	now, err := walk(s.dir, false)
	if err != nil {
		return nil, err
	}
	return ChangedFiles(s.files, now), nil
}

// Restore puts every held file back and removes the ones that appeared
// since, as the package's RestoreDir does. It returns what it changed, like
// ChangedFiles.
func (s *DirSnapshot) Restore() ([]string, error) {
	changed, err := s.Changed()
	if err != nil {
		return nil, err
	}
	return changed, RestoreDir(s.dir, s.files, changed)
}

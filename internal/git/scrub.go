// A Scrubber removes what an agent can plant where git opens a
// file, before ralphd's own git calls read there.
//
// git opens its own files (loose refs, reflogs, HEAD, the index,
// packed-refs, config, loose objects, info/*) with a plain blocking
// open and reads them to their end. An agent that runs as the user can
// put a FIFO there (every git call that reads it blocks until ralphd's
// timeout), a symlink to /dev/zero (git reads until it runs out of
// memory), a huge file in a loose ref's place, or a directory where git
// wants HEAD. git has no setting that makes it open these non-blocking:
// refs/files-backend.c lstat()s a loose ref, then open()s anything that
// is neither a directory nor a "refs/..." symlink, and reads it whole.
//
// So, at the points where an agent's code has just run, ralphd calls
// [Scrubber.Scrub], which walks those places with lstat and readdir only
// (never opening anything it has not first found to be a small regular
// file) and removes what git could block or choke on. Each finding is
// returned for the caller to report as tamper.

package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// MaxRef is the largest file Scrub leaves in a loose ref's place (and in
// HEAD's, and the other files git reads as one ref or one path): a ref is
// one object id or "ref: " and a name git caps at a path's length.
const MaxRef = 64 << 10

// Planted is one thing Scrub found where git opens a file.
type Planted struct {
	// Path is where it was.
	Path string
	// What says what was there: "a FIFO", "a symlink to /dev/zero (a
	// device)", "a directory", "a 1 GiB file".
	What string
	// Fix says what Scrub did about it: "removed", or "removed; HEAD
	// written back as ref: refs/heads/main".
	Fix string
	// Err says why the fix failed; nil when it did not.
	Err error
	// Since is when the last scrub of the same Scrubber that found nothing
	// began (zero when none did): it was planted after that.
	Since time.Time
}

// String describes the finding for a log line or a note.
func (p Planted) String() string {
	s := fmt.Sprintf("%s: %s, where git opens a file", p.Path, p.What)
	if p.Err != nil {
		return s + "; it could not be removed: " + p.Err.Error()
	}
	return s + "; " + p.Fix
}

// Scrubber names the git directories of one repository and what its work
// trees' HEADs hold.
type Scrubber struct {
	// Common is the repository's common git directory (the main work
	// tree's .git), absolute. Every work tree's git directory is under
	// its worktrees/.
	Common string
	// Heads says, by work tree directory (absolute, as git lists it),
	// what that work tree's HEAD holds: "ref: refs/heads/<branch>" or a
	// commit id. A HEAD found planted is written back with it (without
	// an entry it is only removed, and git then refuses that work tree),
	// and each of these work trees' .git file is checked to lead to its
	// own git directory.
	Heads map[string]string

	mu sync.Mutex // one scrub at a time: another would see this one's removals as deletions
	// clean is when the last scrub that found nothing began (Since).
	clean time.Time
	// seen is, for each directory found clean, holding only regular files,
	// its change time (ctime) then; see leafClean.
	seen map[string]int64
}

// skip are the directories of a git directory that Scrub does not walk:
// git runs nothing from hooks/ (ralphd's git has no hooks), modules/
// holds submodules' repositories, which ralphd's git does not enter,
// lfs/ is read by git-lfs only, and worktrees/ is walked one work tree's
// git directory at a time.
var skip = []string{"hooks", "modules", "lfs", "worktrees"}

// fileNames are the names, at the top of a git directory, of files git
// reads: a directory there is planted.
var fileNames = []string{"HEAD", "index", "config", "config.worktree", "packed-refs", "commondir", "gitdir",
	"shallow", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
	"AUTO_MERGE", "BISECT_HEAD", "locked"}

// Scrub walks the places git opens files in r (the common directory and
// each work tree's git directory) and removes anything there git could
// block or choke on: a FIFO, a device, a symlink that leads to neither a
// regular file nor (in refs/ and for HEAD, as git allows) names a ref, a
// directory where git reads a file, and a file over MaxRef where git
// reads one ref. Sockets are left: git never opens one. A HEAD, and a
// work tree's commondir and gitdir, that it removes are written back
// (HEAD as Heads says).
//
// The work trees in owned are the caller's to check whole: no git of its
// own adds or removes them meanwhile (git writes a new work tree's files
// one by one). For those, a HEAD, commondir or gitdir found missing is
// written back too, and the work tree's .git file must lead to its git
// directory (see dotGit). It returns what it found; the error says why a
// place could not be looked at.
func (r *Scrubber) Scrub(owned ...string) ([]Planted, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	started := time.Now()
	if r.seen == nil {
		r.seen = map[string]int64{}
	}
	s := &scrubber{seen: r.seen, start: started}
	defer func() {
		for i := range s.found {
			s.found[i].Since = r.clean
		}
		if len(s.found) == 0 {
			r.clean = started
		}
	}()
	if err := s.gitDir(r.Common, r.Common); err != nil {
		return s.found, err
	}
	s.writeBack(filepath.Join(r.Common, "HEAD"), r.head(filepath.Dir(r.Common)), isOwned(owned, filepath.Dir(r.Common)))
	s.alternates(filepath.Join(r.Common, "objects"), map[string]bool{})
	admin, err := os.ReadDir(filepath.Join(r.Common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return s.found, fmt.Errorf("look at %s: %w", filepath.Join(r.Common, "worktrees"), err)
	}
	trees := map[string]string{} // work tree -> its git directory
	for _, e := range admin {
		dir := filepath.Join(r.Common, "worktrees", e.Name())
		if !e.IsDir() {
			s.file(dir, e.Type(), false, false)
			continue
		}
		if err := s.gitDir(dir, r.Common); err != nil {
			return s.found, err
		}
		if tree := workTree(dir); tree != "" {
			trees[tree] = dir
		}
	}
	for tree, head := range r.Heads {
		dir, ok := trees[tree]
		for t, d := range trees {
			if !ok && SameDir(t, tree) {
				tree, dir, ok = t, d, true
			}
		}
		whole := isOwned(owned, tree)
		if !ok {
			// Its gitdir file was planted (and removed), or is missing:
			// its .git file still names its git directory.
			if dir = adminOf(tree, r.Common); dir == "" {
				continue
			}
			s.writeBack(filepath.Join(dir, "gitdir"), filepath.Join(tree, ".git"), whole)
		}
		s.writeBack(filepath.Join(dir, "HEAD"), head, whole)
		s.writeBack(filepath.Join(dir, "commondir"), "../..", whole)
		if whole {
			s.dotGit(tree, dir)
		}
	}
	return s.found, nil
}

// isOwned reports whether tree is one of owned.
func isOwned(owned []string, tree string) bool {
	return slices.ContainsFunc(owned, func(o string) bool { return SameDir(o, tree) })
}

// head returns what Heads says tree's HEAD holds, "" when it says nothing.
func (r *Scrubber) head(tree string) string {
	if h, ok := r.Heads[tree]; ok {
		return h
	}
	for t, h := range r.Heads {
		if SameDir(t, tree) {
			return h
		}
	}
	return ""
}

// scrubber collects what Scrub finds.
type scrubber struct {
	found []Planted
	// seen is the Scrubber's record of directories found clean (see leafClean);
	// nil for no record. start is when the scrub began.
	seen  map[string]int64
	start time.Time
}

// racy is how recent a directory's change may be for its listing not to
// be trusted later: file times come from a clock that moves in ticks of a
// few milliseconds, so a change in the same tick as the listing could
// leave the time as it was.
const racy = 100 * time.Millisecond

// gitDir scrubs the git directory g (the common one, or one of a work
// tree's).
func (s *scrubber) gitDir(g, common string) error {
	entries, err := s.readDir(g)
	if err != nil {
		return fmt.Errorf("look at %s: %w", g, err)
	}
	for _, e := range entries {
		name, path := e.Name(), filepath.Join(g, e.Name())
		switch {
		case g == common && slices.Contains(skip, name):
			// Not walked, whatever it is (a hooks/ linked to a person's
			// dotfiles is theirs), but for a FIFO, which git would open
			// as a directory and block on.
			if e.Type()&fs.ModeNamedPipe != 0 {
				s.remove(path, e.Type())
			}
		case e.IsDir() && slices.Contains(fileNames, name):
			s.remove(path, e.Type())
		case e.IsDir():
			if err := s.walk(path, name == "refs"); err != nil {
				return err
			}
		default:
			s.file(path, e.Type(), refLike(name), name == "HEAD")
		}
	}
	return nil
}

// refLike reports whether git reads the top-level file name as one ref or
// one path (so that more than MaxRef there is planted).
func refLike(name string) bool {
	return name == "commondir" || name == "gitdir" || name == "locked" ||
		strings.HasSuffix(name, "HEAD") && name != "FETCH_HEAD"
}

// walk scrubs the directory dir, all the way down; refs is true under
// refs/, where every file is one ref and git reads a symlink that names a
// ref as that name.
func (s *scrubber) walk(dir string, refs bool) error {
	ctime, known := s.leafClean(dir, refs)
	if known {
		return nil
	}
	entries, err := s.readDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone since it was listed: git's own doing
		}
		return fmt.Errorf("look at %s: %w", dir, err)
	}
	if ctime != 0 && !refs && time.Unix(0, ctime).Before(s.start.Add(-racy)) &&
		!slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return !e.Type().IsRegular() }) {
		s.seen[dir] = ctime // only regular files, none of them read: clean
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if err := s.walk(path, refs); err != nil {
				return err
			}
			continue
		}
		s.file(path, e.Type(), refs, refs)
	}
	return nil
}

// readDir lists dir. A directory the agent made unlistable (chmod 000,
// or 300: git still opens a path it knows there) is made listable
// again, and reported: failing the scrub for it would stop every worker.
// One that stays unlistable is reported with the error, and read as
// empty.
func (s *scrubber) readDir(dir string) ([]fs.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if !errors.Is(err, fs.ErrPermission) {
		return entries, err
	}
	p := Planted{Path: dir, What: "a directory ralphd may not list", Fix: "made listable"}
	if fi, serr := os.Lstat(dir); serr != nil {
		p.Err = serr
	} else if p.Err = os.Chmod(dir, fi.Mode().Perm()|0o700); p.Err == nil {
		entries, p.Err = os.ReadDir(dir)
	}
	s.found = append(s.found, p)
	if p.Err != nil {
		return nil, nil
	}
	return entries, nil
}

// leafClean reports whether dir is as an earlier scrub found it clean:
// a directory of regular files only (a loose objects directory, say)
// whose change time has not moved since. Adding, removing or renaming an
// entry moves it, and so does every change of the directory's times,
// which an agent can set but not to hide the change time. Under refs/,
// where a file's size matters, it is never trusted. It returns dir's
// change time, for the record (0 when unknown).
func (s *scrubber) leafClean(dir string, refs bool) (int64, bool) {
	if s.seen == nil || refs {
		return 0, false
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	ctime := st.Ctim.Nano()
	c, ok := s.seen[dir]
	if ok && c != ctime {
		delete(s.seen, dir)
		ok = false
	}
	return ctime, ok
}

// file looks at the non-directory at path, of type typ as its directory
// listed it. small means git reads it as one ref; symref that git reads a
// symlink there that names a ref as that name, without opening it.
func (s *scrubber) file(path string, typ fs.FileMode, small, symref bool) {
	switch {
	case typ&fs.ModeSocket != 0:
		return // open() fails on a socket at once
	case typ.IsRegular():
		if small {
			fi, err := os.Lstat(path)
			if err == nil && fi.Mode().IsRegular() && fi.Size() > MaxRef {
				s.removeWhat(path, "a "+size(fi.Size())+" file")
			}
		}
		return
	case typ&fs.ModeSymlink != 0:
		s.symlink(path, small, symref)
		return
	}
	s.remove(path, typ)
}

// symlink looks at the symlink at path: it stays when git would read it
// as a ref's name (symref), or when it leads to a regular file (of at
// most MaxRef where small). A link to a directory stays, and is not
// walked (git-new-workdir links a git directory's refs, logs/refs and
// objects to another's; walking a link could walk the whole disk), but
// in refs/ (symref), where git makes none and would walk it for refs.
func (s *scrubber) symlink(path string, small, symref bool) {
	to, err := os.Readlink(path)
	if err != nil {
		return // gone since it was listed
	}
	if symref && strings.HasPrefix(to, "refs/") {
		return
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		s.removeWhat(path, fmt.Sprintf("a symlink to %s, which cannot be read", to))
	case fi.IsDir() && !symref:
	case !fi.Mode().IsRegular():
		if fi.Mode()&fs.ModeNamedPipe != 0 {
			defer unblock(path, 0)()
		}
		s.removeWhat(path, fmt.Sprintf("a symlink to %s (%s)", to, atomicfile.Describe(fi.Mode())))
	case small && fi.Size() > MaxRef:
		s.removeWhat(path, fmt.Sprintf("a symlink to %s (a %s file)", to, size(fi.Size())))
	}
}

// remove removes what is at path, of type typ. A git already blocked
// on a FIFO there is let go first.
func (s *scrubber) remove(path string, typ fs.FileMode) {
	if typ&fs.ModeNamedPipe != 0 {
		defer unblock(path, syscall.O_NOFOLLOW)()
	}
	s.removeWhat(path, atomicfile.Describe(typ))
}

// unblock lets go of whoever waits in open() on the FIFO at path (flags
// add O_NOFOLLOW, or not to follow a symlink to it): opened for reading
// and writing, which never blocks, it has both ends, so that a git
// waiting to read it or to append to it gets through its open. The
// caller removes the FIFO, then calls the returned func, which closes
// it: the reader then reads the end of the file, and the writer fails.
// Closed only once the FIFO is gone, so that a git opening it again in
// between (git reads packed-refs more than once) gets through too, and
// none can open it after. Removing the FIFO alone would leave them
// waiting.
func unblock(path string, flags int) (closeIt func()) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NONBLOCK|flags, 0)
	if err != nil {
		return func() {}
	}
	return func() { _ = f.Close() }
}

// removeWhat removes what is at path, described as what.
func (s *scrubber) removeWhat(path, what string) {
	p := Planted{Path: path, What: what, Fix: "removed"}
	if err := os.RemoveAll(path); err != nil {
		p.Err = err
	}
	s.found = append(s.found, p)
}

// writeBack writes the file at path back as content when this scrub
// removed it, or, with missing, when it is missing; content "" leaves it.
func (s *scrubber) writeBack(path, content string, missing bool) {
	if content == "" {
		return
	}
	if _, err := os.Lstat(path); missing && errors.Is(err, fs.ErrNotExist) && !s.has(path) {
		s.found = append(s.found, Planted{Path: path, What: "nothing (deleted)"})
	}
	for i := range s.found {
		p := &s.found[i]
		if p.Path != path || p.Err != nil {
			continue
		}
		if err := atomicfile.Write(path, []byte(content+"\n"), 0o644); err != nil {
			p.Err = fmt.Errorf("%s could not be written back: %w", filepath.Base(path), err)
			return
		}
		w := "written back as " + content
		if p.Fix != "" {
			w = p.Fix + "; " + w
		}
		p.Fix = w
		return
	}
}

// adminOf returns the git directory under common's worktrees/ that tree's
// .git file names, or "".
func adminOf(tree, common string) string {
	b, err := atomicfile.Read(filepath.Join(tree, ".git"), MaxRef)
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(tree, dir)
	}
	dir = filepath.Clean(dir)
	if filepath.Dir(dir) != filepath.Join(common, "worktrees") {
		return ""
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// has reports whether this scrub found something at path.
func (s *scrubber) has(path string) bool {
	for _, p := range s.found {
		if p.Path == path {
			return true
		}
	}
	return false
}

// workTree returns the work tree whose git directory is admin, as its
// gitdir file names it ("" when it cannot be read).
func workTree(admin string) string {
	b, err := atomicfile.Read(filepath.Join(admin, "gitdir"), MaxRef)
	if err != nil {
		return ""
	}
	dotGit := strings.TrimSpace(string(b))
	if !filepath.IsAbs(dotGit) {
		dotGit = filepath.Join(admin, dotGit)
	}
	return filepath.Dir(filepath.Clean(dotGit))
}

// dotGit checks that tree's .git file leads to admin, its git directory,
// and writes it back when it does not: an agent can point it at another
// repository, where ralphd's git would then read and commit.
func (s *scrubber) dotGit(tree, admin string) {
	path := filepath.Join(tree, ".git")
	want := "gitdir: " + admin
	b, err := atomicfile.Read(path, MaxRef)
	var what string
	switch {
	case err == nil:
		got := strings.TrimSpace(string(b))
		dir, ok := strings.CutPrefix(got, "gitdir: ")
		if ok && !filepath.IsAbs(dir) {
			dir = filepath.Join(tree, dir)
		}
		if ok && SameDir(dir, admin) {
			return
		}
		what = fmt.Sprintf("a .git file that reads %q", truncate(got))
	case errors.Is(err, fs.ErrNotExist):
		what = "nothing (the .git file was deleted)"
	default:
		fi, lerr := os.Lstat(path)
		if lerr != nil {
			return
		}
		what = atomicfile.Describe(fi.Mode())
		if fi.Mode()&fs.ModeNamedPipe != 0 {
			defer unblock(path, syscall.O_NOFOLLOW)() // after the removal below
		}
		if fi.Mode().IsRegular() {
			what = "a " + size(fi.Size()) + " .git file"
		}
	}
	p := Planted{Path: path, What: what, Fix: "written back as " + want}
	if err := os.RemoveAll(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.Err = err
	} else if err := atomicfile.Write(path, []byte(want+"\n"), 0o644); err != nil {
		p.Err = err
	}
	s.found = append(s.found, p)
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// size renders a byte count for a person.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d-byte", n)
}

// treeFiles are the files git opens in a work tree besides the tracked
// ones: per-directory ignore rules (read by status, add and clean, which
// walk the tree), attributes, and the top's .mailmap and .gitmodules.
var treeFiles = []string{".gitignore", ".gitattributes", ".mailmap", ".gitmodules"}

// ScrubTree walks the work tree dir (not its .git) and removes each FIFO
// or device named like a file git reads there (.gitignore,
// .gitattributes, .mailmap, .gitmodules): git opens those with a
// blocking open, so that one FIFO .gitignore anywhere holds status, add
// and clean. A symlink there is left: git does not follow one. It costs
// one directory listing per directory of the tree, as git status does.
func ScrubTree(dir string) ([]Planted, error) {
	s := &scrubber{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			switch {
			case errors.Is(err, fs.ErrNotExist) && path != dir:
				return nil // gone since it was listed
			case errors.Is(err, fs.ErrPermission) && path != dir:
				// git cannot list it either, so reads no .gitignore there.
				return filepath.SkipDir
			}
			return err
		}
		switch {
		case d.IsDir() && d.Name() == ".git" && path != dir:
			return filepath.SkipDir
		case d.IsDir(), !slices.Contains(treeFiles, d.Name()):
			return nil
		}
		if t := d.Type(); t&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			s.remove(path, t)
		}
		return nil
	})
	if err != nil {
		return s.found, fmt.Errorf("look at %s: %w", dir, err)
	}
	return s.found, nil
}

// maxAlternates is how deep git follows object stores named by another's
// objects/info/alternates (sha1-file.c: 5).
const maxAlternates = 5

// alternates looks at the object stores that objects/info/alternates in
// objects names (and those their own alternates name): git reads an
// object it lacks from there, with a blocking open. Files there are not
// the repository's, so Scrub removes none: a store holding a FIFO or a
// device where git would open an object is dropped from the alternates
// file instead (git then fails to find what was only there), and a git
// already waiting on the FIFO is let go.
func (s *scrubber) alternates(objects string, seen map[string]bool) {
	if len(seen) >= maxAlternates {
		return
	}
	path := filepath.Join(objects, "info", "alternates")
	b, err := atomicfile.Read(path, MaxRef)
	if err != nil {
		return // none, or planted itself (then Scrub removes it)
	}
	var keep []string
	dropped := false
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		dir := strings.TrimSpace(line)
		if uq, err := strconv.Unquote(dir); err == nil && strings.HasPrefix(dir, `"`) {
			dir = uq
		}
		if dir == "" || strings.HasPrefix(dir, "#") {
			keep = append(keep, line)
			continue
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(objects, dir)
		}
		dir = filepath.Clean(dir)
		if seen[dir] {
			keep = append(keep, line)
			continue
		}
		seen[dir] = true
		if bad := blockingObjects(dir); len(bad) > 0 {
			for _, f := range bad {
				unblock(f, 0)() // left where it is: let go of who waits now
				s.found = append(s.found, Planted{Path: f, What: "a FIFO or device in the object store " + path + " names",
					Fix: "left where it is; " + dir + " dropped from " + path})
			}
			dropped = true
			continue
		}
		keep = append(keep, line)
		s.alternates(dir, seen)
	}
	if dropped {
		if err := atomicfile.Write(path, []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
			s.found[len(s.found)-1].Err = err
		}
	}
}

// blockingObjects returns the FIFOs and devices (or links to them) where
// git opens an object in the object store dir: a loose object (xx/...) or
// a pack's files (pack/). It lists only those directories, whatever dir
// is (an alternates file can name any).
func blockingObjects(dir string) []string {
	var bad []string
	subs, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, sub := range subs {
		if !sub.IsDir() || !(sub.Name() == "pack" || isFanout(sub.Name())) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, sub.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			p := filepath.Join(dir, sub.Name(), f.Name())
			t := f.Type()
			if t&fs.ModeSymlink != 0 {
				if fi, err := os.Stat(p); err == nil {
					t = fi.Mode().Type()
				}
			}
			if t&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0 {
				bad = append(bad, p)
			}
		}
	}
	return bad
}

// isFanout reports whether name is a loose object directory's: two hex
// digits.
func isFanout(name string) bool {
	if len(name) != 2 {
		return false
	}
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

package atomicfile

// This file holds Dir: a directory opened once, through which every
// operation on ralphd's own files goes. A person's agent runs as that
// person and knows where ralphd keeps its files, so anything in them may
// have been replaced by the time ralphd looks: a file by a symlink to the
// person's key, a FIFO, a hard link to one of the person's files, a
// directory by a symlink to one of theirs. Dir makes every operation
// refuse all of those, so that ralphd never reads, writes, lists or
// deletes anything but the files it made itself:
//
//   - every component of a name is opened relative to the directory's
//     descriptor with O_NOFOLLOW, so no symlink is followed anywhere below
//     the directory, not even one that stays inside it;
//   - what was opened is checked with fstat: a directory where a directory
//     belongs, and otherwise a regular file with one name (ralphd never
//     makes a hard link; a second name is someone else's file), owned by
//     the user ralphd runs as, on the directory's own file system (a mount
//     placed inside the directory is refused);
//   - files are opened with O_NONBLOCK, so a FIFO never blocks, and are
//     looked at with fstatat before they are opened, so no device is ever
//     opened;
//   - a write replaces the name with rename(2), which never writes through
//     what the name held; a removal unlinks the name, which never touches
//     what a link points to; a move aside never replaces anything.
//
// Anything else where ralphd's file should be is an error that wraps one
// of ErrNotRegular, ErrNotDir, ErrHardLink, ErrNotOwned or ErrOtherMount
// (see [IsForeign]) and says what is there; what to do about it (move it
// aside and go on, or stop and tell the person) is the caller's decision.

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Errors that say what stands where one of ralphd's files or directories
// should be. ErrNotRegular (read.go) is the fourth.
var (
	// ErrNotDir: not a directory where ralphd keeps one (a symlink to a
	// directory is not one).
	ErrNotDir = errors.New("not a directory")
	// ErrHardLink: a regular file with more than one name, which ralphd
	// never makes: the other name may be one of the person's files.
	ErrHardLink = errors.New("a file with more than one name (a hard link)")
	// ErrNotOwned: owned by another user than the one ralphd runs as.
	ErrNotOwned = errors.New("not owned by the user ralphd runs as")
	// ErrOtherMount: on another file system than the directory it is in,
	// such as a bind or FUSE mount placed there.
	ErrOtherMount = errors.New("on another file system (a mount point)")
	// ErrBadName: a name that is not a plain relative path below the
	// directory ("", absolute, or with an empty, "." or ".." component).
	ErrBadName = errors.New("not a plain name below the directory")
)

// IsForeign reports whether err says that something ralphd did not make
// stands where its file or directory should be: a symlink, FIFO, device,
// socket, directory or hard link, something owned by another user, or a
// mount.
func IsForeign(err error) bool {
	for _, e := range []error{ErrNotRegular, ErrNotDir, ErrHardLink, ErrNotOwned, ErrOtherMount} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Dir is an open directory that ralphd owns: its state directory, a
// subdirectory of it, or a directory of the project that ralphd holds.
// Names given to its methods are relative, slash-separated paths below it
// ("attempts/x.md"); no component of one is ever followed if it is a
// symlink. A Dir is safe for concurrent use. The zero Dir is not usable;
// see [OpenDir] and [MakeDirAll].
type Dir struct {
	f    *os.File
	path string // for messages only: operations go through f
	dev  uint64
	uid  uint32
}

// OpenDir opens the directory at path. Its parent directories are
// resolved as usual, following symlinks (they are the person's to
// arrange: /home may well be one), but path itself must be a directory,
// not a symlink to one, owned by the user ralphd runs as; otherwise the
// error wraps ErrNotDir or ErrNotOwned and says what to do.
func OpenDir(path string) (*Dir, error) {
	if path == "" {
		return nil, fmt.Errorf("open directory: %w", ErrBadName)
	}
	path = filepath.Clean(path)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, dirOpenError(path, unix.AT_FDCWD, path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	uid := uint32(os.Geteuid())
	if st.Uid != uid {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%s: %w (uid %d); ralphd keeps its files only in a directory of its own user", path, ErrNotOwned, st.Uid)
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path, dev: uint64(st.Dev), uid: uid}, nil
}

// MakeDirAll makes the directory path, and its missing parents, with
// permissions perm (as os.MkdirAll does), and opens it as [OpenDir] does:
// path itself must not be a symlink.
func MakeDirAll(path string, perm fs.FileMode) (*Dir, error) {
	if err := os.MkdirAll(path, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return OpenDir(path)
}

// dirOpenError turns an error opening the directory name (under dirfd)
// into one that says what is there.
func dirOpenError(path string, dirfd int, name string, err error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	what := describeStat(&st)
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, 512)
		if n, err := unix.Readlinkat(dirfd, name, buf); err == nil {
			what += " to " + strconv.Quote(string(buf[:n]))
		}
	}
	return fmt.Errorf("%s: %w (%s); ralphd never follows a link in its own directories", path, ErrNotDir, what)
}

// Path is the directory's path, for messages.
func (d *Dir) Path() string { return d.path }

// Join returns the path of name in d, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.path, filepath.FromSlash(name)) }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Sync fsyncs the directory, which makes the creation, rename or removal
// of one of its entries durable.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", d.path, err)
	}
	return nil
}

// fd is the directory's descriptor.
func (d *Dir) fd() int { return int(d.f.Fd()) }

// SplitName splits name, a slash-separated path relative to a directory,
// into its components. It refuses (with ErrBadName) an empty name, an
// absolute one, and one with an empty, "." or ".." component or a NUL
// byte: a name given to a Dir only ever goes down.
func SplitName(name string) ([]string, error) {
	if name == "" || name[0] == '/' || strings.IndexByte(name, 0) >= 0 {
		return nil, fmt.Errorf("%q: %w", name, ErrBadName)
	}
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, fmt.Errorf("%q: %w", name, ErrBadName)
		}
	}
	return parts, nil
}

// parent opens the directory that holds name, walking every component
// without following a link, and returns it with name's last component.
// The returned Dir is d itself for a name without a slash; the caller
// closes it with release.
func (d *Dir) parent(name string) (*Dir, string, error) {
	parts, err := SplitName(name)
	if err != nil {
		return nil, "", err
	}
	p := d
	for _, c := range parts[:len(parts)-1] {
		sub, err := p.child(c)
		if p != d {
			_ = p.Close()
		}
		if err != nil {
			return nil, "", err
		}
		p = sub
	}
	return p, parts[len(parts)-1], nil
}

// release closes p when it is not d.
func (d *Dir) release(p *Dir) {
	if p != d {
		_ = p.Close()
	}
}

// child opens the directory c in d, never through a link, and checks it is
// a directory of ralphd's user on d's file system.
func (d *Dir) child(c string) (*Dir, error) {
	path := filepath.Join(d.path, c)
	fd, err := unix.Openat(d.fd(), c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, dirOpenError(path, d.fd(), c, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := d.ours(path, &st, true); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path, dev: d.dev, uid: d.uid}, nil
}

// OpenDir opens the directory name below d, as a Dir of its own, never
// through a link.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	p, base, err := d.parent(name)
	if err != nil {
		return nil, err
	}
	defer d.release(p)
	return p.child(base)
}

// MakeDir makes the directory name below d with permissions perm, and
// its missing parents, never through a link, and opens it. An existing
// directory is opened as it is; anything else in its place is an error.
func (d *Dir) MakeDir(name string, perm fs.FileMode) (*Dir, error) {
	parts, err := SplitName(name)
	if err != nil {
		return nil, err
	}
	p := d
	for _, c := range parts {
		err := unix.Mkdirat(p.fd(), c, uint32(perm.Perm()))
		if err != nil && !errors.Is(err, unix.EEXIST) {
			d.release(p)
			return nil, &fs.PathError{Op: "mkdir", Path: p.Join(c), Err: err}
		}
		sub, err := p.child(c)
		d.release(p)
		if err != nil {
			return nil, err
		}
		p = sub
	}
	return p, nil
}

// ours checks that st, of path, is what ralphd makes: a directory when
// dir, else a regular file with one name; owned by ralphd's user; on d's
// file system.
func (d *Dir) ours(path string, st *unix.Stat_t, dir bool) error {
	typ := st.Mode & unix.S_IFMT
	switch {
	case dir && typ != unix.S_IFDIR:
		return fmt.Errorf("%s: %w (%s)", path, ErrNotDir, describeStat(st))
	case !dir && typ != unix.S_IFREG:
		return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, describeStat(st))
	case st.Uid != d.uid:
		return fmt.Errorf("%s: %w (uid %d)", path, ErrNotOwned, st.Uid)
	case uint64(st.Dev) != d.dev:
		return fmt.Errorf("%s: %w", path, ErrOtherMount)
	case !dir && st.Nlink > 1:
		return fmt.Errorf("%s: %w (%d names)", path, ErrHardLink, st.Nlink)
	}
	return nil
}

// describeStat names the kind of file st is, for a person.
func describeStat(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Nlink > 1 {
			return fmt.Sprintf("a hard link, one of %d names of a file", st.Nlink)
		}
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "an unknown kind of file"
}

// Check reports whether name below d is a file ralphd made: nil when it
// is, an error wrapping fs.ErrNotExist when nothing is there, and
// otherwise an error for which [IsForeign] is true, saying what is there.
// It never follows a link, and opens nothing but the directories on the
// way.
func (d *Dir) Check(name string) error {
	p, base, err := d.parent(name)
	if err != nil {
		return err
	}
	defer d.release(p)
	var st unix.Stat_t
	if err := unix.Fstatat(p.fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return p.ours(d.Join(name), &st, false)
}

// Lstat returns what is at name below d, without following a link there
// (or on the way, where a link is an error).
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	p, base, err := d.parent(name)
	if err != nil {
		return nil, err
	}
	defer d.release(p)
	var st unix.Stat_t
	if err := unix.Fstatat(p.fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.Join(name), Err: err}
	}
	return statInfo(base, &st), nil
}

// openFlags may be given to OpenFile; O_TRUNC is not among them, since it
// would cut a file before OpenFile could check it is ralphd's.
const openFlags = os.O_RDONLY | os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREATE | os.O_EXCL

// OpenFile opens the file name below d with flag (os.O_RDONLY,
// os.O_WRONLY or os.O_RDWR, with os.O_APPEND, os.O_CREATE or os.O_EXCL)
// and, when it creates it, perm. Only a file ralphd made is opened: see
// [Dir.Check]. An existing file is looked at before it is opened (so no
// device is ever opened) and again after (so one swapped in between is
// refused), and the open never blocks on a FIFO. The file's descriptor is
// blocking, as usual, once it is known to be a regular file.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if flag&^openFlags != 0 {
		return nil, fmt.Errorf("open %s: unsupported flags %#x", d.Join(name), flag&^openFlags)
	}
	p, base, err := d.parent(name)
	if err != nil {
		return nil, err
	}
	defer d.release(p)
	path := d.Join(name)
	var before unix.Stat_t
	err = unix.Fstatat(p.fd(), base, &before, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil:
		if err := p.ours(path, &before, false); err != nil {
			return nil, err
		}
	case !errors.Is(err, unix.ENOENT) || flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	fd, err := unix.Openat(p.fd(), base, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, uint32(perm.Perm()))
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) {
			var st unix.Stat_t
			if unix.Fstatat(p.fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				return nil, p.ours(path, &st, false)
			}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := p.ours(path, &st, false); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	// A regular file: drop O_NONBLOCK, which only mattered for a FIFO.
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err == nil {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Open opens the file name below d for reading: see [Dir.OpenFile].
func (d *Dir) Open(name string) (*os.File, error) {
	return d.OpenFile(name, os.O_RDONLY, 0)
}

// ReadFile reads the file name below d, a file ralphd made of at most max
// bytes (see [Dir.OpenFile] and [Read]).
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, d.Join(name), max)
}

// WriteFile replaces the file name below d with data, with mode perm,
// atomically: see [Writer.WriteIn].
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return Writer{}.WriteIn(d, name, data, perm)
}

// Remove removes the file name below d. It removes only a file ralphd
// made (see [Dir.Check]); anything else is left where it is and the error
// says what it is. Removing a name never touches what a link there
// points to, so a swap between the check and the removal can only make
// ralphd remove a link it did not make, never the file it points to.
func (d *Dir) Remove(name string) error {
	p, base, err := d.parent(name)
	if err != nil {
		return err
	}
	defer d.release(p)
	path := d.Join(name)
	var st unix.Stat_t
	if err := unix.Fstatat(p.fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	if err := p.ours(path, &st, false); err != nil {
		return err
	}
	if err := unix.Unlinkat(p.fd(), base, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// RemoveAny removes whatever is at name below d, except a directory
// that is not empty: a file, a symlink (never what it points to), a FIFO.
// It is for what a caller has decided is not to be kept.
func (d *Dir) RemoveAny(name string) error {
	p, base, err := d.parent(name)
	if err != nil {
		return err
	}
	defer d.release(p)
	err = unix.Unlinkat(p.fd(), base, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		err = unix.Unlinkat(p.fd(), base, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: d.Join(name), Err: err}
	}
	return nil
}

// RemoveAll removes name below d and, when it is a directory, everything
// under it, never descending through a link (a link is removed, not
// followed) nor into another file system. A missing name is not an error.
func (d *Dir) RemoveAll(name string) error {
	p, base, err := d.parent(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.release(p)
	return p.removeAll(base)
}

// removeAll removes the entry c of d and, for a directory, its contents.
func (d *Dir) removeAll(c string) error {
	err := unix.Unlinkat(d.fd(), c, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return &fs.PathError{Op: "remove", Path: d.Join(c), Err: err}
	}
	sub, err := d.child(c)
	if err != nil {
		return err
	}
	names, err := sub.f.Readdirnames(-1)
	for _, n := range names {
		if e := sub.removeAll(n); e != nil && err == nil {
			err = e
		}
	}
	_ = sub.Close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), c, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: d.Join(c), Err: err}
	}
	return nil
}

// Rename moves oldname below d to newname below d, never replacing
// anything at newname: the error then wraps fs.ErrExist. It moves the
// name, whatever it is (a link is moved, never followed), so it is how
// something foreign is moved aside. Both names' directories are reached
// without following a link.
func (d *Dir) Rename(oldname, newname string) error {
	op, ob, err := d.parent(oldname)
	if err != nil {
		return err
	}
	defer d.release(op)
	np, nb, err := d.parent(newname)
	if err != nil {
		return err
	}
	defer d.release(np)
	err = unix.Renameat2(op.fd(), ob, np.fd(), nb, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A file system without RENAME_NOREPLACE: check, then rename. A
		// name made in between is replaced, which only loses a name.
		var st unix.Stat_t
		if unix.Fstatat(np.fd(), nb, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			err = unix.EEXIST
		} else {
			err = unix.Renameat(op.fd(), ob, np.fd(), nb)
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: err}
	}
	return nil
}

// ReadDir lists the directory name below d ("." for d itself), sorted by
// name, never through a link. The entries' types are those of the
// entries themselves (a symlink is a symlink).
func (d *Dir) ReadDir(name string) ([]fs.DirEntry, error) {
	sub := d
	if name != "." {
		var err error
		if sub, err = d.OpenDir(name); err != nil {
			return nil, err
		}
		defer sub.Close()
	} else {
		// A descriptor of its own: reading moves the offset.
		fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
		}
		sub = &Dir{f: os.NewFile(uintptr(fd), d.path), path: d.path, dev: d.dev, uid: d.uid}
		defer sub.Close()
	}
	names, err := sub.f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", sub.path, err)
	}
	entries := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(sub.fd(), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed meanwhile
		}
		entries = append(entries, fs.FileInfoToDirEntry(statInfo(n, &st)))
	}
	sortEntries(entries)
	return entries, nil
}

// Symlink makes name below d a symlink to target, never through a link
// on the way. It does not replace anything.
func (d *Dir) Symlink(target, name string) error {
	p, base, err := d.parent(name)
	if err != nil {
		return err
	}
	defer d.release(p)
	if err := unix.Symlinkat(target, p.fd(), base); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: d.Join(name), Err: err}
	}
	return nil
}

// Readlink returns the target of the symlink name below d.
func (d *Dir) Readlink(name string) (string, error) {
	p, base, err := d.parent(name)
	if err != nil {
		return "", err
	}
	defer d.release(p)
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(p.fd(), base, buf)
		if err != nil {
			return "", &fs.PathError{Op: "readlink", Path: d.Join(name), Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// Chmod sets the permissions of the directory name below d ("." for d).
func (d *Dir) Chmod(name string, perm fs.FileMode) error {
	sub := d
	if name != "." {
		var err error
		if sub, err = d.OpenDir(name); err != nil {
			return err
		}
		defer sub.Close()
	}
	if err := unix.Fchmod(sub.fd(), uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: sub.path, Err: err}
	}
	return nil
}

// WriteIn replaces the file name below d with data, with mode perm,
// atomically, as [Writer.Write] does, but through d: the directories on
// the way are never reached through a link, the temp file is made with
// O_EXCL|O_NOFOLLOW in the file's own directory and renamed over name.
// What stands at name must be a file ralphd made, or nothing; anything
// else is left alone and the error says what it is ([IsForeign]), so a
// caller can move it aside and write again. (Were it swapped in after that
// check, the rename would replace the name, and never write through it.)
func (w Writer) WriteIn(d *Dir, name string, data []byte, perm fs.FileMode) (err error) {
	path := d.Join(name)
	if err := w.step(StepCreateTemp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	p, base, err := d.parent(name)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer d.release(p)
	var st unix.Stat_t
	if err := unix.Fstatat(p.fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if err := p.ours(path, &st, false); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("write %s: %w", path, err)
	}
	var tmp string
	fd := -1
	for range 100 {
		tmp = "." + base + TempInfix + strconv.FormatUint(rand.Uint64(), 36)
		fd, err = unix.Openat(p.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: create temp file: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), p.Join(tmp))
	closed, renamed := false, false
	defer func() {
		if err != nil && !closed {
			_ = f.Close()
		}
		if err != nil && !renamed {
			_ = unix.Unlinkat(p.fd(), tmp, 0)
		}
	}()
	if err := w.fill(f, path, data, perm, &closed); err != nil {
		return err
	}
	if err := w.step(StepRename, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := unix.Renameat(p.fd(), tmp, p.fd(), base); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	renamed = true
	if err := w.step(StepSyncDir, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := p.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// fileStat is an fs.FileInfo made from a stat.
type fileStat struct {
	name string
	st   unix.Stat_t
}

func statInfo(name string, st *unix.Stat_t) fs.FileInfo { return &fileStat{name: name, st: *st} }

func (i *fileStat) Name() string       { return i.name }
func (i *fileStat) Size() int64        { return i.st.Size }
func (i *fileStat) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i *fileStat) IsDir() bool        { return i.Mode().IsDir() }
func (i *fileStat) Sys() any           { return &i.st }
func (i *fileStat) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch i.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if i.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if i.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if i.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// sortEntries sorts directory entries by name, as os.ReadDir does.
func sortEntries(es []fs.DirEntry) {
	slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

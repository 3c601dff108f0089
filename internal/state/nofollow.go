package state

// What ralphd does when something it did not make stands where its own
// file or directory should be. The agent runs as the user, knows this
// layout and, without a sandbox, can change any of it; ralphd's answer is
// the same everywhere, because every operation goes through the store's
// atomicfile.Dir:
//
//   - the state directory (<root>, <root>/projects, <root>/projects/<id>)
//     is a symlink, not a directory, or owned by another user: ralphd
//     refuses to start, and the error says which path and what to do.
//     ralphd never follows such a link, so it cannot be made to keep (and
//     later delete) its state in a directory of the user's. The parents of
//     <root> are the user's to arrange and are followed.
//   - a symlink (to a file or a directory), FIFO, socket, device, hard link
//     (a second name of some other file), directory or file of another user
//     stands where a state file or one of the subdirectories (attempts/,
//     logs/, reports/) belongs: ralphd does not read, write, append to,
//     lock, list or remove through it. It renames that name to
//     <name>.corrupt-<time> (which moves the link itself, never touching
//     what it points to), warns naming the path, what it was and where it
//     went, and goes on as if the file were missing: the file or directory
//     is made afresh. A status report, which changes nothing, only warns.
//   - a write replaces its file by rename, a removal unlinks a name: even
//     when a link is swapped in after ralphd looked, neither can write to
//     or delete what the link points to; at worst ralphd removes or
//     replaces the link itself, unreported.
//
// So nothing of the user's is ever read, changed or deleted, and nothing
// of ralphd's is lost without a warning: what was in the way is kept
// beside, under its corrupt-<time> name.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// openProjectDir makes (when needed) and opens <root>/projects/<id>,
// refusing a link or a directory of another user at any of its three
// levels, with an error that says what to do.
func openProjectDir(root, id string) (*atomicfile.Dir, error) {
	rd, err := atomicfile.MakeDirAll(root, dirPerm)
	if err != nil {
		return nil, stateDirError(err)
	}
	defer rd.Close()
	d, err := rd.MakeDir("projects/"+id, dirPerm)
	if err != nil {
		return nil, stateDirError(err)
	}
	return d, nil
}

// stateDirError adds to err, about the state directory itself, what the
// user can do about it.
func stateDirError(err error) error {
	if atomicfile.IsForeign(err) {
		return fmt.Errorf("%w; ralphd keeps its state only in directories it made: move that path aside (or remove the link) and run again, or set RALPH_STATE_DIR to a directory of your own", err)
	}
	return err
}

// CheckRoot checks the state root the way a run uses it: it makes root
// and root/projects when they are missing, refuses a link or a directory
// of another user at either (the run's own error, with what to do), and
// writes and removes a file in projects/. It is `ralphd doctor`'s check.
func CheckRoot(root string) error {
	rd, err := atomicfile.MakeDirAll(root, dirPerm)
	if err != nil {
		return stateDirError(err)
	}
	defer rd.Close()
	d, err := rd.MakeDir("projects", dirPerm)
	if err != nil {
		return stateDirError(err)
	}
	defer d.Close()
	name := fmt.Sprintf(".check-%d", os.Getpid())
	if err := d.WriteFile(name, []byte("ralphd\n"), filePerm); err != nil {
		return fmt.Errorf("write in %s: %w", d.Path(), err)
	}
	return d.Remove(name)
}

// openStateDir opens <root>/projects/<id> without making anything, for
// readers that change nothing. A missing directory is fs.ErrNotExist.
func openStateDir(root, id string) (*atomicfile.Dir, error) {
	rd, err := atomicfile.OpenDir(root)
	if err != nil {
		return nil, stateDirError(err)
	}
	defer rd.Close()
	d, err := rd.OpenDir("projects/" + id)
	if err != nil {
		return nil, stateDirError(err)
	}
	return d, nil
}

// read reads the state file name (relative to the state directory).
func (s *Store) read(name string) ([]byte, error) { return readIn(s.root, name) }

// writeFile replaces the state file name with data atomically, through
// the redacting writer. Something foreign at name, or on the way to it, is
// first moved aside with a warning (setAside).
func (s *Store) writeFile(name string, data []byte) error {
	err := s.writer.write(s.root, name, data, filePerm)
	if !atomicfile.IsForeign(err) {
		return err
	}
	if aerr := s.setAside(name); aerr != nil {
		return errors.Join(err, aerr)
	}
	return s.writer.write(s.root, name, data, filePerm)
}

// ensureDir makes the subdirectory name of the state directory, moving
// aside whatever foreign thing is in its place. The caller holds s.mu.
func (s *Store) ensureDir(name string) error {
	d, err := s.root.MakeDir(name, dirPerm)
	if atomicfile.IsForeign(err) {
		if err := s.setAsideFound(name, err); err != nil {
			return err
		}
		d, err = s.root.MakeDir(name, dirPerm)
	}
	if err != nil {
		return err
	}
	return d.Close()
}

// setAside moves aside every foreign thing on the way to the state file
// name (a subdirectory that is a link, say) and at name itself, each with
// a warning, and makes the subdirectories again. Nothing is deleted, and
// what a link points to is never touched.
func (s *Store) setAside(name string) error {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		if err := s.ensureDir(strings.Join(parts[:i], "/")); err != nil {
			return err
		}
	}
	if err := s.root.Check(name); atomicfile.IsForeign(err) {
		return s.setAsideFound(name, err)
	}
	return nil
}

// setAsideFound moves name, found foreign as why says, aside and warns.
func (s *Store) setAsideFound(name string, why error) error {
	dst, err := s.moveAside(name)
	if err != nil {
		return fmt.Errorf("%w; %w", why, err)
	}
	s.warn("%v; it was moved aside to %s, untouched, and ralphd goes on without it", why, dst)
	return nil
}

// syncDir fsyncs the state directory's subdirectory name ("." for the
// state directory itself).
func (s *Store) syncDir(name string) error {
	if name == "." {
		return s.root.Sync()
	}
	d, err := s.root.OpenDir(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// openDirOf opens the directory holding path, for the functions that take
// a state file's path rather than a Store: the directory itself must not
// be a link.
func openDirOf(path string) (*atomicfile.Dir, string, error) {
	d, err := atomicfile.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, "", err
	}
	return d, filepath.Base(path), nil
}

package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error Read returns for a path that is
// not a regular file: a directory, a symlink, a FIFO, a socket or a device.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error Read returns for a file over its
// limit.
var ErrTooLarge = errors.New("file too large")

// Read reads a file that ralphd only ever replaces whole with [Write]: a
// regular file of at most max bytes. Anything else in its place is refused
// with an error that wraps [ErrNotRegular] or [ErrTooLarge] and names what
// is there, for the caller to say what to do: a FIFO would block the read
// forever, a symlink to /dev/zero would never end, and a directory cannot
// be read. Read never follows a symlink and never blocks on a FIFO put
// there between its check and its open. A missing file gives an error
// that wraps [fs.ErrNotExist].
func Read(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, path, max)
}

// Open opens the file at path for reading, as [Read] does: only a regular
// file, never through a symlink, never blocking on a FIFO, and without
// opening a device. Anything else is an error wrapping [ErrNotRegular].
// For streaming a file someone else can replace, such as a log.
func Open(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi.Mode()); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, regular(path, fs.ModeSymlink)
		}
		return nil, err
	}
	return onlyRegular(f, path)
}

// ReadFollow reads the file at path as [Read] does, but follows a symlink
// to it: for a person's files (configuration, prompts), which are often
// links into a dotfiles repository. What the link leads to must still be
// a regular file of at most max bytes; a FIFO never blocks the read.
func ReadFollow(path string, max int64) ([]byte, error) {
	f, err := OpenFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAtMost(f, path, max)
}

// OpenFollow opens the file at path for reading, following a symlink,
// and returns it only when it is a regular file: a FIFO, directory or
// device is an error wrapping [ErrNotRegular]. Opening never blocks on a
// FIFO. For reading part of a file someone else controls, such as the
// first lines of a project file an error message names.
func OpenFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return onlyRegular(f, path)
}

// onlyRegular returns f, opened from path, when it is a regular file;
// otherwise it closes f and returns an error wrapping [ErrNotRegular].
func onlyRegular(f *os.File, path string) (*os.File, error) {
	fi, err := f.Stat()
	if err == nil {
		err = regular(path, fi.Mode())
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// readAtMost reads f to its end, refusing more than max bytes.
func readAtMost(f *os.File, path string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w (over %s)", path, ErrTooLarge, size(max))
	}
	return data, nil
}

// regular says what is wrong when mode is not a regular file's.
func regular(path string, mode fs.FileMode) error {
	if mode.IsRegular() {
		return nil
	}
	return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, Describe(mode))
}

// Describe names the kind of file mode is for a person: "a regular file",
// "a directory", "a symlink", "a FIFO", "a socket" or "a device".
func Describe(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeSymlink != 0:
		return "a symlink"
	case mode&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device"
	}
	return "a " + mode.Type().String()
}

// size renders a byte count in the largest whole binary unit.
func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

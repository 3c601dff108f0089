package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// ErrLocked is matched (with errors.Is) by the error Store.Lock returns
// when another ralphd holds the project's lock.
var ErrLocked = errors.New("another ralphd is running on this project")

// LockInfo is what the lock holder writes inside ralphd.lock.
type LockInfo struct {
	PID   int       `json:"pid"`
	Mode  string    `json:"mode"`
	Since time.Time `json:"since"`
}

// LockedError says who holds the project lock. Fields are zero when the
// holder had not written them yet.
type LockedError struct {
	PID   int
	Mode  string
	Since time.Time
}

// Error reads "another ralphd (PID n, build mode, since <time>) is running
// on this project".
func (e *LockedError) Error() string {
	var parts []string
	if e.PID > 0 {
		parts = append(parts, "PID "+strconv.Itoa(e.PID))
	} else {
		parts = append(parts, "PID unknown")
	}
	if e.Mode != "" {
		parts = append(parts, e.Mode+" mode")
	}
	if !e.Since.IsZero() {
		parts = append(parts, "since "+e.Since.Local().Format("2006-01-02 15:04:05 MST"))
	}
	return "another ralphd (" + strings.Join(parts, ", ") + ") is running on this project"
}

// Is makes errors.Is(err, ErrLocked) true for a *LockedError.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is the held single-instance lock of a project. The kernel releases
// it when the process dies, however it dies, so a crashed ralphd never
// blocks the next one. Its file descriptor is close-on-exec, so agents
// started by ralphd do not inherit it.
type Lock struct {
	f *os.File
}

// LockPath returns the path of ralphd.lock.
func (s *Store) LockPath() string { return s.path(LockFile) }

// Lock takes the project's single-instance lock (flock LOCK_EX|LOCK_NB on
// ralphd.lock) and writes this process's PID, mode and start time inside.
// When another process holds it, Lock returns a *LockedError naming that
// process; it never waits for it.
func (s *Store) Lock(mode string) (*Lock, error) {
	// Never O_TRUNC: the holder's details must survive a failed attempt.
	// Never through a link, and never a file with a second name: taking
	// the lock truncates the file, which a hard link to one of the user's
	// files would make a loss. Such a thing is moved aside (no ralphd
	// can hold a lock on it) and a new lock file made.
	const flags = os.O_RDWR | os.O_CREATE
	f, err := s.root.OpenFile(LockFile, flags, filePerm)
	if atomicfile.IsForeign(err) {
		s.mu.Lock()
		err = s.setAside(LockFile)
		s.mu.Unlock()
		if err == nil {
			f, err = s.root.OpenFile(LockFile, flags, filePerm)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock project: %w", err)
	}
	// A status probe (LockHolder) holds a shared lock for an instant, and
	// a holder that has just taken the lock has not written its details
	// yet. So a conflict whose file names nobody, or a process that no
	// longer exists (a previous holder killed by SIGKILL), is retried a few
	// times before it counts: a restart after a crash is never refused
	// because `ralphd status` ran at that moment.
	for try := 0; ; try++ {
		err = flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock project: %w", err)
		}
		info, _ := readLockInfo(s.root, LockFile)
		if (info.PID != 0 && pidExists(info.PID)) || try >= 20 {
			_ = f.Close()
			return nil, &LockedError{PID: info.PID, Mode: info.Mode, Since: info.Since}
		}
		s.lockWait()
	}
	info := LockInfo{PID: os.Getpid(), Mode: mode, Since: s.Now().Truncate(time.Second)}
	data, err := json.Marshal(info)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock project: %w", err)
	}
	data = append(data, '\n')
	if err := f.Truncate(0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock project: %w", err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock project: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock project: %w", err)
	}
	return &Lock{f: f}, nil
}

// Release empties the lock file and releases the lock. The file itself is
// kept: deleting a flock'd file lets two processes lock different inodes.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	truncErr := l.f.Truncate(0)
	closeErr := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	if err := errors.Join(truncErr, closeErr); err != nil {
		return fmt.Errorf("release lock: %w", err)
	}
	return nil
}

// pidExists reports whether a process with this PID exists.
func pidExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// ParseLockInfo parses the content of ralphd.lock.
func ParseLockInfo(data []byte) (LockInfo, error) {
	return parseObject[LockInfo]("lock file", data)
}

func readLockInfo(d *atomicfile.Dir, name string) (LockInfo, error) {
	data, err := readIn(d, name)
	if err != nil {
		return LockInfo{}, fmt.Errorf("read lock file: %w", err)
	}
	return ParseLockInfo(data)
}

// LockHolder reports who holds the lock file at path without taking it:
// it reads the details the holder wrote, and checks that the lock is
// really held with a non-blocking shared flock on a separate descriptor.
// It returns nil when nobody holds the lock (whatever the file says). A
// holder that has not written its details yet is returned with zero
// fields.
func LockHolder(path string) (*LockInfo, error) {
	d, name, err := openDirOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("check lock: %w", err)
	}
	defer d.Close()
	return lockHolderIn(d, name)
}

// lockHolderIn is LockHolder for the lock file name below d.
func lockHolderIn(d *atomicfile.Dir, name string) (*LockInfo, error) {
	// Never through a link, and never blocking: a FIFO planted in the lock
	// file's place must not make `ralphd status` wait forever for a writer.
	f, err := d.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("check lock: %w", err)
	}
	defer f.Close()
	err = flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = flock(f, syscall.LOCK_UN)
		return nil, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("check lock: %w", err)
	}
	info, _ := readLockInfo(d, name)
	return &info, nil
}

package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestLockedErrorMessage(t *testing.T) {
	since := time.Date(2026, 1, 2, 15, 4, 5, 0, time.Local)
	tests := []struct {
		name string
		err  *LockedError
		want string
	}{
		{"full", &LockedError{PID: 4242, Mode: "build", Since: since},
			"another ralphd (PID 4242, build mode, since " + since.Format("2006-01-02 15:04:05 MST") + ") is running on this project"},
		{"details not written yet", &LockedError{}, "another ralphd (PID unknown) is running on this project"},
		{"plan without time", &LockedError{PID: 7, Mode: "plan"}, "another ralphd (PID 7, plan mode) is running on this project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(tt.err.Error(), tt.want)
			is.True(errors.Is(tt.err, ErrLocked))
			var wrapped error = tt.err
			is.True(errors.Is(errors.Join(errors.New("start"), wrapped), ErrLocked))
		})
	}
}

// TestSecondInstance holds the lock in a real child process: a second
// ralphd gets a LockedError naming the child, status sees the holder, and
// once the child releases it the lock can be taken.
func TestSecondInstance(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	cmd, stdin := startLockHolder(t, root, "build")

	s, err := Open(context.Background(), root, Identity{ID: testID, TopLevel: root}, "v")
	is.NoErr(err)
	_, err = s.Lock("plan")
	is.True(errors.Is(err, ErrLocked))
	var le *LockedError
	is.True(errors.As(err, &le))
	is.Equal(le.PID, cmd.Process.Pid)
	is.Equal(le.Mode, "build")
	is.True(!le.Since.IsZero())
	is.True(strings.HasPrefix(err.Error(), "another ralphd (PID "+strconv.Itoa(cmd.Process.Pid)+", build mode, since "))
	is.True(strings.HasSuffix(err.Error(), ") is running on this project"))

	holder, err := LockHolder(s.LockPath())
	is.NoErr(err)
	is.True(holder != nil)
	is.Equal(holder.PID, cmd.Process.Pid)
	is.Equal(holder.Mode, "build")

	// The probe did not disturb the holder's details.
	_, err = s.Lock("plan")
	is.True(errors.As(err, &le))
	is.Equal(le.PID, cmd.Process.Pid)

	is.NoErr(stdin.Close()) // the child releases and exits
	is.NoErr(cmd.Wait())
	holder, err = LockHolder(s.LockPath())
	is.NoErr(err)
	is.Equal(holder, (*LockInfo)(nil))
	l, err := s.Lock("plan")
	is.NoErr(err)
	is.NoErr(l.Release())
}

// TestStaleLock kills the holder with SIGKILL: the kernel drops its flock,
// so the next ralphd starts even though the lock file still names the dead
// process.
func TestStaleLock(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	cmd, _ := startLockHolder(t, root, "build")
	is.NoErr(cmd.Process.Signal(syscall.SIGKILL))
	err := cmd.Wait()
	is.True(err != nil) // killed

	s, err := Open(context.Background(), root, Identity{ID: testID, TopLevel: root}, "v")
	is.NoErr(err)
	// The dead holder's details are still in the file...
	info, err := ParseLockInfo([]byte(readFile(t, s.LockPath())))
	is.NoErr(err)
	is.Equal(info.PID, cmd.Process.Pid)
	// ...but nobody holds the lock.
	holder, err := LockHolder(s.LockPath())
	is.NoErr(err)
	is.Equal(holder, (*LockInfo)(nil))

	s.Now = fixedNow
	l, err := s.Lock("daemon")
	is.NoErr(err)
	info, err = ParseLockInfo([]byte(readFile(t, s.LockPath())))
	is.NoErr(err)
	is.Equal(info, LockInfo{PID: os.Getpid(), Mode: "daemon", Since: fixedNow()})
	is.NoErr(l.Release())
	is.Equal(readFile(t, s.LockPath()), "") // emptied on release
}

func TestLockSameProcessTwice(t *testing.T) {
	// flock locks belong to open file descriptions, so a second Lock in the
	// same process conflicts too.
	is := is.New(t)
	s := openStore(t)
	l, err := s.Lock("build")
	is.NoErr(err)
	fi, err := os.Stat(s.LockPath())
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	_, err = s.Lock("build")
	var le *LockedError
	is.True(errors.As(err, &le))
	is.Equal(le.PID, os.Getpid())
	is.NoErr(l.Release())
	is.NoErr(l.Release()) // idempotent
	var nilLock *Lock
	is.NoErr(nilLock.Release())
}

func TestLockHolderMissingFile(t *testing.T) {
	is := is.New(t)
	holder, err := LockHolder(filepath.Join(t.TempDir(), "ralphd.lock"))
	is.NoErr(err)
	is.Equal(holder, (*LockInfo)(nil))
}

// TestLockRetriesWhileProbed holds a shared lock the way a status probe
// does, over a lock file that names a dead process: Lock retries instead
// of refusing, and gets the lock once the probe lets go.
func TestLockRetriesWhileProbed(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	writeFile(t, s.LockPath(), `{"pid":2147483646,"mode":"build","since":"2026-01-02T15:04:05Z"}`)
	probe, err := os.Open(s.LockPath())
	is.NoErr(err)
	is.NoErr(flock(probe, syscall.LOCK_SH|syscall.LOCK_NB))
	waits := 0
	s.lockWait = func() {
		waits++
		_ = probe.Close() // the probe ends
	}
	l, err := s.Lock("build")
	is.NoErr(err)
	is.Equal(waits, 1)
	is.NoErr(l.Release())
}

// TestLockGivesUpOnLiveHolder: a conflict with a holder that exists is
// reported at once, and one that never writes its details is reported
// after the retries.
func TestLockGivesUpOnLiveHolder(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	waits := 0
	s.lockWait = func() { waits++ }
	held, err := os.Open(s.LockPath())
	if os.IsNotExist(err) {
		writeFile(t, s.LockPath(), "")
		held, err = os.Open(s.LockPath())
	}
	is.NoErr(err)
	defer held.Close()
	is.NoErr(flock(held, syscall.LOCK_EX|syscall.LOCK_NB))

	_, err = s.Lock("build") // empty file: retried, then refused
	is.True(errors.Is(err, ErrLocked))
	is.Equal(waits, 20)

	waits = 0
	writeFile(t, s.LockPath(), `{"pid":`+strconv.Itoa(os.Getpid())+`,"mode":"plan"}`)
	_, err = s.Lock("build") // a live holder: refused at once
	var le *LockedError
	is.True(errors.As(err, &le))
	is.Equal(le.Mode, "plan")
	is.Equal(waits, 0)
}

package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestAbstractSocket(t *testing.T) {
	is := is.New(t)
	name := "@ralphd-sdnotify-test-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	l := listen(t, name)
	n := newSDNotifier(env(map[string]string{envNotifySocket: name}))
	is.NoErr(n.Ready())
	is.Equal(l.next(), "READY=1")
	// The abstract name has no file: nothing was created in the cwd.
	_, err := os.Stat(name)
	is.True(errors.Is(err, os.ErrNotExist))
}

func TestReloading(t *testing.T) {
	is := is.New(t)
	l := listenFile(t)
	n := newSDNotifier(env(map[string]string{envNotifySocket: l.addr}))
	before, err := monotonicNow()
	is.NoErr(err)
	is.NoErr(n.Reloading())
	after, err := monotonicNow()
	is.NoErr(err)

	lines := strings.Split(l.next(), "\n")
	is.Equal(len(lines), 2)
	is.Equal(lines[0], "RELOADING=1")
	v, ok := strings.CutPrefix(lines[1], "MONOTONIC_USEC=")
	is.True(ok)
	usec, err := strconv.ParseInt(v, 10, 64)
	is.NoErr(err)
	// The stamp is CLOCK_MONOTONIC, read between our two readings.
	is.True(usec >= before.Microseconds() && usec <= after.Microseconds())
}

func TestReloadingClockError(t *testing.T) {
	is := is.New(t)
	l := listenFile(t)
	n := newSDNotifier(env(map[string]string{envNotifySocket: l.addr}))
	n.monotonic = func() (time.Duration, error) { return 0, errors.New("no clock") }
	is.True(n.Reloading() != nil)
}

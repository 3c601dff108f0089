package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"
)

// listener is a stand-in service manager: a unix datagram socket that
// collects the notifications sent to it.
type listener struct {
	t    *testing.T
	conn *net.UnixConn
	addr string
}

func listen(t *testing.T, addr string) *listener {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &listener{t: t, conn: conn, addr: addr}
}

// listenFile listens on a socket file in a fresh temporary directory.
func listenFile(t *testing.T) *listener {
	t.Helper()
	return listen(t, filepath.Join(t.TempDir(), "notify.sock"))
}

// next returns the next datagram. The deadline only keeps a broken test
// from hanging; it asserts nothing about speed.
func (l *listener) next() string {
	l.t.Helper()
	if err := l.conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		l.t.Fatal(err)
	}
	buf := make([]byte, 8192)
	n, _, err := l.conn.ReadFromUnix(buf)
	if err != nil {
		l.t.Fatalf("read a notification: %v", err)
	}
	return string(buf[:n])
}

// env returns a getenv over the given map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestSendsInOrder(t *testing.T) {
	is := is.New(t)
	l := listenFile(t)
	n := newSDNotifier(env(map[string]string{envNotifySocket: l.addr}))
	is.True(n.Enabled())

	is.NoErr(n.Ready())
	is.NoErr(n.Status("build bd-a1b2 'Add login' iteration 3, attempt 2/3"))
	is.NoErr(n.Watchdog())
	is.NoErr(n.Stopping())

	is.Equal(l.next(), "READY=1")
	is.Equal(l.next(), "STATUS=build bd-a1b2 'Add login' iteration 3, attempt 2/3")
	is.Equal(l.next(), "WATCHDOG=1")
	is.Equal(l.next(), "STOPPING=1")
}

func TestUnsetSocketIsNoOp(t *testing.T) {
	is := is.New(t)
	for _, n := range []*sdNotifier{newSDNotifier(env(nil)), nil, {}} {
		is.True(!n.Enabled())
		is.NoErr(n.Ready())
		is.NoErr(n.Status("x"))
		is.NoErr(n.Watchdog())
		is.NoErr(n.Stopping())
		is.NoErr(n.Reloading())
		is.NoErr(n.Send("A=1"))
		_, ok := n.WatchdogInterval()
		is.True(!ok)
		n.RunWatchdog(context.Background(), nil) // returns at once
	}
	// A watchdog without a socket is pointless, so it is off too.
	n := newSDNotifier(env(map[string]string{envWatchdogUSec: "1000000"}))
	_, ok := n.WatchdogInterval()
	is.True(!ok)
}

func TestMissingSocketIsAnError(t *testing.T) {
	is := is.New(t)
	n := newSDNotifier(env(map[string]string{envNotifySocket: filepath.Join(t.TempDir(), "absent.sock")}))
	is.True(n.Ready() != nil)
}

func TestUnsupportedSocket(t *testing.T) {
	is := is.New(t)
	for _, addr := range []string{"vsock:2:1234", "relative.sock"} {
		err := newSDNotifier(env(map[string]string{envNotifySocket: addr})).Ready()
		is.True(errors.Is(err, errUnsupportedSocket))
	}
}

func TestWatchdogPIDMismatchDisablesWatchdog(t *testing.T) {
	is := is.New(t)
	l := listenFile(t)
	pid := os.Getpid()
	mine := newSDNotifier(env(map[string]string{envNotifySocket: l.addr, envWatchdogUSec: "4000000", envWatchdogPID: strconv.Itoa(pid)}))
	d, ok := mine.WatchdogInterval()
	is.True(ok)
	is.Equal(d, 4*time.Second)

	other := newSDNotifier(env(map[string]string{envNotifySocket: l.addr, envWatchdogUSec: "4000000", envWatchdogPID: strconv.Itoa(pid + 1)}))
	_, ok = other.WatchdogInterval()
	is.True(!ok)
	other.RunWatchdog(context.Background(), nil) // returns at once, sends nothing
	is.NoErr(other.Ready())
	is.Equal(l.next(), "READY=1") // the first datagram is ours, not a ping
}

func TestParseWatchdog(t *testing.T) {
	const pid = 4242
	tests := []struct {
		name      string
		usec, wpd string
		want      time.Duration
		ok        bool
	}{
		{"unset", "", "", 0, false},
		{"systemd default form", "120000000", "", 120 * time.Second, true},
		{"our pid", "30000000", "4242", 30 * time.Second, true},
		{"other pid", "30000000", "4243", 0, false},
		{"pid zero", "30000000", "0", 0, false},
		{"pid malformed", "30000000", "42x", 0, false},
		{"pid negative", "30000000", "-4242", 0, false},
		{"one microsecond", "1", "", time.Microsecond, true},
		{"zero", "0", "", 0, false},
		{"negative", "-5", "", 0, false},
		{"plus sign", "+5", "", 0, false},
		{"spaces", " 5", "", 0, false},
		{"unit suffix", "5s", "", 0, false},
		{"hex", "0x10", "", 0, false},
		{"infinity", "18446744073709551615", "", 0, false},
		{"beyond uint64", "18446744073709551616", "", 0, false},
		{"largest duration", "9223372036854775", "", 9223372036854775 * time.Microsecond, true},
		{"overflows duration", "9223372036854776", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, ok := parseWatchdog(tt.usec, tt.wpd, pid)
			is.Equal(ok, tt.ok)
			is.Equal(got, tt.want)
		})
	}
}

func FuzzParseWatchdog(f *testing.F) {
	for _, s := range []string{"", "120000000", "1", "0", "-1", "18446744073709551615", "9223372036854776", "5s"} {
		f.Add(s, "")
		f.Add(s, "4242")
	}
	f.Fuzz(func(t *testing.T, usec, wpid string) {
		d, ok := parseWatchdog(usec, wpid, 4242)
		if ok != (d > 0) {
			t.Fatalf("parseWatchdog(%q, %q) = %v, %v: enabled iff positive", usec, wpid, d, ok)
		}
		if ok && d%time.Microsecond != 0 {
			t.Fatalf("parseWatchdog(%q, %q) = %v: not whole microseconds", usec, wpid, d)
		}
	})
}

func TestRunWatchdogPingsUntilCancelled(t *testing.T) {
	is := is.New(t)
	l := listenFile(t)
	// 20 ms timeout: a ping every 10 ms.
	n := newSDNotifier(env(map[string]string{envNotifySocket: l.addr, envWatchdogUSec: "20000"}))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { n.RunWatchdog(ctx, func(err error) { t.Errorf("ping: %v", err) }) })
	for range 3 {
		is.Equal(l.next(), "WATCHDOG=1")
	}
	cancel()
	wg.Wait() // RunWatchdog returned
}

func TestRunWatchdogReportsErrors(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	n := newSDNotifier(env(map[string]string{envNotifySocket: filepath.Join(dir, "gone.sock"), envWatchdogUSec: "20000"}))
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.RunWatchdog(ctx, func(err error) {
			select {
			case errs <- err:
			case <-ctx.Done():
			}
		})
	}()
	// It keeps trying after a failure.
	is.True(<-errs != nil)
	is.True(<-errs != nil)
	cancel()
	<-done
}

func TestStatusIsSanitized(t *testing.T) {
	long := strings.Repeat("é", maxStatusLen) // 2 bytes each
	tests := []struct {
		name, in, want string
	}{
		{"plain", "idle: 0 ready, 4 blocked", "idle: 0 ready, 4 blocked"},
		{"empty", "", ""},
		{"newline cannot inject", "x\nREADY=1", "x READY=1"},
		{"carriage return and nul", "a\r\x00b", "a  b"},
		{"invalid utf-8", "bad \xff byte", "bad \uFFFD byte"},
		{"long", long, strings.Repeat("é", (maxStatusLen-len("…"))/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			l := listenFile(t)
			n := newSDNotifier(env(map[string]string{envNotifySocket: l.addr}))
			is.NoErr(n.Status(tt.in))
			got := l.next()
			is.Equal(got, "STATUS="+tt.want)
			is.True(utf8.ValidString(got))
			is.True(len(got) <= len("STATUS=")+maxStatusLen)
		})
	}
}

func TestSendRefusesMalformedAssignments(t *testing.T) {
	l := listenFile(t)
	n := newSDNotifier(env(map[string]string{envNotifySocket: l.addr}))
	for _, a := range []string{"READY", "=1", "A=1\nB=2", "A=\x00"} {
		t.Run(strconv.Quote(a), func(t *testing.T) {
			is := is.New(t)
			is.True(n.Send("OK=1", a) != nil)
		})
	}
	// Nothing was sent: the next datagram is this one.
	is := is.New(t)
	is.NoErr(n.Send("A=1", "B=2"))
	is.Equal(l.next(), "A=1\nB=2")
}

func TestEnvNames(t *testing.T) {
	is := is.New(t)
	is.Equal(EnvNames(), []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"})
}

// EnvNames returns the environment variables that belong to this process's
// service manager connection. A child process (an agent) should not inherit
// them: it would otherwise be able to talk to systemd on ralphd's behalf.
func EnvNames() []string {
	return []string{envNotifySocket, envWatchdogUSec, envWatchdogPID}
}

// Reloading tells the service manager that the service is reloading its
// configuration. It sends RELOADING=1 with MONOTONIC_USEC set to the current
// CLOCK_MONOTONIC time in microseconds, which systemd 253 and later require
// for Type=notify-reload units (older versions ignore it). Call Ready when
// the reload is done.
func (n *sdNotifier) Reloading() error {
	if !n.Enabled() {
		return nil
	}
	now, err := n.monotonic()
	if err != nil {
		return fmt.Errorf("sdnotify: read the monotonic clock: %w", err)
	}
	return n.Send("RELOADING=1", "MONOTONIC_USEC="+strconv.FormatInt(now.Microseconds(), 10))
}

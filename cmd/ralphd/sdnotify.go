package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Environment variables systemd sets for a notify service.
const (
	// envNotifySocket names the datagram socket notifications go to.
	envNotifySocket = "NOTIFY_SOCKET"
	// envWatchdogUSec is the watchdog timeout in microseconds.
	envWatchdogUSec = "WATCHDOG_USEC"
	// envWatchdogPID is the PID the watchdog is meant for.
	envWatchdogPID = "WATCHDOG_PID"
)

// maxStatusLen is the longest STATUS= text Status sends, in bytes; longer
// texts are cut at a character boundary and end with "…". systemd ignores
// notification datagrams larger than 4096 bytes.
const maxStatusLen = 1024

// sdSendTimeout bounds one datagram send, so a wedged service manager can
// never stall the daemon.
const sdSendTimeout = 2 * time.Second

// errUnsupportedSocket is returned by every send when NOTIFY_SOCKET holds an
// address form other than an absolute path or an @abstract name.
var errUnsupportedSocket = errors.New("sdnotify: unsupported NOTIFY_SOCKET address (want /path or @abstract)")

// sdNotifier sends notifications to the service manager. Its zero value and a
// nil *sdNotifier are valid and do nothing. It is safe for concurrent use.
type sdNotifier struct {
	// socket is the address from NOTIFY_SOCKET; empty means disabled.
	socket string
	// watchdog is the watchdog timeout; zero means no watchdog for us.
	watchdog time.Duration
	// monotonic reads CLOCK_MONOTONIC, for RELOADING's MONOTONIC_USEC.
	monotonic func() (time.Duration, error)
}

// newSDNotifier returns a sdNotifier configured from the environment read through
// getenv (os.Getenv in production). When NOTIFY_SOCKET is unset every method
// is a no-op.
func newSDNotifier(getenv func(string) string) *sdNotifier {
	return newSDNotifierFor(getenv, os.Getpid())
}

func newSDNotifierFor(getenv func(string) string, pid int) *sdNotifier {
	n := &sdNotifier{socket: getenv(envNotifySocket), monotonic: monotonicNow}
	if n.socket != "" {
		n.watchdog, _ = parseWatchdog(getenv(envWatchdogUSec), getenv(envWatchdogPID), pid)
	}
	return n
}

// parseWatchdog interprets WATCHDOG_USEC and WATCHDOG_PID as sd_watchdog_enabled(3)
// does, for the process with the given pid. It returns the watchdog timeout
// and true when the watchdog is enabled for that process: usec is a
// positive decimal number of microseconds, and pid is empty or equal to
// pid. Anything else (unset, zero, malformed, out of range, or meant for
// another process) disables the watchdog.
func parseWatchdog(usec, watchdogPID string, pid int) (time.Duration, bool) {
	if usec == "" {
		return 0, false
	}
	u, err := strconv.ParseUint(usec, 10, 64)
	if err != nil || u == 0 || u > uint64(time.Duration(1<<63-1)/time.Microsecond) {
		return 0, false
	}
	if watchdogPID != "" {
		p, err := strconv.ParseUint(watchdogPID, 10, 64)
		if err != nil || p == 0 || p != uint64(pid) {
			return 0, false
		}
	}
	return time.Duration(u) * time.Microsecond, true
}

// Enabled reports whether notifications go anywhere (NOTIFY_SOCKET is set).
func (n *sdNotifier) Enabled() bool {
	return n != nil && n.socket != ""
}

// Ready tells the service manager that start-up (or a reload) is finished.
func (n *sdNotifier) Ready() error {
	return n.Send("READY=1")
}

// Status sets the one-line status text `systemctl status` shows. Line
// breaks become spaces, invalid UTF-8 is replaced, and texts longer than
// maxStatusLen are shortened, so any string is safe to pass.
func (n *sdNotifier) Status(s string) error {
	return n.Send("STATUS=" + cleanSDStatus(s))
}

// Stopping tells the service manager that the service is shutting down.
func (n *sdNotifier) Stopping() error {
	return n.Send("STOPPING=1")
}

// Watchdog sends one watchdog keep-alive ping.
func (n *sdNotifier) Watchdog() error {
	return n.Send("WATCHDOG=1")
}

// WatchdogInterval returns the service's watchdog timeout and true when the
// service manager expects keep-alive pings from this process: NOTIFY_SOCKET
// and WATCHDOG_USEC are set, and WATCHDOG_PID, when set, is our PID. Ping at
// half the returned duration, as RunWatchdog does.
func (n *sdNotifier) WatchdogInterval() (time.Duration, bool) {
	if !n.Enabled() || n.watchdog <= 0 {
		return 0, false
	}
	return n.watchdog, true
}

// RunWatchdog pings the watchdog at once and then every half watchdog
// interval until ctx ends. It returns at once when the watchdog is not
// enabled for this process. A failed ping does not stop it: it is reported
// to onError (which may be nil) and the next ping is tried on schedule.
// Run it in its own goroutine.
func (n *sdNotifier) RunWatchdog(ctx context.Context, onError func(error)) {
	interval, ok := n.WatchdogInterval()
	if !ok {
		return
	}
	period := max(interval/2, time.Microsecond)
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		if ctx.Err() != nil {
			return
		}
		if err := n.Watchdog(); err != nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Send sends the given VARIABLE=value assignments to the service manager in
// one datagram. It does nothing when notifications are disabled. An
// assignment without "=" or with a line break is refused, since it would
// corrupt the message.
func (n *sdNotifier) Send(assignments ...string) error {
	if !n.Enabled() || len(assignments) == 0 {
		return nil
	}
	for _, a := range assignments {
		if k, _, ok := strings.Cut(a, "="); !ok || k == "" || strings.ContainsAny(a, "\n\x00") {
			return fmt.Errorf("sdnotify: malformed assignment %q", a)
		}
	}
	if n.socket[0] != '/' && n.socket[0] != '@' {
		return fmt.Errorf("%w: %q", errUnsupportedSocket, n.socket)
	}
	// Go's net package maps a leading '@' to the Linux abstract namespace
	// (a leading NUL byte), exactly as sd_notify does.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: connect to %s: %w", n.socket, err)
	}
	defer conn.Close()
	if err := conn.SetWriteDeadline(time.Now().Add(sdSendTimeout)); err != nil {
		return fmt.Errorf("sdnotify: set a send deadline: %w", err)
	}
	msg := strings.Join(assignments, "\n")
	if _, err := conn.Write([]byte(msg)); err != nil {
		return fmt.Errorf("sdnotify: send to %s: %w", n.socket, err)
	}
	return nil
}

// cleanSDStatus makes s a valid single-line STATUS= value of at most
// maxStatusLen bytes.
func cleanSDStatus(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\n', '\r', 0:
			return ' '
		}
		return r
	}, s)
	if len(s) <= maxStatusLen {
		return s
	}
	const ellipsis = "…"
	cut := maxStatusLen - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// sdNotifier implements the sending side of systemd's service
// notification protocol (sd_notify(3)) without cgo: newline-separated
// VARIABLE=value assignments sent as one datagram to the unix socket named
// by $NOTIFY_SOCKET.
//
// A sdNotifier built where NOTIFY_SOCKET is unset (ralphd run by hand, or by
// a unit that is not Type=notify) does nothing, as does a nil *sdNotifier, so
// callers never need to check whether they run under systemd.
//
// The messages ralphd sends:
//
//   - READY=1 once started (Type=notify waits for it before the unit is
//     "active").
//   - STATUS=<text>, a one-line live state shown by `systemctl status`.
//   - WATCHDOG=1, at half of $WATCHDOG_USEC when the unit sets WatchdogSec=
//     (RunWatchdog does this).
//   - STOPPING=1 when shutting down.
//   - RELOADING=1 with MONOTONIC_USEC=<CLOCK_MONOTONIC in µs> when
//     reloading, followed by READY=1 when done. systemd 253 and later
//     require MONOTONIC_USEC for Type=notify-reload units; older versions
//     ignore it.
//
// Only the filesystem (/path) and Linux abstract (@name) socket forms are
// supported; the vsock: form of systemd 254 and later is reported as an
// error by every send.

package main

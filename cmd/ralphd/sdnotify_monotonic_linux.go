package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// monotonicNow reads CLOCK_MONOTONIC, the clock systemd's MONOTONIC_USEC
// refers to (Go's time.Now monotonic reading has an unspecified origin).
func monotonicNow() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

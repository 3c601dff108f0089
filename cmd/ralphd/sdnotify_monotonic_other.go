//go:build !linux

package main

import (
	"errors"
	"time"
)

// monotonicNow is unsupported off Linux, where systemd does not run.
func monotonicNow() (time.Duration, error) {
	return 0, errors.New("CLOCK_MONOTONIC is only read on linux")
}

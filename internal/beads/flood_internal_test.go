package beads

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClientFlood: a bd that prints without end (garbage, or a bd that is
// not bd) fails its call with ErrOutputTooLarge once its stdout passes the
// limit, instead of filling ralphd's memory until the call's timeout; a
// flood on stderr is cut, and the call still says what bd's exit was.
func TestClientFlood(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		wantErr error
		inErr   string
	}{
		{"stdout without end", "exec yes '{\"id\":'", ErrOutputTooLarge, "check that bd is the beads CLI"},
		{"stdout just over", "head -c 4097 /dev/zero", ErrOutputTooLarge, "over 4096 bytes"},
		{"stdout at the limit", "printf '[]'; head -c 4094 /dev/zero | tr '\\0' ' '", nil, ""},
		{"stderr flood, then exit 1", "head -c 3000000 /dev/zero | tr '\\0' e >&2; echo 'Error: the end' >&2; exit 1", nil, "exited with code 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bd")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tt.script+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			c := &Client{Bin: bin, Dir: dir, Timeout: 20 * time.Second, maxOut: 4096}
			start := time.Now()
			out, err := c.RunJSON(context.Background(), "list")
			if time.Since(start) > 15*time.Second {
				t.Fatalf("the call ran to its timeout: %v", err)
			}
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.inErr) {
					t.Fatalf("RunJSON error %v; want %v saying %q", err, tt.wantErr, tt.inErr)
				}
			case tt.inErr != "":
				var ee *ExitError
				if !errors.As(err, &ee) || !strings.Contains(err.Error(), tt.inErr) || len(ee.Stderr) > maxStderr {
					t.Fatalf("RunJSON error %v; want bd's exit saying %q, its stderr cut", err, tt.inErr)
				}
			default:
				if err != nil || len(out) != 4096 {
					t.Fatalf("RunJSON = %d bytes, %v; want all 4096", len(out), err)
				}
			}
		})
	}
}

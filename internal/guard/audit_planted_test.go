package guard

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/state"
)

// TestAuditPlanted: a FIFO, or a link to /dev/zero, in the audit file's
// place blocks neither the guard's append nor ralphd's read of the calls,
// which finds none there.
func TestAuditPlanted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
	}{
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			tc.plant(t, path)
			done := make(chan struct{})
			var appendErr error
			var calls []state.BDCall
			go func() {
				defer close(done)
				appendErr = appendAudit(path, state.BDCall{Argv: []string{"list"}})
				calls = readAudit(path)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the audit file blocked the guard or ralphd")
			}
			if appendErr == nil {
				t.Error("appended a call to what was planted in the audit file's place")
			}
			if len(calls) != 0 {
				t.Errorf("read %d calls from what was planted in the audit file's place", len(calls))
			}
		})
	}
}

package beads_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// recordedServer is the metadata.json real bd 1.0.5 wrote for
// `bd init --server --external` (server-setup-summary.txt);
// recordedEmbedded is one of an embedded tracker.
const (
	recordedServer = `{
  "database": "dolt",
  "backend": "dolt",
  "dolt_mode": "server",
  "dolt_server_host": "127.0.0.1",
  "dolt_server_port": 33157,
  "dolt_database": "sv",
  "project_id": "33ddef68-ca59-4a67-a2c9-ce012f37f5fa"
}`
	recordedEmbedded = `{"backend": "dolt", "database": "wt", "dolt_mode": "embedded", "project_id": "x"}`
)

func TestServerMode(t *testing.T) {
	server, embedded := recordedServer, recordedEmbedded
	for _, tc := range []struct {
		name     string
		metadata string // "" for no metadata.json
		env      []string
		want     bool
	}{
		{"server metadata", server, nil, true},
		{"embedded metadata", embedded, nil, false},
		{"no dolt_mode", `{"backend": "dolt"}`, nil, false},
		{"no metadata", "", nil, false},
		{"not JSON", "dolt_mode: server", nil, false},
		{"dolt_mode not a string", `{"dolt_mode": 1}`, nil, false},
		{"env turns it on", embedded, []string{"BEADS_DOLT_SERVER_MODE=1"}, true},
		{"env true", "", []string{"BEADS_DOLT_SERVER_MODE=true"}, true},
		{"env off", embedded, []string{"BEADS_DOLT_SERVER_MODE=0"}, false},
		{"env does not turn server metadata off", server, []string{"BEADS_DOLT_SERVER_MODE=0"}, true},
		{"another variable", embedded, []string{"XBEADS_DOLT_SERVER_MODE=1", "BEADS_DOLT_SERVER_HOST=h"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.metadata != "" {
				if err := os.WriteFile(filepath.Join(dir, "metadata.json"), []byte(tc.metadata), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := beads.ServerMode(dir, tc.env); got != tc.want {
				t.Errorf("ServerMode = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestServerModeOddMetadata: a FIFO, a directory or /dev/zero in place of
// .beads/metadata.json (an agent can write .beads/ unsandboxed) is not
// server mode, and never blocks or exhausts the read.
func TestServerModeOddMetadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(p string) error
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.make(filepath.Join(dir, "metadata.json")); err != nil {
				t.Fatal(err)
			}
			done := make(chan bool, 1)
			go func() { done <- beads.ServerMode(dir, nil) }()
			select {
			case got := <-done:
				if got {
					t.Error("ServerMode = true, want false")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ServerMode blocked")
			}
		})
	}
}

func FuzzMetadataServerMode(f *testing.F) {
	f.Add([]byte(recordedServer))
	f.Add([]byte(recordedEmbedded))
	f.Add([]byte(`{"dolt_mode": "server"}`))
	f.Add([]byte(`{"dolt_mode": "embedded"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := beads.MetadataServerMode(data)
		if got && len(data) < len(`{"dolt_mode":"server"}`) {
			t.Errorf("%q: server mode from fewer bytes than the key and value", data)
		}
	})
}

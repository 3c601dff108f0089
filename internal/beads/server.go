package beads

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// ServerMode reports whether the tracker whose .beads directory is
// beadsDir keeps its data on a Dolt sql-server (bd's server mode) rather
// than under beadsDir: its metadata.json says "dolt_mode": "server", or
// BEADS_DOLT_SERVER_MODE in env turns server mode on, as it does for bd.
// A write to such a tracker, from this clone or any other, need not
// change a byte under beadsDir, so nothing that watches beadsDir can tell
// that the tracker changed. A missing or unreadable metadata.json is not
// server mode.
func ServerMode(beadsDir string, env []string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "BEADS_DOLT_SERVER_MODE="); ok {
			switch strings.ToLower(v) {
			case "1", "true", "yes", "on", "server":
				return true
			}
		}
	}
	// Not os.ReadFile: anyone who can write .beads/ could put a FIFO
	// there, and the read would block ralphd forever.
	data, err := atomicfile.ReadFollow(filepath.Join(beadsDir, "metadata.json"), 1<<20)
	if err != nil {
		return false
	}
	return MetadataServerMode(data)
}

// MetadataServerMode reports whether data, the content of a
// .beads/metadata.json, puts the tracker in server mode. Anything that is
// not a JSON object with "dolt_mode": "server" is not.
func MetadataServerMode(data []byte) bool {
	var m struct {
		DoltMode string `json:"dolt_mode"`
	}
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	return m.DoltMode == "server"
}

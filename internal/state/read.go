package state

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// Limits on the state files ralphd reads whole: far above what ralphd
// writes, low enough that a file planted in their place cannot make it
// read gigabytes into memory.
const (
	maxStateFile = 16 << 20 // attempts.txt, metadata.json, running records, lock details, per-issue records
	maxGrowFile  = 1 << 30  // history.jsonl and baselines, which grow with the project's age and the tracker
)

// readState reads a state file with atomicfile.Read: a directory, FIFO,
// symlink or device in its place is an error wrapping
// atomicfile.ErrNotRegular, never a read that blocks or never ends.
func readState(path string) ([]byte, error) {
	limit := int64(maxStateFile)
	if name := filepath.Base(path); name == HistoryFile || strings.HasPrefix(name, "baseline") {
		limit = maxGrowFile
	}
	return atomicfile.Read(path, limit)
}

// unusable reports whether err says a state file cannot be used as it
// stands (not a regular file, or too large), which ralphd treats like a
// file that does not parse: it moves it aside and goes on.
func unusable(err error) bool {
	return errors.Is(err, atomicfile.ErrNotRegular) || errors.Is(err, atomicfile.ErrTooLarge)
}

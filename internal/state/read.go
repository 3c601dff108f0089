package state

import (
	"errors"
	"path"
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

// readIn reads the state file name below d (atomicfile.Dir.ReadFile): a
// directory, FIFO, symlink, device or hard link in its place, or on the
// way to it, is an error for which atomicfile.IsForeign is true, never a
// read that blocks, never ends or reaches a file of the user's.
func readIn(d *atomicfile.Dir, name string) ([]byte, error) {
	limit := int64(maxStateFile)
	if base := path.Base(name); base == HistoryFile || strings.HasPrefix(base, "baseline") {
		limit = maxGrowFile
	}
	return d.ReadFile(name, limit)
}

// unusable reports whether err says a state file cannot be used as it
// stands (not a file ralphd made, or too large), which ralphd treats like
// a file that does not parse: it moves it aside and goes on.
func unusable(err error) bool {
	return atomicfile.IsForeign(err) || errors.Is(err, atomicfile.ErrTooLarge)
}

package modes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"unicode"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// StatusVersion is the version of the status file's format.
const StatusVersion = 1

// MaxStatusWorkers bounds the workers a status file may list; a file
// listing more is refused as corrupt rather than printed.
const MaxStatusWorkers = 1024

// StatusFile is the content of a Pool's StatusFile: the PID of the ralphd
// whose pool wrote it (so that a reader can tell a file left by a ralphd
// that died from a live one, by comparing it with the project lock's
// holder), and what each worker is doing.
type StatusFile struct {
	Version int            `json:"version"`
	PID     int            `json:"pid"`
	Workers []WorkerStatus `json:"workers"`
	// Reviews are the open pull requests the pool waits on (integrate
	// = pr).
	Reviews []ReviewStatus `json:"reviews,omitempty"`
}

// writeStatusFile replaces path with the status atomically (temp file,
// fsync, rename, fsync of the directory).
func writeStatusFile(path string, ws []WorkerStatus, rs []ReviewStatus) error {
	b, err := json.MarshalIndent(StatusFile{Version: StatusVersion, PID: os.Getpid(), Workers: ws, Reviews: rs}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode worker status: %w", err)
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// ParseStatusFile parses a status file. Whatever the input, it returns an
// error rather than a status it cannot vouch for: not one JSON object,
// another version, a PID that is not positive, more than MaxStatusWorkers
// workers, or a worker with no name, a negative attempt, a missing time, or
// a name, actor, worktree or issue holding control characters (a file an
// agent rewrote must not drive the terminal `ralphd status` prints to).
func ParseStatusFile(data []byte) (StatusFile, error) {
	var f StatusFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return StatusFile{}, fmt.Errorf("parse worker status: %w", err)
	}
	if dec.More() {
		return StatusFile{}, errors.New("parse worker status: more than one JSON value")
	}
	switch {
	case f.Version != StatusVersion:
		return StatusFile{}, fmt.Errorf("parse worker status: version %d, want %d", f.Version, StatusVersion)
	case f.PID <= 0:
		return StatusFile{}, fmt.Errorf("parse worker status: pid %d is not a process id", f.PID)
	case len(f.Workers) > MaxStatusWorkers:
		return StatusFile{}, fmt.Errorf("parse worker status: %d workers, more than %d", len(f.Workers), MaxStatusWorkers)
	}
	seen := make(map[string]bool, len(f.Workers))
	for i, w := range f.Workers {
		switch {
		case w.Worker == "":
			return StatusFile{}, fmt.Errorf("parse worker status: worker %d has no name", i+1)
		case seen[w.Worker]:
			return StatusFile{}, fmt.Errorf("parse worker status: worker %q is listed twice", w.Worker)
		case w.Attempt < 0:
			return StatusFile{}, fmt.Errorf("parse worker status: worker %q: attempt %d", w.Worker, w.Attempt)
		case w.Since.IsZero():
			return StatusFile{}, fmt.Errorf("parse worker status: worker %q: no time", w.Worker)
		}
		for _, s := range []string{w.Worker, w.Actor, w.Worktree, w.Issue, w.Queued} {
			if hasControl(s) {
				return StatusFile{}, fmt.Errorf("parse worker status: worker %q: control characters in %q", w.Worker, s)
			}
		}
		seen[w.Worker] = true
	}
	if len(f.Reviews) > MaxStatusReviews {
		return StatusFile{}, fmt.Errorf("parse worker status: %d pull requests, more than %d", len(f.Reviews), MaxStatusReviews)
	}
	for i, r := range f.Reviews {
		switch {
		case r.Issue == "":
			return StatusFile{}, fmt.Errorf("parse worker status: pull request %d has no issue", i+1)
		case r.PR < 0:
			return StatusFile{}, fmt.Errorf("parse worker status: %s: pull request number %d", r.Issue, r.PR)
		case !slices.Contains(reviewStates, r.State):
			return StatusFile{}, fmt.Errorf("parse worker status: %s: pull request state %q", r.Issue, r.State)
		case r.Since.IsZero():
			return StatusFile{}, fmt.Errorf("parse worker status: %s: pull request without a time", r.Issue)
		}
		for _, s := range []string{r.Issue, r.Branch, r.Commit, r.URL} {
			if hasControl(s) {
				return StatusFile{}, fmt.Errorf("parse worker status: %s: control characters in %q", r.Issue, s)
			}
		}
	}
	if f.Workers == nil {
		f.Workers = []WorkerStatus{}
	}
	return f, nil
}

// MaxStatusReviews bounds the pull requests a status file may list.
const MaxStatusReviews = 10000

// reviewStates are the states a pull request in the status file may be in.
var reviewStates = []string{ReviewOpening, ReviewWaiting, ReviewChecksFailing, ReviewChangesRequested, ReviewMerged, ReviewClosed}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\uFFFD' {
			return true
		}
	}
	return false
}

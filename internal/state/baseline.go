package state

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// BaselineFile holds the tracker as a BUILD iteration found it, written
// before the agent starts and removed once the iteration's window has
// closed. A baseline that outlives its ralphd marks an iteration whose
// changes were never judged.
const BaselineFile = "baseline.json"

// Baseline is the tracker before a BUILD iteration: every issue, with its
// comments where it has any.
type Baseline struct {
	RunID     string        `json:"run_id"`
	Iteration int           `json:"iteration"`
	IssueID   string        `json:"issue_id"`
	TakenAt   time.Time     `json:"taken_at"`
	Issues    []beads.Issue `json:"issues"`
	// ExtraFields marks a baseline whose issues carry their other fields
	// (beads.Issue.Extra). One written before ralphd kept them lacks them
	// all, and reads as if every such field were empty: WriteBaseline sets
	// it, so a reader can tell the two apart.
	ExtraFields bool `json:"extra_fields,omitempty"`
}

// BaselinePath returns the path of baseline.json, or of the worker's own
// baseline-<worker>.json for a view from ForWorker.
func (s *Store) BaselinePath() string {
	return s.path(s.baselineName())
}

// baselineName is BaselinePath's name in the state directory.
func (s *Store) baselineName() string {
	if s.worker != "" {
		return baselinePrefix + s.worker + ".json"
	}
	return BaselineFile
}

// baselinePrefix starts the name of a worker's baseline.
const baselinePrefix = "baseline-"

// WriteBaseline records the tracker before an iteration, atomically.
func (s *Store) WriteBaseline(b Baseline) error {
	b.ExtraFields = true
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putJSON(s.baselineName(), b); err != nil {
		return fmt.Errorf("write the baseline: %w", err)
	}
	return nil
}

// ReadBaseline returns the baseline of an iteration whose window never
// closed, or nil when there is none.
func (s *Store) ReadBaseline() (*Baseline, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := s.read(s.baselineName())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the baseline: %w", err)
	}
	b, err := ParseBaseline(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.BaselinePath(), err)
	}
	return &b, nil
}

// ParseBaseline parses a baseline file. Anything but a JSON object is an
// error: a baseline of null is not a tracker with no issues.
func ParseBaseline(data []byte) (Baseline, error) {
	return parseObject[Baseline]("baseline", data)
}

// ClearBaseline removes the baseline: the iteration's window has closed.
func (s *Store) ClearBaseline() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.drop(s.baselineName()); err != nil {
		return fmt.Errorf("clear the baseline: %w", err)
	}
	return nil
}

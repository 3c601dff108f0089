package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// TrackerPinFile holds which tracker bd opened when ralphd first pinned it
// for this project. Every BUILD run compares what bd opens at its start
// with it, so that a run stopped on a move it could not undo is not simply
// started again on the decoy. `ralphd reset --tracker` removes it: the
// next run pins what bd opens then.
const TrackerPinFile = "tracker-pin.json"

// TrackerPin is the saved pin.
type TrackerPin struct {
	PinnedAt time.Time      `json:"pinned_at"`
	RunID    string         `json:"run_id,omitempty"`
	Identity beads.Identity `json:"identity"`
}

// WriteTrackerPin saves the pin, atomically.
func (s *Store) WriteTrackerPin(p TrackerPin) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("save the tracker pin: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.put(TrackerPinFile, append(data, '\n')); err != nil {
		return fmt.Errorf("save the tracker pin: %w", err)
	}
	return nil
}

// ReadTrackerPin returns the saved pin, or nil when there is none.
func (s *Store) ReadTrackerPin() (*TrackerPin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := s.read(TrackerPinFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the tracker pin: %w", err)
	}
	p, err := parseObject[TrackerPin]("tracker pin", data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path(TrackerPinFile), err)
	}
	if p.Identity.BeadsDir == "" {
		return nil, fmt.Errorf("%s: parse tracker pin: no tracker directory", s.path(TrackerPinFile))
	}
	return &p, nil
}

// ClearTrackerPin removes the saved pin, and reports whether there was one.
func (s *Store) ClearTrackerPin() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := s.root.Check(TrackerPinFile) == nil
	if err := s.drop(TrackerPinFile); err != nil {
		return false, fmt.Errorf("clear the tracker pin: %w", err)
	}
	return had, nil
}

package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// TrackerPinFile holds, for each checkout of the project, which tracker bd
// opened when ralphd first pinned it there. Every BUILD run compares what
// bd opens at its start with it, so that a run stopped on a move it could
// not undo is not simply started again on the decoy. `ralphd reset
// --tracker` removes a checkout's pin: its next run pins what bd opens
// then. Pins are per checkout because clones of one remote share a state
// directory, and each clone has a tracker of its own.
const TrackerPinFile = "tracker-pin.json"

// TrackerPin is one checkout's saved pin.
type TrackerPin struct {
	// Checkout is the physical path of the checkout's top level.
	Checkout string         `json:"checkout"`
	PinnedAt time.Time      `json:"pinned_at"`
	RunID    string         `json:"run_id,omitempty"`
	Identity beads.Identity `json:"identity"`
}

type trackerPins struct {
	Pins []TrackerPin `json:"pins"`
}

// TrackerPin returns the saved pin of checkout, or nil when there is none.
// A file that cannot be read or parsed is an error, never "no pin": that
// would let the start pin whatever bd opens.
func (s *Store) TrackerPin(checkout string) (*TrackerPin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.readTrackerPins()
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(all.Pins, func(p TrackerPin) bool { return p.Checkout == checkout }); i >= 0 {
		return &all.Pins[i], nil
	}
	return nil, nil
}

// SaveTrackerPin saves p as its checkout's pin, replacing any, atomically.
func (s *Store) SaveTrackerPin(p TrackerPin) error {
	if p.Checkout == "" || p.Identity.BeadsDir == "" {
		return errors.New("save the tracker pin: no checkout or no tracker")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.readTrackerPins()
	if err != nil {
		return err
	}
	all.Pins = slices.DeleteFunc(all.Pins, func(q TrackerPin) bool { return q.Checkout == p.Checkout })
	all.Pins = append(all.Pins, p)
	return s.writeTrackerPins(all)
}

// ClearTrackerPin removes checkout's pin, and reports whether there was
// one. An unreadable file is removed whole (it pins nothing that can be
// read), and counts as one.
func (s *Store) ClearTrackerPin(checkout string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.readTrackerPins()
	if err != nil {
		if err := s.drop(TrackerPinFile); err != nil {
			return false, fmt.Errorf("clear the tracker pin: %w", err)
		}
		return true, nil
	}
	n := len(all.Pins)
	all.Pins = slices.DeleteFunc(all.Pins, func(q TrackerPin) bool { return q.Checkout == checkout })
	if len(all.Pins) == n {
		return false, nil
	}
	if len(all.Pins) == 0 {
		if err := s.drop(TrackerPinFile); err != nil {
			return false, fmt.Errorf("clear the tracker pin: %w", err)
		}
		return true, nil
	}
	return true, s.writeTrackerPins(all)
}

// readTrackerPins reads the file; none is no pins. The caller holds s.mu.
func (s *Store) readTrackerPins() (trackerPins, error) {
	data, err := s.read(TrackerPinFile)
	if errors.Is(err, fs.ErrNotExist) {
		return trackerPins{}, nil
	}
	if err != nil {
		return trackerPins{}, fmt.Errorf("read the tracker pin: %w", err)
	}
	all, err := parseObject[trackerPins]("tracker pin", data)
	if err != nil {
		return trackerPins{}, fmt.Errorf("%s: %w", s.path(TrackerPinFile), err)
	}
	for _, p := range all.Pins {
		if p.Checkout == "" || p.Identity.BeadsDir == "" {
			return trackerPins{}, fmt.Errorf("%s: parse tracker pin: a pin without a checkout or a tracker", s.path(TrackerPinFile))
		}
	}
	return all, nil
}

// writeTrackerPins replaces the file. The caller holds s.mu.
func (s *Store) writeTrackerPins(all trackerPins) error {
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return fmt.Errorf("save the tracker pin: %w", err)
	}
	if err := s.put(TrackerPinFile, append(data, '\n')); err != nil {
		return fmt.Errorf("save the tracker pin: %w", err)
	}
	return nil
}

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// The reading of the tracker ralphd holds while tracker_reads reads
// incrementally, kept on disk so that a ralphd killed with no window open
// (no baseline on disk) can still find, at its next start, a change that
// hid from the readings of what changed since the last full reading: the
// sweep compares a full reading with it (internal/modes, sweep.go). It is
// kept in two files so that a reading of what changed costs a write of
// what changed, not of the tracker: TrackerHeldFile, every issue, is
// written at each full reading (which listed every issue anyway), and
// TrackerHeldDeltaFile, the issues patched in since, at each reading of
// what changed. Both are sealed: an agent cannot rewrite what its changes
// are compared with.
const (
	TrackerHeldFile      = "tracker-held.json"
	TrackerHeldDeltaFile = "tracker-held-delta.json"
)

// TrackerHeld is TrackerHeldFile: the last full reading, as held.
type TrackerHeld struct {
	RunID string `json:"run_id"`
	// TakenAt is when the full reading started; its delta names it.
	TakenAt time.Time     `json:"taken_at"`
	Issues  []beads.Issue `json:"issues"`
}

// TrackerHeldDelta is TrackerHeldDeltaFile: what the readings of what
// changed patched into the full reading TakenAt names since.
type TrackerHeldDelta struct {
	// TakenAt is the TakenAt of the full reading patched; a delta of
	// another is stale (a kill between the two writes) and ignored.
	TakenAt time.Time `json:"taken_at"`
	// PrevStart is when the last reading started: a full reading compares
	// the issues updated before it, less a margin, with the reading held.
	PrevStart time.Time `json:"prev_start"`
	// Issues are the issues patched in, as held now; Deleted the issues
	// taken out.
	Issues  []beads.Issue `json:"issues,omitempty"`
	Deleted []string      `json:"deleted,omitempty"`
}

// WriteTrackerHeld records a full reading, atomically, and drops the
// delta of the one before.
func (s *Store) WriteTrackerHeld(h TrackerHeld) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putJSON(TrackerHeldFile, h); err != nil {
		return fmt.Errorf("keep the reading of the tracker: %w", err)
	}
	if err := s.drop(TrackerHeldDeltaFile); err != nil {
		return fmt.Errorf("keep the reading of the tracker: %w", err)
	}
	return nil
}

// WriteTrackerHeldDelta records what readings of what changed patched in
// since the full reading, atomically.
func (s *Store) WriteTrackerHeldDelta(d TrackerHeldDelta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putJSON(TrackerHeldDeltaFile, d); err != nil {
		return fmt.Errorf("keep what changed in the reading of the tracker: %w", err)
	}
	return nil
}

// ReadTrackerHeld returns the reading a run left: the full reading with
// its delta patched in, and when the last reading started (the full
// one's start without a delta); nil when there is none.
func (s *Store) ReadTrackerHeld() (issues []beads.Issue, h *TrackerHeld, prevStart time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := s.read(TrackerHeldFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, time.Time{}, nil
	}
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("read the reading of the tracker kept: %w", err)
	}
	full, err := ParseTrackerHeld(data)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("%s: %w", s.path(TrackerHeldFile), err)
	}
	prevStart = full.TakenAt
	var d TrackerHeldDelta
	data, err = s.read(TrackerHeldDeltaFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, time.Time{}, fmt.Errorf("read the reading of the tracker kept: %w", err)
	default:
		if d, err = ParseTrackerHeldDelta(data); err != nil {
			return nil, nil, time.Time{}, fmt.Errorf("%s: %w", s.path(TrackerHeldDeltaFile), err)
		}
		if !d.TakenAt.Equal(full.TakenAt) {
			d = TrackerHeldDelta{}
		} else if d.PrevStart.After(prevStart) {
			prevStart = d.PrevStart
		}
	}
	patched := map[string]beads.Issue{}
	for _, is := range d.Issues {
		patched[is.ID] = is
	}
	gone := map[string]bool{}
	for _, id := range d.Deleted {
		gone[id] = true
	}
	for _, is := range full.Issues {
		if p, ok := patched[is.ID]; ok {
			is = p
			delete(patched, is.ID)
		}
		if !gone[is.ID] {
			issues = append(issues, is)
		}
	}
	for _, is := range d.Issues {
		if _, ok := patched[is.ID]; ok && !gone[is.ID] {
			issues = append(issues, is) // new since the full reading
		}
	}
	return issues, &full, prevStart, nil
}

// ParseTrackerHeld parses TrackerHeldFile; anything but a JSON object is
// an error.
func ParseTrackerHeld(data []byte) (TrackerHeld, error) {
	return parseObject[TrackerHeld]("reading of the tracker kept", data)
}

// ParseTrackerHeldDelta parses TrackerHeldDeltaFile; anything but a JSON
// object is an error.
func ParseTrackerHeldDelta(data []byte) (TrackerHeldDelta, error) {
	return parseObject[TrackerHeldDelta]("what changed in the reading of the tracker kept", data)
}

// ClearTrackerHeld removes the reading kept: the run that kept it ended
// with a full reading, or a start compared the tracker with it.
func (s *Store) ClearTrackerHeld() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := errors.Join(s.drop(TrackerHeldFile), s.drop(TrackerHeldDeltaFile)); err != nil {
		return fmt.Errorf("clear the reading of the tracker kept: %w", err)
	}
	return nil
}

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// ReadWindowsFile lists the BUILD windows opened since the last full
// reading of the tracker, while tracker_reads reads incrementally: a
// change that hid from the readings of what changed is charged to every
// one of them when it is found, and a ralphd killed before that leaves
// them here for the next start's sweep to charge. Sealed: an agent's
// window cannot take itself off the list.
const ReadWindowsFile = "read-windows.json"

// ReadWindows is the list in ReadWindowsFile.
type ReadWindows struct {
	RunID string `json:"run_id"`
	// LastFull is when the last full reading started.
	LastFull time.Time    `json:"last_full"`
	Windows  []ReadWindow `json:"windows"`
	// Rereads are the issues the next reading would re-read by id, and
	// why: ralphd's writes (and agents' allowed ones) since a reading
	// took them, which a start's comparison with the reading kept
	// (TrackerHeldFile) must not take for hidden changes.
	Rereads []Reread `json:"rereads,omitempty"`
}

// Reread is an issue of ReadWindows.Rereads.
type Reread struct {
	IssueID string `json:"issue_id"`
	// Judged: a judgement's own issue, taken as it is.
	Judged bool           `json:"judged,omitempty"`
	Writes []PendingWrite `json:"writes,omitempty"`
}

// PendingWrite is a write to a Reread's issue, as beads.Write holds it.
type PendingWrite struct {
	Args  []string `json:"args"`
	Actor string   `json:"actor,omitempty"`
	// Agent: an agent's write the guard allowed, not ralphd's.
	Agent bool `json:"agent,omitempty"`
}

// ReadWindow is one window of the list: an iteration whose agent ran
// since the last full reading.
type ReadWindow struct {
	Iteration int       `json:"iteration"`
	IssueID   string    `json:"issue_id"`
	StartedAt time.Time `json:"started_at"`
	// Closed: the iteration closed its issue; a charge reopens it.
	Closed bool `json:"closed,omitempty"`
}

// WriteReadWindows records the list, atomically.
func (s *Store) WriteReadWindows(w ReadWindows) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putJSON(ReadWindowsFile, w); err != nil {
		return fmt.Errorf("write the windows since the last full reading: %w", err)
	}
	return nil
}

// ReadReadWindows returns the list a run left, or nil when there is none.
func (s *Store) ReadReadWindows() (*ReadWindows, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := s.read(ReadWindowsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the windows since the last full reading: %w", err)
	}
	w, err := ParseReadWindows(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path(ReadWindowsFile), err)
	}
	return &w, nil
}

// ParseReadWindows parses ReadWindowsFile; anything but a JSON object is
// an error.
func ParseReadWindows(data []byte) (ReadWindows, error) {
	return parseObject[ReadWindows]("windows since the last full reading", data)
}

// ClearReadWindows removes the list: a full reading judged every window
// on it.
func (s *Store) ClearReadWindows() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.drop(ReadWindowsFile); err != nil {
		return fmt.Errorf("clear the windows since the last full reading: %w", err)
	}
	return nil
}

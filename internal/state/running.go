package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"
)

// Running describes the agent of the iteration in flight. It is written
// (atomically) before the agent starts and cleared once the iteration's
// history record is appended, so after a crash the next ralphd knows which
// process group to end and which iteration to settle.
type Running struct {
	// PGID is the agent's process group (its leader's PID, as ralphd starts
	// every agent in its own group).
	PGID int `json:"pgid"`
	// PID is the agent process.
	PID int `json:"pid"`
	// StartTicks is the agent's start time in clock ticks after boot (field
	// 22 of /proc/<pid>/stat), so a recycled PID is told apart.
	StartTicks uint64 `json:"start_ticks"`
	// Marker is the value of the agent's run-marker environment variable,
	// which finds processes of its tree that left its process group.
	Marker    string    `json:"marker,omitempty"`
	Iteration int       `json:"iteration"`
	IssueID   string    `json:"issue_id,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Mode      string    `json:"mode"`
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	// Agent and Model are the backend that runs the iteration and the
	// model it was asked for.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// SessionID is the agent's session id, as its stream announced it
	// first: the session the next attempt resumes if ralphd dies.
	SessionID string `json:"session_id,omitempty"`
	// Resumed marks an iteration that resumes an interrupted session:
	// it is not resumed again.
	Resumed bool `json:"resumed,omitempty"`
	// Carried marks an iteration that did not count Attempt itself: it
	// resumes the session of an iteration that did (a timeout). The
	// sweep does not give that attempt back.
	Carried bool `json:"carried,omitempty"`
	// DirtyAtStart marks an iteration of a run that started on a work tree
	// with changes of the user's (allow_dirty): what the tree holds after
	// it is not the iteration's alone (modes: treework.go).
	DirtyAtStart bool `json:"dirty_at_start,omitempty"`
	// GuardedAbsent are the agent CLIs' configuration paths (in the
	// home) that did not exist when the BUILD iteration began: after a
	// crash the sweep moves aside any made since (modes: guarded.go).
	GuardedAbsent []string `json:"guarded_absent,omitempty"`
}

// ParseRunning parses running.json.
func ParseRunning(data []byte) (Running, error) {
	return parseObject[Running]("running record", data)
}

// RunningPath returns the path of running.json, or of the worker's own
// running-<worker>.json for a view from ForWorker.
func (s *Store) RunningPath() string {
	return s.path(s.runningName())
}

// runningName is RunningPath's name in the state directory.
func (s *Store) runningName() string {
	if s.worker != "" {
		return runningPrefix + s.worker + ".json"
	}
	return RunningFile
}

// runningPrefix starts the name of a worker's running record.
const runningPrefix = "running-"

// ForWorker returns a view of the store for one of several workers running
// BUILD iterations at once: everything is shared with s (and serialised by
// the same lock: attempts, records, history), except the running-agent
// record, which is the worker's own running-<worker>.json. worker must be
// a plain name (letters, digits, '-', '_').
func (s *Store) ForWorker(worker string) (*Store, error) {
	if worker == "" || strings.Trim(worker, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return nil, fmt.Errorf("state: invalid worker name %q", worker)
	}
	return &Store{Now: s.Now, id: s.id, dir: s.dir, root: s.root, writer: s.writer, lockWait: s.lockWait, mu: s.mu, seal: s.seal, worker: worker}, nil
}

// Worker returns the worker a view from ForWorker is for, or "".
func (s *Store) Worker() string { return s.worker }

// RunningWorkers returns the workers that have a running record or a
// baseline on disk: iterations a crash may have left unsettled or
// unjudged, for the next start's sweep.
func (s *Store) RunningWorkers() ([]string, error) {
	ents, err := s.root.ReadDir(".")
	if err != nil {
		return nil, fmt.Errorf("list running records: %w", err)
	}
	var out []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		w, ok := strings.CutPrefix(name, runningPrefix)
		if !ok {
			w, ok = strings.CutPrefix(name, baselinePrefix)
		}
		if _, err := s.ForWorker(w); ok && err == nil && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out, nil
}

// RunningIssues lists the issues of the running records on disk, the
// loop's and every worker's: BUILD iterations under way, or left by a
// ralphd that died for the next start's sweep (which reads the agent's
// session back). A record that cannot be read is an error, not skipped:
// the caller cannot tell which issue it holds. Nothing is moved aside.
func (s *Store) RunningIssues() ([]string, error) {
	names := []string{RunningFile}
	workers, err := s.RunningWorkers()
	if err != nil {
		return nil, err
	}
	for _, w := range workers {
		names = append(names, runningPrefix+w+".json")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, name := range names {
		data, err := s.read(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read running record %s: %w", s.path(name), err)
		}
		r, err := ParseRunning(data)
		if err != nil {
			return nil, fmt.Errorf("read running record %s: %w", s.path(name), err)
		}
		if r.IssueID != "" && !slices.Contains(out, r.IssueID) {
			out = append(out, r.IssueID)
		}
	}
	return out, nil
}

// WriteRunning records the agent that is about to run (or has just
// started), atomically.
func (s *Store) WriteRunning(r Running) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("write running record: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data = append(data, '\n')
	if err := s.put(s.runningName(), data); err != nil {
		return fmt.Errorf("write running record: %w", err)
	}
	return nil
}

// ReadRunning returns the running record, or nil when there is none. An
// unreadable record is moved to running.json.corrupt-<timestamp> (with a
// queued warning that says which processes may need a manual check) and
// nil is returned.
func (s *Store) ReadRunning() (*Running, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.RunningPath()
	data, err := s.read(s.runningName())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil && !unusable(err) {
		return nil, fmt.Errorf("read running record: %w", err)
	}
	var r Running
	if err == nil {
		r, err = ParseRunning(data)
	}
	if err != nil {
		dst, mvErr := s.moveAside(s.runningName())
		if mvErr != nil {
			return nil, mvErr
		}
		s.warn("%s could not be parsed (%v); it was moved to %s. An agent from a previous run may still be running: check with `ps -ef`", path, err, dst)
		return nil, nil
	}
	return &r, nil
}

// ClearRunning removes the running record. A missing record is not an
// error.
func (s *Store) ClearRunning() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.drop(s.runningName()); err != nil {
		return fmt.Errorf("clear running record: %w", err)
	}
	if err := s.root.Sync(); err != nil {
		return fmt.Errorf("clear running record: %w", err)
	}
	return nil
}

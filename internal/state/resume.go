package state

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
)

// Resume is an interrupted iteration's agent session, kept for the next
// attempt on its issue to resume instead of starting afresh. ralphd
// writes it from what it saw itself: the session id the agent's stream
// announced first (recorded in the running record as it started) and
// the session's files, copied from the CLI's dirs once the agent had
// ended. It lives in attempts/<issue>.session, sealed with the other
// per-issue records, so an agent can neither plant one nor change it.
type Resume struct {
	IssueID string `json:"issue_id"`
	// Agent and Model are the backend and model that ran the session:
	// only the same agent resumes it.
	Agent string `json:"agent"`
	Model string `json:"model,omitempty"`
	// Attempt is the attempt the interrupted iteration took; Counted
	// says it stayed counted (a timeout), so the resume counts none.
	Attempt int  `json:"attempt"`
	Counted bool `json:"counted,omitempty"`
	// Why says what interrupted the iteration, Found what ralphd found
	// afterwards (changes reverted, checks and their results): both go
	// into the resume prompt.
	Why   string   `json:"why"`
	Found []string `json:"found,omitempty"`
	// Session is the session id and files to put back.
	Session agent.Session `json:"session"`
	SavedAt time.Time     `json:"saved_at"`
}

// resumeName is the name of the issue's Resume record in the state dir.
// Its suffix is no other per-issue record's, whatever the issue id.
func resumeName(issue string) string {
	return AttemptsDirName + "/" + SanitizeIssueID(issue) + ".session"
}

// SaveResume writes the issue's Resume record, atomically, replacing any.
func (s *Store) SaveResume(r Resume) error {
	if r.IssueID == "" {
		return errors.New("save the session to resume: no issue")
	}
	if err := r.Session.Check(); err != nil {
		return fmt.Errorf("save the session to resume on %s: %w", r.IssueID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureDir(AttemptsDirName); err != nil {
		return fmt.Errorf("save the session to resume on %s: %w", r.IssueID, err)
	}
	if err := s.putJSON(resumeName(r.IssueID), r); err != nil {
		return fmt.Errorf("save the session to resume on %s: %w", r.IssueID, err)
	}
	return nil
}

// ResumeFor returns the issue's Resume record, or nil when there is none.
// A record that cannot be used (it does not parse, names another issue,
// or holds a session that fails agent.Session.Check) is moved aside with
// a warning, and nil is returned: the next attempt starts afresh.
func (s *Store) ResumeFor(issue string) (*Resume, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := resumeName(issue)
	data, err := s.read(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil && !unusable(err) {
		return nil, fmt.Errorf("read the session to resume on %s: %w", issue, err)
	}
	var r Resume
	if err == nil {
		r, err = parseObject[Resume]("session to resume", data)
	}
	if err == nil && r.IssueID != issue {
		err = fmt.Errorf("it is for %q", r.IssueID)
	}
	if err == nil {
		err = r.Session.Check()
	}
	if err != nil {
		dst, mvErr := s.moveAside(name)
		if mvErr != nil {
			return nil, mvErr
		}
		s.warn("%s cannot be used (%v); it was moved to %s, and %s starts a fresh session", s.path(name), err, dst, issue)
		return nil, nil
	}
	return &r, nil
}

// ClearResume removes the issue's Resume record. A missing record is not
// an error.
func (s *Store) ClearResume(issue string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.drop(resumeName(issue)); err != nil {
		return fmt.Errorf("clear the session to resume on %s: %w", issue, err)
	}
	return nil
}

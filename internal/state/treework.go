package state

import (
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// TreeWorkFile says that the project's work tree holds the uncommitted
// work of an interrupted BUILD iteration of the single loop: written when
// a signal stops the run mid-iteration, or when the next start's sweep
// finds that a ralphd died in one, and removed once that issue's next
// iteration starts from it or the work is kept on a branch. The next
// BUILD run's clean-tree check reads it (modes: treework.go).
const TreeWorkFile = "tree-work.json"

// TreeWork is the work an interrupted iteration left in the work tree.
type TreeWork struct {
	IssueID   string    `json:"issue_id"`
	Iteration int       `json:"iteration"`
	RunID     string    `json:"run_id"`
	At        time.Time `json:"at"`
	// Head is HEAD's commit then; Tree the work tree's id
	// (git.Repo.WorkTreeID). The record holds while both are unchanged.
	Head string `json:"head"`
	Tree string `json:"tree"`
}

// TreeWorkPath returns the path of tree-work.json.
func (s *Store) TreeWorkPath() string { return s.path(TreeWorkFile) }

// WriteTreeWork records the work an interrupted iteration left in the
// work tree, atomically.
func (s *Store) WriteTreeWork(w TreeWork) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.putJSON(TreeWorkFile, w); err != nil {
		return fmt.Errorf("record the interrupted iteration's work in the tree: %w", err)
	}
	return nil
}

// ReadTreeWork returns the record of the work an interrupted iteration
// left in the work tree, or nil when there is none.
func (s *Store) ReadTreeWork() (*TreeWork, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := s.read(TreeWorkFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the record of the interrupted iteration's work: %w", err)
	}
	w, err := ParseTreeWork(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.TreeWorkPath(), err)
	}
	return &w, nil
}

// ParseTreeWork parses tree-work.json: a JSON object naming an issue, a
// commit and a tree.
func ParseTreeWork(data []byte) (TreeWork, error) {
	w, err := parseObject[TreeWork]("the interrupted iteration's work", data)
	if err == nil && (w.IssueID == "" || w.Head == "" || w.Tree == "") {
		return TreeWork{}, errors.New("parse the interrupted iteration's work: it names no issue, commit or tree")
	}
	return w, err
}

// ClearTreeWork removes the record: the work is the next iteration's, or
// kept on a branch.
func (s *Store) ClearTreeWork() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.drop(TreeWorkFile); err != nil {
		return fmt.Errorf("clear the record of the interrupted iteration's work: %w", err)
	}
	return nil
}

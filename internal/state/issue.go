package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/judge"
)

// IssueRecord is everything ralphd keeps about one issue's attempts,
// between iterations and across runs and crashes. It is one record kept in
// three files, so that the bash loop can still share the counter:
//
//	attempts.txt           Count, one "issue-id:count" line (the bash loop's format)
//	attempts/<issue>.json  Judgement: the escalation's state and what it decided
//	attempts/<issue>.md    Attempts: the verbatim record of the last attempts
//
// The counter is the record's anchor: the judgement and the verbatim record
// belong to the attempts it counts, so they are read only while the issue
// has a count above 0. Clearing the counter therefore clears the whole
// record in one atomic step (the rewrite of attempts.txt); the files beside
// it are then removed, and any a crash left behind are ignored and removed
// before the issue counts its next first attempt.
type IssueRecord struct {
	IssueID string
	// Count is the attempts counted since the last reset or close.
	Count int
	// Judgement is the escalation's state after the last judged attempt.
	Judgement Judgement
	// Attempts are the last judge.RecordWindow failed attempts, verbatim,
	// oldest first.
	Attempts []judge.Attempt
}

// Judgement is what ralphd remembers about one issue's failed attempts, in
// attempts/<issue>.json. Its JSON form is stable: files written by earlier
// versions load.
type Judgement struct {
	// Base is HEAD when the issue's streak of attempts began: where a
	// failure branch restores the working branch to.
	Base       string         `json:"base,omitempty"`
	LastGate   string         `json:"last_gate,omitempty"`
	Escalation judge.State    `json:"escalation"`
	Signals    judge.Signals  `json:"signals"` // after the last attempt
	Next       judge.Decision `json:"next"`    // how to run the next attempt
	LastError  string         `json:"last_error,omitempty"`
	AutoFixed  []string       `json:"auto_fixed,omitempty"` // forbidden changes reverted along the way
}

// Stuck decides, with judge.Stuck, whether BUILD gives up on the issue
// under the attempt cap maxAttempts, and why. Build and status both ask
// this of the same record, so they cannot disagree.
func (r IssueRecord) Stuck(maxAttempts int) judge.StuckCause {
	return judge.Stuck(r.Count, maxAttempts, r.Judgement.Escalation)
}

// SanitizeIssueID turns an issue id into a safe file name stem: letters,
// digits, '.', '_' and '-' stay, anything else becomes '_', and a leading
// '.' gets a '_' before it. When that changed the id, or it is longer than
// 100 bytes, eight hex digits of the id's hash are appended, so that two
// different ids never share a file.
func SanitizeIssueID(issue string) string {
	var b strings.Builder
	for i := 0; i < len(issue); i++ {
		c := issue[i]
		if c < utf8.RuneSelf && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)) || c == '.' || c == '_' || c == '-') {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if strings.HasPrefix(s, ".") {
		s = "_" + s
	}
	if s == issue && len(s) <= 100 && s != "" {
		return s
	}
	if len(s) > 80 {
		s = s[:80]
	}
	sum := sha256.Sum256([]byte(issue))
	return s + "-" + hex.EncodeToString(sum[:4])
}

// AttemptRecordPath is the file of the issue's verbatim attempt record,
// attempts/<issue>.md.
func (s *Store) AttemptRecordPath(issue string) string {
	return filepath.Join(s.AttemptsDir(), SanitizeIssueID(issue)+".md")
}

// recordName and judgementName are an issue's files in the state
// directory.
func recordName(issue string) string { return AttemptsDirName + "/" + SanitizeIssueID(issue) + ".md" }
func judgementName(issue string) string {
	return AttemptsDirName + "/" + SanitizeIssueID(issue) + ".json"
}

// Issue loads the issue's attempt record. A judgement or verbatim record
// that does not parse is not an error: it is left out, with a warning (see
// Warnings), and the next failed attempt replaces it.
func (s *Store) Issue(issue string) (IssueRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts, err := s.loadAttempts()
	if err != nil {
		return IssueRecord{}, err
	}
	r := IssueRecord{IssueID: issue, Count: countOf(counts, issue)}
	if r.Count == 0 {
		return r, nil
	}
	var warns []string
	r.Judgement, r.Attempts, warns = readIssueFiles(s.root, judgementName(issue), recordName(issue))
	for _, w := range warns {
		s.warn("%s", w)
	}
	return r, nil
}

func countOf(counts []AttemptCount, issue string) int {
	for _, c := range counts {
		if c.IssueID == issue {
			return c.Count
		}
	}
	return 0
}

// ParseJudgement parses an issue's judgement file.
func ParseJudgement(data []byte) (Judgement, error) {
	return parseObject[Judgement]("judgement", data)
}

// readIssueFiles reads an issue's judgement and verbatim record, the
// files judgementName and recordName below d. It only reads: what does not
// parse, or is not a file ralphd made, is left out and described in warns.
func readIssueFiles(d *atomicfile.Dir, judgementName, recordName string) (j Judgement, attempts []judge.Attempt, warns []string) {
	judgementPath, recordPath := d.Join(judgementName), d.Join(recordName)
	if data, err := readIn(d, judgementName); err == nil {
		if j, err = ParseJudgement(data); err != nil {
			warns = append(warns, fmt.Sprintf("%s could not be parsed (%v); the issue's escalation starts over", judgementPath, err))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		warns = append(warns, fmt.Sprintf("%v; the issue's escalation starts over", err))
	}
	if data, err := readIn(d, recordName); err == nil {
		if attempts, err = judge.ParseRecord(string(data)); err != nil {
			attempts = nil
			warns = append(warns, fmt.Sprintf("%s could not be parsed (%v); the next prompt goes without it and the next failed attempt starts it afresh", recordPath, err))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		warns = append(warns, fmt.Sprintf("%v; the next prompt goes without the previous attempts", err))
	}
	return j, attempts, warns
}

// RecordFailure stores what judging a failed attempt on the issue decided:
// the judgement replaces the old one, and the attempt is added to the
// verbatim record (see judge.AppendAttempt). Both files are replaced
// atomically. The issue's counter must already count the attempt.
func (s *Store) RecordFailure(issue string, j Judgement, a judge.Attempt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("record the failed attempt on %s: %w", issue, err)
	}
	if err := s.ensureDir(AttemptsDirName); err != nil {
		return fmt.Errorf("record the failed attempt on %s: %w", issue, err)
	}
	if err := s.put(judgementName(issue), append(data, '\n')); err != nil {
		return fmt.Errorf("record the judgement of %s: %w", issue, err)
	}
	path := recordName(issue)
	var attempts []judge.Attempt
	// A record that does not parse is replaced by a fresh one, and so is
	// anything but a file ralphd made: a planted symlink is never
	// followed, and is moved aside by the write (put).
	if old, err := s.read(path); err == nil {
		attempts, _ = judge.ParseRecord(string(old))
	} else if !errors.Is(err, fs.ErrNotExist) && !unusable(err) {
		return fmt.Errorf("record the attempt of %s: %w", issue, err)
	}
	attempts = judge.AppendAttempt(attempts, a)
	if err := s.put(path, []byte(judge.FormatRecord(issue, attempts))); err != nil {
		return fmt.Errorf("record the attempt of %s: %w", issue, err)
	}
	return nil
}

// Reset clears the whole attempt record of each given issue: counter,
// judgement and verbatim record, as one. It is what `ralphd reset`, a
// PLANNING run that clears an issue's stuck label, and a verified close
// all do. It returns the counts the issues had (issues without a counter
// are not in the map).
//
// The rewrite of attempts.txt is the atomic step: once it is done the
// issues have no record, whatever happens to the files beside it.
func (s *Store) Reset(issues ...string) (map[string]int, error) {
	return s.reset(func(id string) bool { return slices.Contains(issues, id) }, issues)
}

// ResetAll clears every issue's attempt record, leaving an empty
// attempts.txt and attempts directory, and returns the counts there were.
func (s *Store) ResetAll() (map[string]int, error) {
	return s.reset(func(string) bool { return true }, nil)
}

// reset clears the records of the issues match selects. Their side files
// are removed after the counter: those of named, or with named nil, of
// every issue.
func (s *Store) reset(match func(string) bool, named []string) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts, err := s.loadAttempts()
	if err != nil {
		return nil, err
	}
	was := map[string]int{}
	kept := counts[:0]
	for _, c := range counts {
		if match(c.IssueID) {
			was[c.IssueID] = c.Count
			continue
		}
		kept = append(kept, c)
	}
	if len(was) > 0 || named == nil {
		if err := s.put(AttemptsFile, FormatAttempts(kept)); err != nil {
			return nil, fmt.Errorf("reset attempts: %w", err)
		}
	}
	if named == nil {
		return was, s.removeAllIssueFiles()
	}
	for _, id := range named {
		if err := s.removeIssueFiles(id); err != nil {
			return was, err
		}
	}
	return was, nil
}

// removeIssueFiles removes the issue's judgement and verbatim record. The
// caller holds s.mu and has cleared (or never had) the issue's counter.
func (s *Store) removeIssueFiles(issue string) error {
	for _, p := range []string{judgementName(issue), recordName(issue), resumeName(issue)} {
		if err := s.drop(p); err != nil {
			return fmt.Errorf("remove the attempt record of %s: %w", issue, err)
		}
	}
	return nil
}

// removeAllIssueFiles empties the attempts directory of judgements and
// verbatim records (and the temp files of writes a crash cut short).
func (s *Store) removeAllIssueFiles() error {
	entries, err := s.root.ReadDir(AttemptsDirName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if atomicfile.IsForeign(err) {
		// attempts/ is not ralphd's: moved aside, never emptied.
		return s.ensureDir(AttemptsDirName)
	}
	if err != nil {
		return fmt.Errorf("reset attempt records: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".session") || atomicfile.IsTemp(name)) {
			continue
		}
		if err := s.drop(AttemptsDirName + "/" + name); err != nil {
			return fmt.Errorf("reset attempt records: %w", err)
		}
	}
	return nil
}

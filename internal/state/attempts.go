package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// AttemptCount is one line of attempts.txt: how many attempts an issue has
// had.
type AttemptCount struct {
	IssueID string `json:"issue_id"`
	Count   int    `json:"count"`
}

// maxCountDigits bounds a count so it always fits an int.
const maxCountDigits = 9

// ParseAttempts parses the bytes of an attempts file: one "issue-id:count"
// line per issue, as the bash loop writes them. Surrounding spaces and a
// trailing CR are tolerated and blank lines ignored. The result keeps the
// file's order. When an issue appears more than once, the last line wins
// (the bash loop appends an issue's new count at the end) and the earlier
// lines are returned in bad along with every line that does not parse, so
// nothing is dropped silently.
func ParseAttempts(data []byte) (counts []AttemptCount, bad []string) {
	index := map[string]int{}
	var lineOf []string
	for raw := range strings.SplitSeq(string(data), "\n") {
		line := strings.Trim(raw, " \t\r")
		if line == "" {
			continue
		}
		id, n, ok := parseAttemptLine(line)
		if !ok {
			bad = append(bad, raw)
			continue
		}
		if i, dup := index[id]; dup {
			bad = append(bad, lineOf[i])
			counts[i].Count = n
			lineOf[i] = raw
			continue
		}
		index[id] = len(counts)
		counts = append(counts, AttemptCount{IssueID: id, Count: n})
		lineOf = append(lineOf, raw)
	}
	return counts, bad
}

func parseAttemptLine(line string) (string, int, bool) {
	id, num, ok := strings.Cut(line, ":")
	if !ok || validIssueID(id) != nil || num == "" || len(num) > maxCountDigits {
		return "", 0, false
	}
	for _, c := range []byte(num) {
		if c < '0' || c > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return "", 0, false
	}
	return id, n, true
}

// validIssueID checks that id can be stored as one attempts.txt line.
func validIssueID(id string) error {
	switch {
	case id == "":
		return errors.New("empty issue id")
	case !utf8.ValidString(id):
		return fmt.Errorf("issue id %q is not valid UTF-8", id)
	case strings.ContainsRune(id, ':'):
		return fmt.Errorf("issue id %q contains ':'", id)
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("issue id %q contains white space or control characters", id)
	}
	return nil
}

// FormatAttempts renders counts as attempts.txt, one "issue-id:count" line
// each, in order.
func FormatAttempts(counts []AttemptCount) []byte {
	var b bytes.Buffer
	for _, c := range counts {
		fmt.Fprintf(&b, "%s:%d\n", c.IssueID, c.Count)
	}
	return b.Bytes()
}

// AttemptsPath returns the path of attempts.txt.
func (s *Store) AttemptsPath() string { return s.path(AttemptsFile) }

// loadAttempts reads attempts.txt. When it holds lines that do not parse,
// those are first saved to attempts.txt.corrupt-<timestamp>, then
// attempts.txt is rewritten with the valid lines, and a warning naming the
// corrupt file is queued. A missing file is an empty one. The caller holds
// s.mu.
func (s *Store) loadAttempts() ([]AttemptCount, error) {
	path := s.AttemptsPath()
	data, err := s.read(AttemptsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if unusable(err) {
		dst, mvErr := s.moveAside(AttemptsFile)
		if mvErr != nil {
			return nil, fmt.Errorf("read attempts: %w; %w", err, mvErr)
		}
		s.warn("%v; it was moved to %s and the attempt counts start empty", err, dst)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	counts, bad := ParseAttempts(data)
	if len(bad) == 0 {
		return counts, nil
	}
	dst := s.corruptName(AttemptsFile)
	if err := s.writeFile(dst, []byte(strings.Join(bad, "\n")+"\n")); err != nil {
		return nil, fmt.Errorf("save corrupt attempts lines: %w", err)
	}
	if err := s.put(AttemptsFile, FormatAttempts(counts)); err != nil {
		return nil, fmt.Errorf("rewrite attempts: %w", err)
	}
	s.warn("%s had %d unreadable or duplicate line(s); they were moved to %s and the %d valid line(s) are used",
		path, len(bad), s.path(dst), len(counts))
	return counts, nil
}

// Attempts returns every issue's attempt count, in file order.
func (s *Store) Attempts() ([]AttemptCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadAttempts()
}

// Attempt returns the attempt count of one issue (0 when it has none).
func (s *Store) Attempt(issueID string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts, err := s.loadAttempts()
	if err != nil {
		return 0, err
	}
	for _, c := range counts {
		if c.IssueID == issueID {
			return c.Count, nil
		}
	}
	return 0, nil
}

// IncrementAttempt adds one attempt to an issue and returns the new count.
// The new count is on disk (written atomically and fsynced) when it
// returns without error.
func (s *Store) IncrementAttempt(issueID string) (int, error) {
	if err := validIssueID(issueID); err != nil {
		return 0, fmt.Errorf("increment attempts: %w", err)
	}
	return s.changeAttempt(issueID, 1)
}

// GiveBackAttempt takes one attempt back from an issue (an iteration that
// did not really try: a rate limit, an interruption) and returns the new
// count. A count that reaches 0 removes the issue's line, as the bash
// loop's reset does; a count already at 0 stays 0.
func (s *Store) GiveBackAttempt(issueID string) (int, error) {
	return s.changeAttempt(issueID, -1)
}

func (s *Store) changeAttempt(issueID string, delta int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts, err := s.loadAttempts()
	if err != nil {
		return 0, err
	}
	i := -1
	for j, c := range counts {
		if c.IssueID == issueID {
			i = j
			break
		}
	}
	if i < 0 {
		if delta <= 0 {
			return 0, nil
		}
		// A first attempt starts a record: drop what a reset cut short by
		// a crash left beside the counter.
		if err := s.removeIssueFiles(issueID); err != nil {
			return 0, err
		}
		counts = append(counts, AttemptCount{IssueID: issueID})
		i = len(counts) - 1
	}
	n := max(counts[i].Count+delta, 0)
	if n == 0 {
		counts = append(counts[:i], counts[i+1:]...)
	} else {
		counts[i].Count = n
	}
	if err := s.put(AttemptsFile, FormatAttempts(counts)); err != nil {
		return 0, fmt.Errorf("update attempts of %s: %w", issueID, err)
	}
	return n, nil
}

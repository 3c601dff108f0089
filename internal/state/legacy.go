package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// LegacyAttemptsFile is the in-project attempts file of older bash loops.
const LegacyAttemptsFile = ".ralph-attempts"

// LegacyAttemptsPath returns where the legacy attempts file would be in a
// project.
func LegacyAttemptsPath(projectDir string) string {
	return filepath.Join(projectDir, LegacyAttemptsFile)
}

// HasLegacyAttempts reports whether the project still has a legacy
// .ralph-attempts file (a regular file, not a link). The caller warns once
// (see LegacyWarning).
func HasLegacyAttempts(projectDir string) bool {
	fi, err := os.Lstat(LegacyAttemptsPath(projectDir))
	return err == nil && fi.Mode().IsRegular()
}

// LegacyWarning is the one-time warning about a legacy attempts file.
func LegacyWarning(projectDir, stateDir string) string {
	return fmt.Sprintf("found legacy %s: attempt counters now live in %s; run `ralphd migrate` to import its counts and remove it, or delete it",
		LegacyAttemptsPath(projectDir), filepath.Join(stateDir, AttemptsFile))
}

// Migrate imports the counts of the project's legacy .ralph-attempts file
// into attempts.txt, adding them to any existing counts, then removes the
// legacy file. Lines of the legacy file that do not parse are saved in the
// state directory as ralph-attempts.corrupt-<timestamp> first (with a
// queued warning). It returns the counts it imported; with no legacy file
// it does nothing. The legacy file is read and removed through the
// project directory (atomicfile.Dir): a link, FIFO or hard link in its
// place is refused, and left where it is.
func (s *Store) Migrate(projectDir string) (map[string]int, error) {
	legacy := LegacyAttemptsPath(projectDir)
	pd, err := atomicfile.OpenDir(projectDir)
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", legacy, err)
	}
	defer pd.Close()
	data, err := readIn(pd, LegacyAttemptsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w; move it aside or delete it", legacy, err)
	}
	imported, bad := ParseAttempts(data)

	s.mu.Lock()
	defer s.mu.Unlock()
	if len(bad) > 0 {
		dst := s.corruptName("ralph-attempts")
		if err := s.writeFile(dst, []byte(strings.Join(bad, "\n")+"\n")); err != nil {
			return nil, fmt.Errorf("migrate %s: save unreadable lines: %w", legacy, err)
		}
		s.warn("%s had %d unreadable or duplicate line(s); they were saved to %s", legacy, len(bad), s.path(dst))
	}
	counts, err := s.loadAttempts()
	if err != nil {
		return nil, fmt.Errorf("migrate %s: %w", legacy, err)
	}
	out := make(map[string]int, len(imported))
	for _, im := range imported {
		out[im.IssueID] = im.Count
		found := false
		for i := range counts {
			if counts[i].IssueID == im.IssueID {
				counts[i].Count += im.Count
				found = true
				break
			}
		}
		if !found && im.Count > 0 {
			if err := s.removeIssueFiles(im.IssueID); err != nil {
				return nil, fmt.Errorf("migrate %s: %w", legacy, err)
			}
			counts = append(counts, im)
		}
	}
	if err := s.put(AttemptsFile, FormatAttempts(counts)); err != nil {
		return nil, fmt.Errorf("migrate %s: %w", legacy, err)
	}
	if err := pd.Remove(LegacyAttemptsFile); err != nil {
		return nil, fmt.Errorf("migrate %s: counts imported, but the file could not be removed (delete it by hand): %w", legacy, err)
	}
	return out, nil
}

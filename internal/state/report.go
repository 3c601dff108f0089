package state

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/logjsonl"
)

// WriteReport writes a run's end-of-run report as reports/<run id>.json
// and .md, each atomically, and returns the markdown file's path.
func (s *Store) WriteReport(runID string, jsonData, markdown []byte) (string, error) {
	if runID == "" || strings.ContainsAny(runID, `/\`) || strings.HasPrefix(runID, ".") {
		return "", fmt.Errorf("write report: unusable run id %q", runID)
	}
	s.mu.Lock()
	err := s.ensureDir(ReportsDirName)
	s.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	base := ReportsDirName + "/" + runID
	if err := s.writeFile(base+".json", jsonData); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	if err := s.writeFile(base+".md", markdown); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return s.path(base + ".md"), nil
}

// PruneReports keeps the reports (<run id>.md and .json) of the newest keep
// runs and deletes the older ones, oldest first by run ID (see
// runid.CompareRuns). The run named except counts as the newest and is never
// deleted. Other files are left alone; keep < 1 keeps every report.
func (s *Store) PruneReports(keep int, except string) error {
	if keep < 1 {
		return nil
	}
	des, err := s.root.ReadDir(ReportsDirName)
	if err != nil {
		return fmt.Errorf("list reports for retention: %w", err)
	}
	newest := map[string]logjsonl.RunEntry{} // by run ID, over its .md and .json
	for _, de := range des {
		name := de.Name()
		id := strings.TrimSuffix(strings.TrimSuffix(name, ".md"), ".json")
		if id == name || id == except {
			continue
		}
		start, ok := logjsonl.ParseRunID(id)
		if !ok {
			continue // not a report ralphd named
		}
		if err := s.root.Check(ReportsDirName + "/" + name); atomicfile.IsForeign(err) {
			s.warn("%v; it is named like a report, but ralphd did not write it, so retention left it alone", err)
			continue
		}
		e := logjsonl.RunEntry{ID: id, Start: start}
		if info, err := de.Info(); err == nil {
			e.Modified = info.ModTime()
		}
		if old, seen := newest[id]; !seen || e.Modified.After(old.Modified) {
			newest[id] = e
		}
	}
	runs := slices.SortedFunc(maps.Values(newest), logjsonl.CompareRuns)
	if except != "" {
		keep--
	}
	var errs []error
	for _, e := range runs[:max(len(runs)-keep, 0)] {
		for _, ext := range []string{".md", ".json"} {
			// Only a file ralphd made: anything else (a link, a hard
			// link to a file of the user's) is left and reported.
			if err := s.root.Remove(ReportsDirName + "/" + e.ID + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteReport writes a run's end-of-run report as reports/<run id>.json
// and .md, each atomically, and returns the markdown file's path.
func (s *Store) WriteReport(runID string, jsonData, markdown []byte) (string, error) {
	if runID == "" || strings.ContainsAny(runID, `/\`) || strings.HasPrefix(runID, ".") {
		return "", fmt.Errorf("write report: unusable run id %q", runID)
	}
	if err := os.MkdirAll(s.ReportsDir(), dirPerm); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	base := filepath.Join(s.ReportsDir(), runID)
	if err := s.writer.write(base+".json", jsonData, filePerm); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	if err := s.writer.write(base+".md", markdown, filePerm); err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return base + ".md", nil
}

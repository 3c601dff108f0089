// Package benchtest makes bd-shaped test data for benchmarks and tests in
// several packages.
package benchtest

import (
	"encoding/json"
	"fmt"
	"time"
)

// edge is one dependency as bd 1.0.5 prints it in list and ready items.
type edge struct {
	IssueID     string `json:"issue_id"`
	DependsOnID string `json:"depends_on_id"`
	Type        string `json:"type"`
	CreatedAt   string `json:"created_at"`
	CreatedBy   string `json:"created_by"`
	Metadata    string `json:"metadata"`
}

// item is one issue as bd 1.0.5 prints it in `bd ready --json` and
// `bd list --json` (the ready-mixed and list-all contract fixtures).
type item struct {
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description,omitempty"`
	AcceptanceCriteria string   `json:"acceptance_criteria,omitempty"`
	Status             string   `json:"status"`
	Priority           int      `json:"priority"`
	IssueType          string   `json:"issue_type"`
	Owner              string   `json:"owner"`
	CreatedAt          string   `json:"created_at"`
	CreatedBy          string   `json:"created_by"`
	UpdatedAt          string   `json:"updated_at"`
	ClosedAt           string   `json:"closed_at,omitempty"`
	CloseReason        string   `json:"close_reason,omitempty"`
	Labels             []string `json:"labels,omitempty"`
	Dependencies       []edge   `json:"dependencies,omitempty"`
	Parent             string   `json:"parent,omitempty"`
	DependencyCount    int      `json:"dependency_count"`
	DependentCount     int      `json:"dependent_count"`
	CommentCount       int      `json:"comment_count"`
}

// IssuesJSON returns bd-style JSON (an indented array, as bd prints it) of
// n issues. Every third issue has labels, every fifth a parent-child edge
// and every seventh a related edge. When closedEvery > 0, every
// closedEvery-th issue is closed with a reason, as in `bd list --all`;
// with 0 all are open, as in `bd ready`. The same arguments give the same
// bytes.
func IssuesJSON(n, closedEvery int) ([]byte, error) {
	base := time.Date(2026, 11, 21, 18, 31, 42, 0, time.UTC)
	items := make([]item, n)
	for i := range items {
		ts := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		it := item{
			ID:                 fmt.Sprintf("rt-%04x", i),
			Title:              fmt.Sprintf("Issue number %d", i),
			Description:        "Parse the YAML config file into a struct.",
			AcceptanceCriteria: "Unit tests cover all keys; invalid YAML returns error",
			Status:             "open",
			Priority:           i % 5,
			IssueType:          "task",
			Owner:              "test@example.com",
			CreatedAt:          ts,
			CreatedBy:          "Test User",
			UpdatedAt:          ts,
		}
		if closedEvery > 0 && i%closedEvery == closedEvery-1 {
			it.Status, it.ClosedAt, it.CloseReason = "closed", ts, "go test ./... passes (exit 0)"
		}
		if i%3 == 0 {
			it.Labels = []string{"backend", "parser"}
		}
		if i%5 == 0 && i > 0 {
			it.Parent = "rt-0000"
			it.Dependencies = append(it.Dependencies, edge{it.ID, "rt-0000", "parent-child", ts, "Test User", "{}"})
		}
		if i%7 == 0 && i > 0 {
			it.Dependencies = append(it.Dependencies, edge{it.ID, "rt-0001", "related", ts, "Test User", "{}"})
		}
		it.DependencyCount = len(it.Dependencies)
		items[i] = it
	}
	b, err := json.MarshalIndent(items, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode issues: %w", err)
	}
	return b, nil
}

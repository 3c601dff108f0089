package modes

import (
	"testing"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// TestCountIssues: the run's last line counts each issue once; an open
// issue waiting on a blocker that is not closed is blocked, one whose
// blocker closed, or whose other edges (parent-child) wait, is open; the
// fleet's own issues and the other statuses are not counted.
func TestCountIssues(t *testing.T) {
	dep := func(on, typ string) []beads.Dependency {
		return []beads.Dependency{{DependsOnID: on, Type: typ}}
	}
	for _, tc := range []struct {
		name   string
		issues []beads.Issue
		want   issueCounts
	}{
		{"empty", nil, issueCounts{}},
		{"statuses", []beads.Issue{
			{ID: "a", Status: beads.StatusOpen}, {ID: "b", Status: beads.StatusInProgress},
			{ID: "c", Status: beads.StatusBlocked}, {ID: "d", Status: beads.StatusClosed},
			{ID: "e", Status: beads.StatusDeferred}, {ID: "f", Status: beads.StatusPinned},
		}, issueCounts{open: 1, blocked: 1, inProgress: 1, closed: 1}},
		{"waits on an open blocker", []beads.Issue{
			{ID: "a", Status: beads.StatusOpen, Dependencies: dep("b", beads.DepBlocks)}, {ID: "b", Status: beads.StatusOpen},
		}, issueCounts{open: 1, blocked: 1}},
		{"waits on a blocker set blocked, counted once each", []beads.Issue{
			{ID: "a", Status: beads.StatusOpen, Dependencies: dep("b", beads.DepBlocks)}, {ID: "b", Status: beads.StatusBlocked},
			{ID: "c", Status: beads.StatusClosed},
		}, issueCounts{blocked: 2, closed: 1}},
		{"its blocker closed", []beads.Issue{
			{ID: "a", Status: beads.StatusOpen, Dependencies: dep("b", beads.DepBlocks)}, {ID: "b", Status: beads.StatusClosed},
		}, issueCounts{open: 1, closed: 1}},
		{"a blocker not in the reading", []beads.Issue{
			{ID: "a", Status: beads.StatusOpen, Dependencies: dep("other-1", beads.DepBlocks)},
		}, issueCounts{open: 1}},
		{"a parent is not a blocker", []beads.Issue{
			{ID: "a", Status: beads.StatusOpen, Dependencies: dep("e", beads.DepParentChild)}, {ID: "e", Status: beads.StatusOpen, IssueType: beads.TypeEpic},
		}, issueCounts{open: 2}},
		{"the fleet's own", []beads.Issue{
			{ID: "a", Status: beads.StatusOpen, Labels: []string{FleetLabel}}, {ID: "b", Status: beads.StatusClosed},
		}, issueCounts{closed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countIssues(guard.NewSnapshot(tc.issues)); got != tc.want {
				t.Errorf("countIssues = %+v, want %+v", got, tc.want)
			}
		})
	}
}

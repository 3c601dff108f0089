package modes

import (
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

func TestHeldBack(t *testing.T) {
	issue := func(id, status string, deps ...string) beads.Issue {
		is := beads.Issue{ID: id, Status: status}
		for _, d := range deps {
			is.Dependencies = append(is.Dependencies, beads.Dependency{IssueID: id, DependsOnID: d, Type: beads.DepBlocks})
		}
		return is
	}
	epic := func(id string) beads.Issue {
		return beads.Issue{ID: id, IssueType: beads.TypeEpic, Status: beads.StatusOpen}
	}
	child := func(id, parent, status string) beads.Issue {
		return beads.Issue{ID: id, Parent: parent, Status: status}
	}
	tests := []struct {
		name    string
		changes []heldChange
		now     []beads.Issue
		skipped []string
		want    []heldIssue
	}{
		{"closed, nothing held", nil, []beads.Issue{issue("t-a", beads.StatusClosed), issue("t-b", beads.StatusClosed)}, nil, nil},
		{"status set blocked by an iteration", []heldChange{{iteration: 2, issue: "t-a", status: beads.StatusBlocked}},
			[]beads.Issue{issue("t-a", beads.StatusBlocked), issue("t-b", beads.StatusClosed)}, nil,
			[]heldIssue{{"t-a", "t-a: status set to blocked in iteration 2"}}},
		{"status set, since changed back", []heldChange{{iteration: 2, issue: "t-a", status: beads.StatusBlocked}},
			[]beads.Issue{issue("t-a", beads.StatusInProgress), issue("t-b", beads.StatusClosed)}, nil, nil},
		{"blocked by someone else: not BUILD's", nil,
			[]beads.Issue{issue("t-a", beads.StatusBlocked), issue("t-b", beads.StatusClosed)}, nil, nil},
		{"dependency on an unfinished blocker", []heldChange{{iteration: 1, issue: "t-b", dep: "t-x"}},
			[]beads.Issue{issue("t-a", beads.StatusClosed), issue("t-b", beads.StatusOpen, "t-x"), issue("t-x", beads.StatusInProgress)}, nil,
			[]heldIssue{{"t-b", "t-b depends on t-x (added in iteration 1), which is in_progress"}}},
		{"dependency on a closed blocker", []heldChange{{iteration: 1, issue: "t-b", dep: "t-x"}},
			[]beads.Issue{issue("t-a", beads.StatusClosed), issue("t-b", beads.StatusOpen, "t-x"), issue("t-x", beads.StatusClosed)}, nil, nil},
		{"dependency since removed", []heldChange{{iteration: 1, issue: "t-b", dep: "t-x"}},
			[]beads.Issue{issue("t-a", beads.StatusClosed), issue("t-b", beads.StatusOpen), issue("t-x", beads.StatusOpen)}, nil, nil},
		{"an epic waiting on a child an iteration created", nil,
			[]beads.Issue{epic("t-a"), child("t-a.1", "t-a", beads.StatusOpen), issue("t-b", beads.StatusClosed)}, nil,
			[]heldIssue{{"t-a", "t-a waits on its child t-a.1, which iteration 3 created and is open"}}},
		{"an epic waiting on a child it had: not BUILD's", nil,
			[]beads.Issue{epic("t-a"), child("t-a.2", "t-a", beads.StatusOpen), issue("t-b", beads.StatusClosed)}, nil, nil},
		{"an epic whose created child is closed", nil,
			[]beads.Issue{epic("t-a"), child("t-a.1", "t-a", beads.StatusClosed), issue("t-b", beads.StatusClosed)}, nil, nil},
		{"stuck or skipped: given up on, not held", []heldChange{{iteration: 1, issue: "t-b", dep: "t-x"}, {iteration: 1, issue: "t-a", status: beads.StatusBlocked}},
			[]beads.Issue{issue("t-a", beads.StatusBlocked), issue("t-b", beads.StatusOpen, "t-x"), issue("t-x", beads.StatusOpen)}, []string{"t-a", "t-b"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			b := &buildLedger{startReady: []string{"t-a", "t-b"}, changes: tt.changes, made: map[string]int{"t-a.1": 3}}
			is.Equal(b.heldBack(guard.NewSnapshot(tt.now), tt.skipped), tt.want)
		})
	}
}

// The pool's own claims and unclaims are not an agent's change; an agent
// releasing a claim a worker holds, or claiming an issue nobody works on
// with a made-up assignee, is.
func TestPoolMoved(t *testing.T) {
	p := &Pool{poolJudging: poolJudging{actorPrefix: "ralphd/host/abc/"}}
	p.working = map[string]string{"t-w": "ralphd/host/abc/w2"}
	after := guard.NewSnapshot([]beads.Issue{
		{ID: "t-w", Status: beads.StatusInProgress, Assignee: "ralphd/host/abc/w2"},
		{ID: "t-r", Status: beads.StatusOpen, Assignee: ""},
		{ID: "t-g", Status: beads.StatusInProgress, Assignee: "ghost"},
		{ID: "t-c", Status: beads.StatusInProgress, Assignee: "ralphd/host/abc/w1"},
		{ID: "t-b", Status: beads.StatusBlocked},
		{ID: "t-o", Status: beads.StatusClosed, Assignee: "ralphd/other/def/w1"},
	})
	tests := []struct {
		id   string
		kind guard.Kind
		want bool
	}{
		{"t-w", guard.OtherStatus, true},   // its worker's claim
		{"t-r", guard.OtherStatus, true},   // an unclaim after an iteration
		{"t-c", guard.OtherAssignee, true}, // a claim just made, before its worker started
		{"t-g", guard.OtherStatus, false},  // a made-up assignee
		{"t-b", guard.OtherStatus, false},  // set blocked
		{"t-w", guard.Priority, false},     // not a status or assignee change
	}
	for _, tt := range tests {
		is := is.New(t)
		is.Equal(p.poolMoved(guard.Violation{Kind: tt.kind, IssueID: tt.id}, after, false), tt.want) // tt.id
	}
	is := is.New(t)
	// Another clone's worker closed it: its ralphd judges it, on a shared
	// tracker only.
	is.True(p.poolMoved(guard.Violation{Kind: guard.OtherStatus, IssueID: "t-o"}, after, true))
	is.True(!p.poolMoved(guard.Violation{Kind: guard.OtherStatus, IssueID: "t-o"}, after, false))
	p.working["t-r"] = "ralphd/host/abc/w1"
	is.True(!p.poolMoved(guard.Violation{Kind: guard.OtherStatus, IssueID: "t-r"}, after, false)) // released while its worker holds it
	var none *Pool
	is.True(!none.poolMoved(guard.Violation{Kind: guard.OtherStatus, IssueID: "t-w"}, after, false))
}

package modes

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// readySnap is a small tracker: a-1 and a-2 ready, a-3 in progress, a-4
// closed, a-5 blocked by a-6 (open, ready).
func readySnap() guard.Snapshot {
	return guard.NewSnapshot([]beads.Issue{
		{ID: "a-1", Status: beads.StatusOpen, Priority: 1, IssueType: "task"},
		{ID: "a-2", Status: beads.StatusOpen, Priority: 2, IssueType: "task", Labels: []string{"x", "y"}},
		{ID: "a-3", Status: beads.StatusInProgress, Priority: 2, IssueType: "task", Assignee: "bob"},
		{ID: "a-4", Status: beads.StatusClosed, Priority: 2, IssueType: "task"},
		{ID: "a-5", Status: beads.StatusOpen, Priority: 0, IssueType: "task", DependencyCount: 1},
		{ID: "a-6", Status: beads.StatusOpen, Priority: 3, IssueType: "task", DependentCount: 1},
	})
}

// TestReadyStillHolds: each change that can make another issue ready or
// change bd's order, by itself, forces a fresh `bd ready`; the changes an
// iteration makes to the issues it works on do not.
func TestReadyStillHolds(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(s guard.Snapshot)
		holds  bool
	}{
		{"nothing changed", func(s guard.Snapshot) {}, true},
		{"claimed (open→in_progress)", func(s guard.Snapshot) {
			set(s, "a-1", func(i *beads.Issue) { i.Status = beads.StatusInProgress; i.Assignee = "me" })
		}, true},
		{"closed, no dependencies or dependents", func(s guard.Snapshot) { set(s, "a-1", func(i *beads.Issue) { i.Status = beads.StatusClosed }) }, true},
		{"in progress closed", func(s guard.Snapshot) { set(s, "a-3", func(i *beads.Issue) { i.Status = beads.StatusClosed }) }, true},
		{"notes and description changed", func(s guard.Snapshot) {
			set(s, "a-2", func(i *beads.Issue) { i.Notes, i.Description = "n", "d" })
		}, true},
		{"labels reordered", func(s guard.Snapshot) { set(s, "a-2", func(i *beads.Issue) { i.Labels = []string{"y", "x"} }) }, true},

		{"an issue created", func(s guard.Snapshot) { s["a-7"] = beads.Issue{ID: "a-7", Status: beads.StatusOpen} }, false},
		{"an issue deleted", func(s guard.Snapshot) { delete(s, "a-4") }, false},
		{"priority changed", func(s guard.Snapshot) { set(s, "a-2", func(i *beads.Issue) { i.Priority = 0 }) }, false},
		{"type changed", func(s guard.Snapshot) { set(s, "a-2", func(i *beads.Issue) { i.IssueType = "epic" }) }, false},
		{"parent changed", func(s guard.Snapshot) { set(s, "a-2", func(i *beads.Issue) { i.Parent = "a-1" }) }, false},
		{"dependency_count changed", func(s guard.Snapshot) { set(s, "a-5", func(i *beads.Issue) { i.DependencyCount = 0 }) }, false},
		{"dependent_count changed", func(s guard.Snapshot) { set(s, "a-1", func(i *beads.Issue) { i.DependentCount = 1 }) }, false},
		{"label added", func(s guard.Snapshot) { set(s, "a-1", func(i *beads.Issue) { i.Labels = []string{StuckLabel} }) }, false},
		{"deferred", func(s guard.Snapshot) {
			set(s, "a-1", func(i *beads.Issue) { i.DeferUntil = time.Now().Add(time.Hour) })
		}, false},
		{"closed with a dependent (a blocker)", func(s guard.Snapshot) { set(s, "a-6", func(i *beads.Issue) { i.Status = beads.StatusClosed }) }, false},
		{"closed with a dependency", func(s guard.Snapshot) { set(s, "a-5", func(i *beads.Issue) { i.Status = beads.StatusClosed }) }, false},
		{"reopened (closed→open)", func(s guard.Snapshot) { set(s, "a-4", func(i *beads.Issue) { i.Status = beads.StatusOpen }) }, false},
		{"released (in_progress→open)", func(s guard.Snapshot) {
			set(s, "a-3", func(i *beads.Issue) { i.Status = beads.StatusOpen; i.Assignee = "" })
		}, false},
		{"open→blocked", func(s guard.Snapshot) { set(s, "a-2", func(i *beads.Issue) { i.Status = "blocked" }) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			at, now := readySnap(), readySnap()
			c.change(now)
			is.Equal(readyStillHolds(at, now), c.holds)
		})
	}
}

// TestReadyDeferredAnywhere: an issue deferred in both snapshots still
// forces a fresh answer: its deferral can run out with no change at all.
func TestReadyDeferredAnywhere(t *testing.T) {
	is := is.New(t)
	at, now := readySnap(), readySnap()
	for _, s := range []guard.Snapshot{at, now} {
		set(s, "a-4", func(i *beads.Issue) { i.DeferUntil = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) })
	}
	is.True(!readyStillHolds(at, now))
}

// TestStillReady: the reused answer keeps bd's order and drops what left
// it (claimed, closed, assigned otherwise).
func TestStillReady(t *testing.T) {
	is := is.New(t)
	at := readySnap()
	answer := []beads.Issue{at["a-6"], at["a-1"], at["a-2"]}
	now := readySnap()
	set(now, "a-6", func(i *beads.Issue) { i.Status = beads.StatusInProgress })
	set(now, "a-2", func(i *beads.Issue) { i.Title = "edited" })
	got := stillReady(answer, at, now)
	is.Equal(len(got), 2)
	is.Equal(got[0].ID, "a-1")
	is.Equal(got[1].Title, "edited") // as the tracker has it now
	set(now, "a-1", func(i *beads.Issue) { i.Assignee = "someone" })
	is.Equal(len(stillReady(answer, at, now)), 1)
}

func set(s guard.Snapshot, id string, f func(*beads.Issue)) {
	is := s[id]
	f(&is)
	s[id] = is
}

package modes

import (
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

func TestEndsWithPromise(t *testing.T) {
	tests := []struct {
		result string
		want   bool
	}{
		{"Graph ready. <promise>PLAN_COMPLETE</promise>", true},
		{"<promise>PLAN_COMPLETE</promise>\n\n", true},
		{"I will print <promise>PLAN_COMPLETE</promise> when done, not yet.", false}, // quoted, not final
		{"", false},
		{"<promise>PLAN_COMPLETE</promise> but wait", false},
		{"<promise>COMPLETE</promise>", false}, // BUILD's promise is not PLANNING's
	}
	for _, tt := range tests {
		t.Run(tt.result, func(t *testing.T) {
			is := is.New(t)
			is.Equal(EndsWithPromise(tt.result, PlanPromise), tt.want)
		})
	}
}

func TestDiffPlan(t *testing.T) {
	is := is.New(t)
	dep := func(from, to string) beads.Dependency {
		return beads.Dependency{IssueID: from, DependsOnID: to, Type: beads.DepBlocks}
	}
	before := guard.NewSnapshot([]beads.Issue{
		{ID: "a", Priority: 2, Status: beads.StatusOpen, Labels: []string{StuckLabel}},
		{ID: "b", Priority: 2, Status: beads.StatusOpen, Dependencies: []beads.Dependency{dep("b", "a")}},
		{ID: "gone", Priority: 3, Status: beads.StatusOpen},
	})
	after := guard.NewSnapshot([]beads.Issue{
		{ID: "a", Priority: 2, Status: beads.StatusOpen, Dependencies: []beads.Dependency{dep("a", "c")}},
		{ID: "b", Priority: 0, Status: beads.StatusClosed},
		{ID: "c", Priority: 1, Status: beads.StatusOpen, Dependencies: []beads.Dependency{dep("c", "b")}},
	})
	c := DiffPlan(before, after)
	is.Equal(c.Created, []string{"c"})
	is.Equal(c.Closed, []string{"b"})
	is.Equal(c.Deleted, []string{"gone"})
	is.Equal(c.Reprioritised, []string{"b:P2->P0"})
	is.Equal(c.DepsAdded, []string{"a->c", "c->b"})
	is.Equal(c.DepsRemoved, []string{"b->a"})
	is.Equal(c.StuckCleared, []string{"a"})
	is.Equal(c.Summary(), "1 created, 1 closed, 1 deleted, 1 re-prioritised, 2 dependencies added, 1 dependencies removed, 1 stuck labels cleared")
	is.Equal(DiffPlan(before, before).Summary(), "") // no change, nothing to say
}

func TestBackoff(t *testing.T) {
	is := is.New(t)
	b := backoff{max: 5 * 60e9} // 5 minutes
	var got []float64
	for range 5 {
		got = append(got, b.step().Minutes())
	}
	is.Equal(got, []float64{1, 2, 4, 5, 5}) // doubles, capped
	b.reset()
	is.Equal(b.step().Minutes(), 1.0) // a success starts over
}

func TestIDPrefix(t *testing.T) {
	for id, want := range map[string]string{"rt-a1b": "rt", "rt-wjd.1": "rt", "my-proj-x9": "my-proj", "noprefix": ""} {
		if got := idPrefix(id); got != want {
			t.Errorf("idPrefix(%q) = %q, want %q", id, got, want)
		}
	}
}

package guard

import (
	"slices"
	"testing"

	"github.com/ralphd/ralphd/internal/beads"
)

// TestAgentWrites checks the writes an agent's bd call is told as, by
// their effects: what a reading may take as explained.
func TestAgentWrites(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want []beads.Effect
	}{
		{[]string{"close", "t-1", "--reason", "done"}, []beads.Effect{{Issue: "t-1", Op: "status", Value: "closed"}, {Issue: "t-1", Op: "close-reason", Value: "done"}}},
		{[]string{"--json", "update", "t-1", "-s", "blocked"}, []beads.Effect{{Issue: "t-1", Op: "status", Value: "blocked"}}},
		{[]string{"update", "t-1", "--claim"}, []beads.Effect{{Issue: "t-1", Op: "status", Value: "in_progress"}, {Issue: "t-1", Op: "assignee", AnyValue: true}}},
		{[]string{"update", "t-1", "t-2", "--append-notes=x"}, []beads.Effect{{Issue: "t-1", Op: "append-notes", Value: "x"}, {Issue: "t-2", Op: "append-notes", Value: "x"}}},
		{[]string{"label", "add", "t-1", "t-2", "later"}, []beads.Effect{{Issue: "t-1", Op: beads.OpLabelAdd, Value: "later"}, {Issue: "t-2", Op: beads.OpLabelAdd, Value: "later"}}},
		{[]string{"dep", "add", "t-1", "t-2"}, []beads.Effect{{Issue: "t-1", Op: beads.OpDepAdd, Value: "t-2"}, {Issue: "t-2", Op: beads.OpDependentAdd, Value: "t-1"}}},
		{[]string{"comments", "add", "t-1", "hi"}, []beads.Effect{{Issue: "t-1", Op: beads.OpComment, Value: "hi"}}},
		{[]string{"create", "New", "--id", "t-9"}, []beads.Effect{{Issue: "t-9", Op: beads.OpCreate}}},
		{[]string{"create", "New"}, nil}, // no id: its updated_at shows it
		{[]string{"list", "--all"}, nil},
		{[]string{"update"}, nil},
		{[]string{"--bogus=", "close"}, nil},
	} {
		var got []beads.Effect
		for _, w := range AgentWrites(tc.argv) {
			got = append(got, w.Effects()...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("AgentWrites(%q) effects %+v, want %+v", tc.argv, got, tc.want)
		}
	}
}

// FuzzAgentWrites: any argv gives writes that name an issue, without a
// panic.
func FuzzAgentWrites(f *testing.F) {
	f.Add("update", "t-1", "--status=closed")
	f.Add("close", "t-1", "--reason")
	f.Add("label", "add", "t-1")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, w := range AgentWrites([]string{a, b, c}) {
			if len(beads.WriteTargets(w.Args)) == 0 {
				t.Fatalf("a write naming no issue: %q", w.Args)
			}
			_ = w.Effects()
		}
	})
}

package guard

import (
	"context"
	"os"
	"slices"
	"sync"
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

// TestServeTellsAllowedWrites: through the broker, each write the guard
// allowed is told before the real bd runs it and again after, as the same
// *beads.Write; a refused call, a read and a call the real bd never ran
// are never told.
func TestServeTellsAllowedWrites(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bd := newFakeBD(t, 0, "")
	var mu sync.Mutex
	type tell struct {
		w       *beads.Write
		bdRanBy bool // the real bd had run when told
	}
	var told []tell
	g, err := Serve(context.Background(), t.TempDir(), Setup{Self: self, Mode: ModeBuild, RealBD: bd.path,
		OnWrite: func(w *beads.Write) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, tell{w, bd.ran(t) != nil})
		}})
	if err != nil {
		t.Fatal(err)
	}
	g.SetLeader(os.Getpid())
	t.Cleanup(func() { _ = g.Close() })
	for _, refused := range [][]string{{"delete", "x-1"}, {"close", "x-1"}, {"update", "x-1", "--title", "Easier"}} {
		if code, _ := agentBD(t, g, nil, refused...); code != ExitRefused {
			t.Fatalf("%q: exit %d, want refused", refused, code)
		}
	}
	if code, _ := agentBD(t, g, nil, "list", "--all"); code != 0 {
		t.Fatalf("list: exit %d", code)
	}
	if len(told) != 0 {
		t.Fatalf("told of %d writes the guard refused or that write nothing", len(told))
	}
	if err := os.Remove(bd.argvFile); err != nil { // the list's
		t.Fatal(err)
	}
	if code, _ := agentBD(t, g, nil, "--json", "close", "x-1", "--reason", "ran `make`: ok"); code != 0 {
		t.Fatalf("close: exit %d", code)
	}
	if len(told) != 2 || told[0].w != told[1].w || told[0].bdRanBy || !told[1].bdRanBy {
		t.Fatalf("told %+v; want the same write before the real bd ran and after", told)
	}
	if got := told[0].w.Args; !slices.Equal(got, []string{"close", "x-1", "--reason=ran `make`: ok"}) {
		t.Errorf("told the write as %q", got)
	}
}

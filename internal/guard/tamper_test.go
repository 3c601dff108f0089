package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/ralphd/ralphd/internal/beads"
)

func issue(id string, prio int, mods ...func(*beads.Issue)) beads.Issue {
	is := beads.Issue{ID: id, Title: "T " + id, Status: beads.StatusOpen, Priority: prio, IssueType: "task", AcceptanceCriteria: "ac " + id}
	for _, m := range mods {
		m(&is)
	}
	return is
}

func dep(on string) func(*beads.Issue) {
	return func(i *beads.Issue) {
		i.Dependencies = append(i.Dependencies, beads.Dependency{IssueID: i.ID, DependsOnID: on, Type: beads.DepBlocks})
	}
}

func evidence(r string) bool { return strings.Contains(r, "go test") }

func TestDiff(t *testing.T) {
	base := []beads.Issue{issue("a-1", 1, dep("a-2")), issue("a-2", 2), issue("a-3", 3, func(i *beads.Issue) {
		i.Labels = []string{"x"}
		i.Comments = []beads.Comment{{ID: "c1", Author: "ann", Text: "first"}, {ID: "c2", Author: "bob", Text: "second"}}
		i.CommentCount = 2
	}), issue("a-4", 2, func(i *beads.Issue) {
		i.Parent = "a-1"
		i.Dependencies = []beads.Dependency{{IssueID: "a-4", DependsOnID: "a-1", Type: beads.DepParentChild}}
	})}
	tests := []struct {
		name  string
		after func(s Snapshot)
		want  []Kind
	}{
		{"no change", func(Snapshot) {}, nil},
		{"allowed: status, notes, new issue, new dep, label added", func(s Snapshot) {
			a := s["a-2"]
			a.Status, a.Notes, a.Labels = beads.StatusInProgress, "n", []string{"new"}
			a.Dependencies = []beads.Dependency{{IssueID: "a-2", DependsOnID: "a-9", Type: beads.DepBlocks}}
			s["a-2"] = a
			s["a-9"] = issue("a-9", 0)
		}, nil},
		{"priority", func(s Snapshot) { a := s["a-1"]; a.Priority = 0; s["a-1"] = a }, []Kind{Priority}},
		{"type and acceptance", func(s Snapshot) {
			a := s["a-2"]
			a.IssueType, a.AcceptanceCriteria = "bug", "easier"
			s["a-2"] = a
		}, []Kind{Acceptance, Type}},
		{"dep removed", func(s Snapshot) { a := s["a-1"]; a.Dependencies = nil; s["a-1"] = a }, []Kind{DepRemoved}},
		{"dep type changed counts as removed", func(s Snapshot) {
			a := s["a-1"]
			a.Dependencies = []beads.Dependency{{IssueID: "a-1", DependsOnID: "a-2", Type: "related"}}
			s["a-1"] = a
		}, []Kind{DepRemoved}},
		{"deleted", func(s Snapshot) { delete(s, "a-3") }, []Kind{Deleted}},
		{"label removed", func(s Snapshot) { a := s["a-3"]; a.Labels = nil; s["a-3"] = a }, []Kind{LabelRemoved}},
		{"title", func(s Snapshot) { a := s["a-1"]; a.Title = "easier"; s["a-1"] = a }, []Kind{Title}},
		{"deferred", func(s Snapshot) { a := s["a-1"]; a.Status = beads.StatusDeferred; s["a-1"] = a }, []Kind{Status}},
		{"pinned", func(s Snapshot) { a := s["a-1"]; a.Status = beads.StatusPinned; s["a-1"] = a }, []Kind{Status}},
		{"parent set", func(s Snapshot) { a := s["a-2"]; a.Parent = "a-3"; s["a-2"] = a }, []Kind{Parent}},
		{"parent-child edge removed is the parent's change", func(s Snapshot) {
			a := s["a-4"]
			a.Parent, a.Dependencies = "", nil
			s["a-4"] = a
		}, []Kind{Parent}},
		{"defer_until and due", func(s Snapshot) {
			a := s["a-1"]
			a.DeferUntil, a.DueAt = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
			s["a-1"] = a
		}, []Kind{DeferUntil, DueAt}},
		{"external ref and estimate", func(s Snapshot) {
			a := s["a-1"]
			a.ExternalRef, a.EstimatedMinutes = "gh-1", 90
			s["a-1"] = a
		}, []Kind{Estimate, ExternalRef}},
		{"comment removed", func(s Snapshot) { a := s["a-3"]; a.Comments = a.Comments[1:]; a.CommentCount = 1; s["a-3"] = a }, []Kind{CommentRemoved}},
		{"comment rewritten in place (same id, same count)", func(s Snapshot) {
			a := s["a-3"]
			a.Comments = slices.Clone(a.Comments)
			a.Comments[0].Text = "rewritten"
			s["a-3"] = a
		}, []Kind{CommentRemoved}},
		{"comment added", func(s Snapshot) {
			a := s["a-3"]
			a.Comments = append(slices.Clone(a.Comments), beads.Comment{ID: "c3", Text: "new"})
			s["a-3"] = a
		}, nil},
		{"closed with evidence", func(s Snapshot) {
			a := s["a-2"]
			a.Status, a.CloseReason = beads.StatusClosed, "go test ./... passes"
			s["a-2"] = a
		}, nil},
		{"closed without reason", func(s Snapshot) { a := s["a-2"]; a.Status = beads.StatusClosed; s["a-2"] = a }, []Kind{CloseNoReason}},
		{"closed without evidence", func(s Snapshot) {
			a := s["a-2"]
			a.Status, a.CloseReason = beads.StatusClosed, "done"
			s["a-2"] = a
		}, []Kind{CloseNoEvident}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := NewSnapshot(base)
			after := NewSnapshot(base)
			tt.after(after)
			var got []Kind
			for _, v := range Diff(before, after, Options{CitesEvidence: evidence}) {
				got = append(got, v.Kind)
				is.True(v.String() != "") // every violation describes itself
			}
			is.Equal(got, tt.want)
		})
	}
}

func TestAlreadyClosedIsNotJudgedAgain(t *testing.T) {
	is := is.New(t)
	closed := issue("a-1", 1, func(i *beads.Issue) { i.Status, i.CloseReason = beads.StatusClosed, "done" })
	vs := Diff(NewSnapshot([]beads.Issue{closed}), NewSnapshot([]beads.Issue{closed}), Options{CitesEvidence: evidence})
	is.Equal(len(vs), 0) // a close from an earlier iteration is not this iteration's violation
}

// memTracker records the PLAN-power calls Revert makes.
type memTracker struct {
	calls []string
	fail  string // a call prefix that fails
}

func (m *memTracker) do(call string) error {
	m.calls = append(m.calls, call)
	if m.fail != "" && strings.HasPrefix(call, m.fail) {
		return errors.New("bd said no")
	}
	return nil
}

func (m *memTracker) Create(_ context.Context, o beads.CreateOptions) (beads.Issue, error) {
	return beads.Issue{ID: o.ID}, m.do(fmt.Sprintf("create %s p%d %s", o.ID, *o.Priority, o.Type))
}
func (m *memTracker) Update(_ context.Context, id string, sets ...beads.Set) (beads.Issue, error) {
	call := "update " + id
	for _, s := range sets {
		call += " " + s.Flag + " " + s.Value
	}
	return beads.Issue{}, m.do(call)
}
func (m *memTracker) DepAdd(_ context.Context, a, b, ty string) error {
	return m.do(fmt.Sprintf("dep add %s %s %s", a, b, ty))
}
func (m *memTracker) LabelAdd(_ context.Context, id, l string) error {
	return m.do("label add " + id + " " + l)
}
func (m *memTracker) LabelRemove(_ context.Context, id, l string) error {
	return m.do("label remove " + id + " " + l)
}
func (m *memTracker) Reopen(_ context.Context, id, _ string) (beads.Issue, error) {
	return beads.Issue{}, m.do("reopen " + id)
}
func (m *memTracker) Close(_ context.Context, id, _ string) (beads.Issue, error) {
	return beads.Issue{}, m.do("close " + id)
}
func (m *memTracker) UpdateStatus(_ context.Context, id, st string) (beads.Issue, error) {
	return beads.Issue{}, m.do("status " + id + " " + st)
}
func (m *memTracker) CommentAdd(_ context.Context, id, text string) error {
	return m.do("comment " + id + " " + strings.SplitN(text, "\n", 2)[0])
}
func (m *memTracker) AppendNotes(_ context.Context, id, text string) (beads.Issue, error) {
	return beads.Issue{}, m.do("note " + id)
}

func TestRevert(t *testing.T) {
	is := is.New(t)
	base := []beads.Issue{issue("a-1", 1, dep("a-2")), issue("a-2", 2, dep("a-3")), issue("a-3", 3)}
	before := NewSnapshot(base)
	after := NewSnapshot(base)
	a := after["a-1"]
	a.Priority = 0
	after["a-1"] = a
	delete(after, "a-3")
	b := after["a-2"]
	b.Dependencies = nil // bd delete --force removes edges pointing at the deleted issue
	after["a-2"] = b

	m := &memTracker{}
	rs := Revert(context.Background(), m, before, Diff(before, after, Options{}))
	is.Equal(len(rs), 3)
	for _, r := range rs {
		is.NoErr(r.Err)
		is.True(r.Reverted)
	}
	is.Equal(m.calls, []string{
		"create a-3 p3 task", "note a-3", // the deleted issue comes back first...
		"update a-1 priority 1", "note a-1",
		"dep add a-2 a-3 blocks", "note a-2", // ...so the edge to it can be re-added
	})
}

// A label only ralphd adds (its stuck label, from the guard's table, and
// any the options add) is a violation when BUILD adds it, and only then;
// its revert removes it.
func TestReservedLabelAdded(t *testing.T) {
	opts := Options{ReservedLabels: []string{"ralph:extra"}}
	labelled := func(ls ...string) func(*beads.Issue) { return func(i *beads.Issue) { i.Labels = ls } }
	tests := []struct {
		name          string
		before, after beads.Issue
		opts          Options
		want          []Kind
	}{
		{"added", issue("a-1", 1), issue("a-1", 1, labelled("ralph:stuck")), opts, []Kind{ReservedLabelAdded}},
		{"added beside others", issue("a-1", 1, labelled("x")), issue("a-1", 1, labelled("x", "y", "ralph:stuck")), opts, []Kind{ReservedLabelAdded}},
		{"there before", issue("a-1", 1, labelled("ralph:stuck")), issue("a-1", 1, labelled("ralph:stuck", "y")), opts, nil},
		{"another label", issue("a-1", 1), issue("a-1", 1, labelled("ralph:stuck2", "RALPH:STUCK")), opts, nil},
		{"reserved by the guard without options", issue("a-1", 1), issue("a-1", 1, labelled("ralph:stuck")), Options{}, []Kind{ReservedLabelAdded}},
		{"the fleet's added", issue("a-1", 1), issue("a-1", 1, labelled("x", "ralph:fleet")), Options{}, []Kind{ReservedLabelAdded}},
		{"the fleet's removed", issue("a-1", 1, labelled("ralph:fleet")), issue("a-1", 1), Options{}, []Kind{LabelRemoved}},
		{"reserved by the options", issue("a-1", 1), issue("a-1", 1, labelled("ralph:extra")), opts, []Kind{ReservedLabelAdded}},
		{"the options' label without them", issue("a-1", 1), issue("a-1", 1, labelled("ralph:extra")), Options{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before, after := NewSnapshot([]beads.Issue{tt.before}), NewSnapshot([]beads.Issue{tt.after})
			vs := Diff(before, after, tt.opts)
			var got []Kind
			for _, v := range vs {
				got = append(got, v.Kind)
			}
			is.Equal(got, tt.want)
			if len(vs) == 0 {
				return
			}
			l := vs[0].Label
			if vs[0].Kind == LabelRemoved { // any label's removal, judged as ever
				is.Equal(l, FleetLabel)
				return
			}
			is.Equal(vs[0].String(), `label "`+l+`", which only ralphd adds, was added to a-1`)
			if l == StuckLabel || l == FleetLabel {
				is.Equal(vs[0].Rule, RuleReservedLabel) // the rule that refuses it through the guard
			}
			m := &memTracker{}
			rs := Revert(context.Background(), m, before, vs)
			is.True(rs[0].Reverted)
			is.Equal(m.calls, []string{"label remove a-1 " + l, "note a-1"})
		})
	}
}

func TestRevertFailureIsReportedAndNoted(t *testing.T) {
	is := is.New(t)
	base := []beads.Issue{issue("a-1", 1)}
	after := NewSnapshot(base)
	a := after["a-1"]
	a.Priority = 4
	after["a-1"] = a
	m := &memTracker{fail: "update"}
	rs := Revert(context.Background(), m, NewSnapshot(base), Diff(NewSnapshot(base), after, Options{}))
	is.Equal(len(rs), 1)
	is.True(!rs[0].Reverted)
	is.True(rs[0].Err != nil)
	is.Equal(m.calls[len(m.calls)-1], "note a-1") // a failed revert still leaves a note for PLANNING
}

// TestEveryProtectedFieldIsChecked ties the diff to the guard's table: a
// field a rule protects that Diff does not check would be a change BUILD
// can make around the guard unseen.
func TestEveryProtectedFieldIsChecked(t *testing.T) {
	is := is.New(t)
	ps := Protected()
	is.True(len(ps) >= 14)
	for _, p := range ps {
		is.True(Checked(p.Field)) // a protected field without a check
	}
	for _, f := range structured {
		is.True(protection[f].rule != "") // a check no row asks for
	}
}

func TestRevertDeletedRestoresComments(t *testing.T) {
	is := is.New(t)
	b := issue("a-1", 1, func(i *beads.Issue) {
		i.Status, i.Parent = beads.StatusBlocked, "a-0"
		i.Dependencies = []beads.Dependency{{IssueID: "a-1", DependsOnID: "a-0", Type: beads.DepParentChild}}
		i.Comments = []beads.Comment{{Author: "ann", Text: "keep me"}}
	})
	before := NewSnapshot([]beads.Issue{b})
	m := &memTracker{}
	rs := Revert(context.Background(), m, before, Diff(before, Snapshot{}, Options{}))
	is.Equal(len(rs), 1)
	is.NoErr(rs[0].Err)
	is.Equal(m.calls, []string{"create a-1 p1 task", "update a-1 parent a-0", "comment a-1 keep me", "status a-1 blocked", "note a-1"})
}

// Checked reports whether Diff has a check for the protected field: from
// its row alone, or by hand.
func Checked(field string) bool {
	return protection[field].scalar() || slices.Contains(structured, field)
}

// TestExplained checks which forbidden changes a write of ralphd's
// accounts for: only the same field, label or edge set to the value
// found, on the same issue; never a deletion or a removed comment.
func TestExplained(t *testing.T) {
	w := func(actor string, args ...string) []beads.Effect {
		return (&beads.Write{Args: args, Actor: actor}).Effects()
	}
	for _, tc := range []struct {
		name    string
		v       Violation
		effects []beads.Effect
		want    bool
	}{
		{"title set to it", Violation{Kind: Title, IssueID: "x", After: "T"}, w("", "update", "x", "--title", "T"), true},
		{"title set to another", Violation{Kind: Title, IssueID: "x", After: "T"}, w("", "update", "x", "--title", "U"), false},
		{"title on another issue", Violation{Kind: Title, IssueID: "x", After: "T"}, w("", "update", "y", "--title", "T"), false},
		{"priority by a note", Violation{Kind: Priority, IssueID: "x", After: "0"}, w("", "update", "x", "--append-notes", "0"), false},
		{"priority set", Violation{Kind: Priority, IssueID: "x", After: "0"}, w("", "update", "x", "--priority", "0"), true},
		{"spec id set", Violation{Kind: "spec_id_changed", IssueID: "x", After: "S"}, w("", "update", "x", "--spec-id", "S"), true},
		{"stuck label added", Violation{Kind: ReservedLabelAdded, IssueID: "x", Label: StuckLabel}, w("", "label", "add", "x", StuckLabel), true},
		{"stuck label by another label", Violation{Kind: ReservedLabelAdded, IssueID: "x", Label: StuckLabel}, w("", "label", "add", "x", "later"), false},
		{"stuck label by a note", Violation{Kind: ReservedLabelAdded, IssueID: "x", Label: StuckLabel}, w("", "update", "x", "--append-notes", StuckLabel), false},
		{"label removed", Violation{Kind: LabelRemoved, IssueID: "x", Label: "a"}, w("", "label", "remove", "x", "a"), true},
		{"label removed, another", Violation{Kind: LabelRemoved, IssueID: "x", Label: "a"}, w("", "label", "remove", "x", "b"), false},
		{"status by a close", Violation{Kind: OtherStatus, IssueID: "x", After: beads.StatusClosed}, w("", "close", "x", "--reason", "r"), true},
		{"status by a claim", Violation{Kind: OtherStatus, IssueID: "x", After: beads.StatusInProgress}, w("a", "update", "x", "--claim"), true},
		{"blocked by a claim", Violation{Kind: OtherStatus, IssueID: "x", After: beads.StatusBlocked}, w("a", "update", "x", "--claim"), false},
		{"assignee by a claim", Violation{Kind: OtherAssignee, IssueID: "x", After: "a"}, w("a", "update", "x", "--claim"), true},
		{"another assignee than the claim's", Violation{Kind: OtherAssignee, IssueID: "x", After: "mallory"}, w("a", "update", "x", "--claim"), false},
		{"assignee by a claim without an actor", Violation{Kind: OtherAssignee, IssueID: "x", After: "bob"}, w("", "update", "x", "--claim"), true},
		{"dependency removed", Violation{Kind: DepRemoved, IssueID: "x", Dep: beads.Dependency{IssueID: "x", DependsOnID: "y"}}, w("", "dep", "remove", "x", "y"), true},
		{"dependency removed, the other way", Violation{Kind: DepRemoved, IssueID: "x", Dep: beads.Dependency{IssueID: "x", DependsOnID: "y"}}, w("", "dep", "remove", "y", "x"), false},
		{"deleted", Violation{Kind: Deleted, IssueID: "x"}, w("", "update", "x", "--title", ""), false},
		{"comment removed", Violation{Kind: CommentRemoved, IssueID: "x"}, w("", "comments", "add", "x", "c"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Explained(tc.v, tc.effects); got != tc.want {
				t.Errorf("Explained(%v, %+v) = %v, want %v", tc.v, tc.effects, got, tc.want)
			}
		})
	}
}

package guard

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ralphd/ralphd/internal/beads"
)

// powersFor is the guard's powers for an iteration on t-a (P2), with t-b
// open, t-c closed and t-m made by BUILD earlier in the run.
func powersFor(maxCreates int) *Powers {
	before := NewSnapshot([]beads.Issue{issue("t-a", 2), issue("t-b", 1), issue("t-m", 3),
		issue("t-c", 2, func(i *beads.Issue) { i.Status = beads.StatusClosed })})
	return &Powers{Own: "t-a", OwnPriority: 2, Before: before, MaxCreates: maxCreates,
		Made: func(id string) bool { return id == "t-m" }}
}

func TestPowersJudge(t *testing.T) {
	tests := []struct {
		argv string
		rule string // "" when allowed
	}{
		// The iteration's own issue, and issues BUILD made.
		{"update t-a --status blocked", ""},
		{"update t-a --claim", ""},
		{"assign t-a me", ""},
		{"close t-a --reason ok", ""},
		{"update t-m --status in_progress --assignee me", ""},
		{"close t-m --reason ok", ""},
		{"update t-new --status blocked", ""}, // created in the window: not in Before
		// Anything but status, assignee and claim on another issue.
		{"update t-b --append-notes looks-blocked", ""},
		{"update t-b --description better", ""},
		{"show t-b", ""},
		{"dep add t-b t-a", ""},
		{"reopen t-c", ""},
		// Status, assignee, claim and close of another issue.
		{"update t-b --status blocked", RuleOtherIssue},
		{"update t-b -s in_progress", RuleOtherIssue},
		{"update t-b --assignee ghost", RuleOtherIssue},
		{"update t-b -a ''", RuleOtherIssue},
		{"update t-b --claim", RuleOtherIssue},
		{"update t-a t-b --status blocked", RuleOtherIssue},
		{"update b --status blocked", RuleOtherIssue}, // bd resolves a partial id
		{"update --status blocked", RuleOtherIssue},   // the last issue touched
		{"update t-c --status open", RuleOtherIssue},
		{"assign t-b ghost", RuleOtherIssue},
		{"close t-b --reason ok", RuleOtherIssue},
		{"close t-a t-b --reason ok", RuleOtherIssue},
		{"close --reason ok", RuleOtherIssue},
		{"close t-a --reason ok --claim-next", RuleOtherIssue},
		{"ready --claim", RuleOtherIssue},
		{"reopen t-b", RuleOtherIssue}, // open: reopen would release a claim
		// Creation: not above t-a's P2.
		{"create x", ""},
		{"create x -p 2", ""},
		{"create x -p P4", ""},
		{"q x --priority=3", ""},
		{"create x -p 1", RuleCreatePriority},
		{"create x -p P0", RuleCreatePriority},
		{"q x -p0", RuleCreatePriority},
		{"create x -p 9", ""}, // bd refuses it itself
	}
	for _, tt := range tests {
		t.Run(tt.argv, func(t *testing.T) {
			is := is.New(t)
			argv := strings.Fields(strings.ReplaceAll(tt.argv, "''", "\x00"))
			for i := range argv {
				argv[i] = strings.ReplaceAll(argv[i], "\x00", "")
			}
			d := Decide(ModeBuild, argv)
			is.True(d.Allowed) // the policy table alone allows each of these
			d = powersFor(0).judge(d)
			is.Equal(d.Allowed, tt.rule == "") // allowed
			if tt.rule != "" {
				is.Equal(d.Rule, tt.rule)
				is.True(d.Instead != "") // a refusal says what to do instead
			}
		})
	}
}

// The cap counts allowed creates across calls; refused ones do not
// count, nor do calls in PLAN mode, and nil Powers limit nothing.
func TestPowersCreateCap(t *testing.T) {
	is := is.New(t)
	p := powersFor(2)
	create := Decide(ModeBuild, []string{"create", "x"})
	above := Decide(ModeBuild, []string{"create", "x", "-p", "0"})
	is.True(!p.judge(above).Allowed) // above t-a
	is.True(p.judge(create).Allowed)
	is.True(p.judge(create).Allowed)
	d := p.judge(create)
	is.True(!d.Allowed)
	is.Equal(d.Rule, RuleCreateCap)
	is.True(strings.Contains(d.Reason, "created 2 issues")) // says how many
	is.True(strings.Contains(d.Instead, "t-a"))             // the advice names the iteration's issue
	is.Equal(p.Creates(), 2)
	is.True(p.judge(Decide(ModePlan, []string{"create", "x"})).Allowed) // PLANNING has no cap
	is.True((*Powers)(nil).judge(create).Allowed)
	is.True(powersFor(0).judge(create).Allowed) // 0: no cap
}

func TestDiffOtherIssues(t *testing.T) {
	base := []beads.Issue{issue("t-a", 2), issue("t-b", 2), issue("t-m", 3),
		issue("t-c", 2, func(i *beads.Issue) { i.Status, i.CloseReason = beads.StatusClosed, "go test ok" })}
	opts := Options{Own: "t-a", Made: func(id string) bool { return id == "t-m" }, CitesEvidence: evidence}
	set := func(id string, f func(*beads.Issue)) func(Snapshot) {
		return func(s Snapshot) { i := s[id]; f(&i); s[id] = i }
	}
	tests := []struct {
		name  string
		after func(Snapshot)
		opts  Options
		want  []Kind
	}{
		{"own status and assignee", set("t-a", func(i *beads.Issue) { i.Status, i.Assignee = beads.StatusBlocked, "me" }), opts, nil},
		{"made issue's status", set("t-m", func(i *beads.Issue) { i.Status = beads.StatusInProgress }), opts, nil},
		{"other set blocked", set("t-b", func(i *beads.Issue) { i.Status = beads.StatusBlocked }), opts, []Kind{OtherStatus}},
		{"other claimed", set("t-b", func(i *beads.Issue) { i.Status, i.Assignee = beads.StatusInProgress, "ghost" }), opts,
			[]Kind{OtherStatus, OtherAssignee}},
		{"other closed with evidence", set("t-b", func(i *beads.Issue) { i.Status, i.CloseReason = beads.StatusClosed, "go test ok" }), opts,
			[]Kind{OtherStatus}},
		{"other deferred", set("t-b", func(i *beads.Issue) { i.Status = "deferred" }), opts, []Kind{OtherStatus}},
		{"other reopened", set("t-c", func(i *beads.Issue) { i.Status = beads.StatusOpen }), opts, nil},
		{"closed other set in progress", set("t-c", func(i *beads.Issue) { i.Status = beads.StatusInProgress }), opts, []Kind{OtherStatus}},
		{"rule off without Own", set("t-b", func(i *beads.Issue) { i.Status = beads.StatusBlocked }), Options{}, nil},
		{"created at own priority", func(s Snapshot) { s["t-n"] = issue("t-n", 2) }, opts, nil},
		{"created above", func(s Snapshot) { s["t-n"] = issue("t-n", 1) }, opts, []Kind{CreatedAbove}},
		{"created with a reserved label", func(s Snapshot) {
			s["t-n"] = issue("t-n", 3, func(i *beads.Issue) { i.Labels = []string{StuckLabel} })
		}, opts, []Kind{ReservedLabelAdded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := NewSnapshot(base)
			after := NewSnapshot(base)
			tt.after(after)
			var got []Kind
			for _, v := range Diff(before, after, tt.opts) {
				got = append(got, v.Kind)
			}
			is.Equal(got, tt.want)
		})
	}
}

// Revert puts another issue's status and assignee back, closing or
// reopening as needed, and a too-high priority down to the floor.
func TestRevertOtherIssues(t *testing.T) {
	is := is.New(t)
	before := NewSnapshot([]beads.Issue{issue("t-a", 2), issue("t-b", 2),
		issue("t-c", 2, func(i *beads.Issue) { i.Status, i.CloseReason = beads.StatusClosed, "done: go test ok" })})
	vs := []Violation{
		{Kind: OtherStatus, IssueID: "t-b", Before: beads.StatusOpen, After: beads.StatusClosed},
		{Kind: OtherStatus, IssueID: "t-c", Before: beads.StatusClosed, After: beads.StatusBlocked},
		{Kind: OtherAssignee, IssueID: "t-b", Before: "", After: "ghost"},
		{Kind: CreatedAbove, IssueID: "t-n", Before: "2", After: "0"},
	}
	m := &memTracker{}
	for _, r := range Revert(context.Background(), m, before, vs) {
		is.NoErr(r.Err)
	}
	is.Equal(m.calls, []string{
		"reopen t-b", "note t-b", // closed open issue: reopened, and open is its status
		"close t-c", "note t-c", // a closed issue set blocked is closed again
		"update t-b assignee ", "note t-b",
		"update t-n priority 2", "note t-n",
	})
}

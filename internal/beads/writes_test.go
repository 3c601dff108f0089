package beads

import (
	"slices"
	"strings"
	"testing"
)

// TestWriteTargets checks the issues each of ralphd's own writes names,
// built with the argv builders ralphd runs, and that reads name none.
func TestWriteTargets(t *testing.T) {
	p := 1
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"status", statusArgs("rt-1", StatusOpen), []string{"rt-1"}},
		{"claim", claimArgs("rt-1"), []string{"rt-1"}},
		{"release", releaseArgs("rt-1"), []string{"rt-1"}},
		{"append notes", appendNotesArgs("rt-1", "x"), []string{"rt-1"}},
		{"set notes", setNotesArgs("rt-1", "x"), []string{"rt-1"}},
		{"update fields", updateArgs("rt-1", Set{Flag: "priority", Value: "1"}), []string{"rt-1"}},
		{"close", closeArgs("rt-1", "done"), []string{"rt-1"}},
		{"reopen", reopenArgs("rt-1", ""), []string{"rt-1"}},
		{"label add", labelArgs("add", "rt-1", "ralph:stuck"), []string{"rt-1"}},
		{"label remove", labelArgs("remove", "rt-1", "x"), []string{"rt-1"}},
		{"comment add", commentAddArgs("rt-1", "hi"), []string{"rt-1"}},
		{"dep add", depAddArgs("rt-1", "rt-2", "blocks"), []string{"rt-1", "rt-2"}},
		{"dep remove", depRemoveArgs("rt-1", "rt-2"), []string{"rt-1", "rt-2"}},
		{"create with id", createArgs(CreateOptions{ID: "rt-9", Title: "t", Priority: &p}), []string{"rt-9"}},
		{"create without id", createArgs(CreateOptions{Title: "t"}), nil},
		{"ready claim", readyClaimArgs(ClaimFilter{}), nil},
		{"list", listArgs(ListOptions{All: true, IDs: []string{"rt-1"}}), nil},
		{"show", []string{"show", "rt-1"}, nil},
		{"comments list", commentsArgs("rt-1"), nil},
		{"label list", []string{"label", "list", "rt-1"}, nil},
		{"update of a flag", []string{"update", "--status"}, nil},
		{"empty", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := WriteTargets(c.args); !slices.Equal(got, c.want) {
				t.Errorf("WriteTargets(%q) = %q, want %q", c.args, got, c.want)
			}
		})
	}
}

// TestWriteEffects checks what each of ralphd's writes says it changes,
// built with the argv builders ralphd runs: every field with its value,
// each label, both ends of an edge; and nothing for a read.
func TestWriteEffects(t *testing.T) {
	p := 1
	e := func(id, op, v string) Effect { return Effect{Issue: id, Op: op, Value: v} }
	cases := []struct {
		name  string
		args  []string
		actor string
		want  []Effect
	}{
		{"status", statusArgs("rt-1", StatusBlocked), "", []Effect{e("rt-1", "status", StatusBlocked)}},
		{"claim with an actor", claimArgs("rt-1"), "w1", []Effect{e("rt-1", "status", StatusInProgress), e("rt-1", "assignee", "w1")}},
		{"claim without", claimArgs("rt-1"), "", []Effect{e("rt-1", "status", StatusInProgress), {Issue: "rt-1", Op: "assignee", AnyValue: true}}},
		{"release", releaseArgs("rt-1"), "w1", []Effect{e("rt-1", "status", StatusOpen), e("rt-1", "assignee", "")}},
		{"append notes", appendNotesArgs("rt-1", "--x"), "", []Effect{e("rt-1", "append-notes", "--x")}},
		{"set notes", setNotesArgs("rt-1", "x"), "", []Effect{e("rt-1", "notes", "x")}},
		{"clear notes", []string{"update", "rt-1", "--clear-notes"}, "", []Effect{e("rt-1", "notes", "")}},
		{"update fields", updateArgs("rt-1", Set{Flag: "priority", Value: "1"}, Set{Flag: "title", Value: ""}), "",
			[]Effect{e("rt-1", "priority", "1"), e("rt-1", "title", "")}},
		{"inline value", []string{"update", "rt-1", "--title=T"}, "", []Effect{e("rt-1", "title", "T")}},
		{"flag without its value", []string{"update", "rt-1", "--title"}, "", nil},
		{"close", closeArgs("rt-1", "ran `make`"), "", []Effect{e("rt-1", "status", StatusClosed), e("rt-1", "close-reason", "ran `make`")}},
		{"reopen", reopenArgs("rt-1", "why"), "", []Effect{e("rt-1", "status", StatusOpen)}},
		{"label add", labelArgs("add", "rt-1", "ralph:stuck"), "", []Effect{e("rt-1", OpLabelAdd, "ralph:stuck")}},
		{"label remove", labelArgs("remove", "rt-1", "x"), "", []Effect{e("rt-1", OpLabelRemove, "x")}},
		{"comment add", commentAddArgs("rt-1", "hi"), "", []Effect{e("rt-1", OpComment, "hi")}},
		{"dep add", depAddArgs("rt-1", "rt-2", "blocks"), "", []Effect{e("rt-1", OpDepAdd, "rt-2"), e("rt-2", OpDependentAdd, "rt-1")}},
		{"dep remove", depRemoveArgs("rt-1", "rt-2"), "", []Effect{e("rt-1", OpDepRemove, "rt-2"), e("rt-2", OpDependentRem, "rt-1")}},
		{"create with id", createArgs(CreateOptions{ID: "rt-9", Title: "t", Priority: &p, Labels: []string{"a", "ralph:stuck"}}), "",
			[]Effect{e("rt-9", OpCreate, ""), e("rt-9", OpLabelAdd, "a"), e("rt-9", OpLabelAdd, "ralph:stuck")}},
		{"create without id", createArgs(CreateOptions{Title: "t"}), "", nil},
		{"ready claim", readyClaimArgs(ClaimFilter{ExcludeLabels: []string{"x"}}), "w1", []Effect{{Op: "status", Value: StatusInProgress}, {Op: "assignee", Value: "w1"}}},
		{"ready", []string{"ready"}, "w1", nil},
		{"list", listArgs(ListOptions{All: true, IDs: []string{"rt-1"}}), "", nil},
		{"empty", nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := (&Write{Args: c.args, Actor: c.actor}).Effects()
			if !slices.Equal(got, c.want) {
				t.Errorf("Effects(%q) = %+v, want %+v", c.args, got, c.want)
			}
		})
	}
}

// FuzzWriteEffects: any argv parses without a panic, and every effect is
// on an issue the argv names, or on any issue for `bd ready --claim`.
func FuzzWriteEffects(f *testing.F) {
	f.Add("update\x00rt-1\x00--claim\x00--title=x")
	f.Add("close\x00rt-1\x00--reason")
	f.Add("dep\x00remove\x00a\x00b")
	f.Add("create\x00t\x00--id\x00x\x00--labels\x00a,,b")
	f.Add("label\x00add\x00x")
	f.Fuzz(func(t *testing.T, argv string) {
		args := strings.Split(argv, "\x00")
		targets := WriteTargets(args)
		w := &Write{Args: args}
		for _, e := range w.Effects() {
			if !slices.Contains(targets, e.Issue) && (e.Issue != "" || !w.AnyClaim()) {
				t.Fatalf("Effects(%q) has an effect on %q, which the argv does not name (%q)", args, e.Issue, targets)
			}
		}
	})
}

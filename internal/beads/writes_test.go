package beads

import (
	"slices"
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
		{"ready claim", readyClaimArgs(), nil},
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

package prompts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/ralphd/ralphd/internal/beads"
)

func TestBuiltinBuild(t *testing.T) {
	is := is.New(t)
	s, err := Load("")
	is.NoErr(err)
	is.Equal(s.BuildSource, "built-in")
	out, err := s.Build(BuildData{
		Issue:       beads.Issue{ID: "rt-abc", Title: "Parse config", AcceptanceCriteria: "| ok | `go test ./...` | 0 |", Priority: 1, IssueType: "task"},
		Attempt:     2,
		MaxAttempts: 3,
		Escalation:  "The previous approach failed the same way 2 times.",
	})
	is.NoErr(err)
	for _, want := range []string{
		"**ID:** rt-abc", "Attempt:** 2 of 3", "`go test ./...`",
		"bd close rt-abc --reason", "Strategy shift required", "may **not** remove",
	} {
		is.True(strings.Contains(out, want)) // rendered prompt carries the issue and the rules
	}
	is.True(!strings.Contains(out, "Previous attempts")) // empty sections are left out
}

func TestBuiltinPlan(t *testing.T) {
	is := is.New(t)
	s, err := Load("")
	is.NoErr(err)
	out, err := s.Plan(PlanData{Scope: "rt-epic", Stuck: []string{"rt-1", "rt-2"}})
	is.NoErr(err)
	is.True(strings.Contains(out, "<promise>PLAN_COMPLETE</promise>"))
	is.True(strings.Contains(out, "Currently stuck: rt-1, rt-2."))
	is.True(strings.Contains(out, "--parent=rt-epic"))
}

func TestOverride(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(dir, BuildFile), []byte("custom {{.Issue.ID}}"), 0o600))
	s, err := Load(dir)
	is.NoErr(err)
	is.Equal(s.BuildSource, filepath.Join(dir, BuildFile))
	is.Equal(s.PlanSource, "built-in") // only the file present is overridden
	out, err := s.Build(BuildData{Issue: beads.Issue{ID: "x-1"}})
	is.NoErr(err)
	is.Equal(out, "custom x-1")
}

func TestTemplateErrorsNameTheFile(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	p := filepath.Join(dir, BuildFile)
	is.NoErr(os.WriteFile(p, []byte("{{.Nope}}"), 0o600))
	s, err := Load(dir)
	is.NoErr(err)
	_, err = s.Build(BuildData{})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), p)) // a typo'd field is an error naming the file, not "<no value>"

	is.NoErr(os.WriteFile(p, []byte("{{.Issue.ID"), 0o600))
	_, err = Load(dir)
	is.True(err != nil && strings.Contains(err.Error(), p))
}

package state

import (
	"os"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

func TestBaselineRoundTrip(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	got, err := s.ReadBaseline()
	is.NoErr(err)
	is.True(got == nil) // none yet

	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	b := Baseline{RunID: "r1", Iteration: 3, IssueID: "t-a", TakenAt: at, Issues: []beads.Issue{{
		ID: "t-a", Title: "W", Priority: 1, Labels: []string{"x"}, DeferUntil: at,
		Dependencies: []beads.Dependency{{IssueID: "t-a", DependsOnID: "t-b", Type: beads.DepBlocks}},
		Comments:     []beads.Comment{{ID: "c1", Author: "ann", Text: "hi", CreatedAt: at}},
		Extra:        map[string]string{"spec_id": "SPEC-1"},
	}}}
	is.NoErr(s.WriteBaseline(b))
	got, err = s.ReadBaseline()
	is.NoErr(err)
	want := b
	want.ExtraFields = true // a baseline written now says it holds the issues' other fields
	is.Equal(*got, want)

	is.NoErr(s.ClearBaseline())
	is.NoErr(s.ClearBaseline()) // clearing twice is fine
	got, err = s.ReadBaseline()
	is.NoErr(err)
	is.True(got == nil)
}

func TestBaselineCorruptIsAnError(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	for _, bad := range []string{"{half", "null", "[]", "", "  \n"} {
		is.NoErr(os.WriteFile(s.BaselinePath(), []byte(bad), 0o600))
		_, err := s.ReadBaseline()
		is.True(err != nil) // never read as "no baseline" nor as an empty tracker
	}
}

// A baseline an older ralphd wrote (before issues kept their other
// fields) reads as such, so the judgement does not take those fields for
// emptied.
func TestBaselineFromBeforeExtraFields(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	old := `{"run_id":"r1","iteration":2,"issue_id":"t-a","taken_at":"2026-11-23T12:00:00Z","issues":[{"ID":"t-a","Title":"W"}]}` + "\n"
	is.NoErr(os.WriteFile(s.BaselinePath(), []byte(old), 0o600))
	got, err := s.ReadBaseline()
	is.NoErr(err)
	is.True(!got.ExtraFields) // written before the marker existed
	is.Equal(got.Issues[0].Extra, map[string]string(nil))
}

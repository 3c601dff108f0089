package modes

import (
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// After an upgrade, an interrupted iteration's baseline from the older
// ralphd has no Extra fields: judged as it is, a protected one (spec_id)
// would read as emptied by the agent and be "reverted" to nothing.
func TestKeepExtraOfALegacyBaseline(t *testing.T) {
	is := is.New(t)
	before := guard.NewSnapshot([]beads.Issue{{ID: "t-a", Title: "W"}, {ID: "t-gone", Title: "G"}})
	after := guard.NewSnapshot([]beads.Issue{{ID: "t-a", Title: "W", Extra: map[string]string{"spec_id": "SPEC-1"}}})
	is.True(len(guard.Diff(before, after, guard.Options{})) > 0) // as read, the old baseline charges a spec_id change

	keepExtraOf(before, after)
	is.Equal(before["t-a"].Extra["spec_id"], "SPEC-1") // the field as it is now
	is.Equal(len(before), 2)                           // no issue added or dropped
	for _, v := range guard.Diff(before, after, guard.Options{}) {
		is.True(v.IssueID != "t-a") // nothing left to "revert" on t-a
	}
}

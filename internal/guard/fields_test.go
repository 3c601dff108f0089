package guard

import (
	"context"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// TestProtectedFieldRows checks each row of the table on its own: the
// guard refuses its flags in BUILD under its rule and PLAN may use them,
// and a change to it is reverted with its first flag. The stand-in bd
// walks the same rows around the guard (TestProtectedFieldsAroundTheGuard).
func TestProtectedFieldRows(t *testing.T) {
	is := is.New(t)
	names := map[string]bool{}
	kinds := map[Kind]string{}
	for _, f := range protectedFields {
		is.True(!names[f.name]) // one row per field
		names[f.name] = true
		is.True(ruleByID(f.rule).Reason != "unknown rule") // the row names a rule of the policy
		if !f.scalar() {
			is.True(slices.Contains(structured, f.name)) // a row without flags is checked by hand in Diff
			continue
		}
		is.True(f.sample != "") // the tests need a value to set around the guard
		k := f.violation()
		is.True(kinds[k] == "") // one violation kind per field, so Revert finds the row
		kinds[k] = f.name
		for _, flag := range f.updateFlags() {
			t.Run(f.name+"/"+flag, func(t *testing.T) {
				is := is.New(t)
				argv := []string{"update", "t-1", "--" + flag, f.sample}
				d := Decide(ModeBuild, argv)
				is.True(!d.Allowed)                     // BUILD may not set a protected field
				is.Equal(d.Rule, f.rule)                // refused by the row's rule, not as an unknown flag
				is.True(Decide(ModePlan, argv).Allowed) // PLANNING may
			})
		}
		t.Run(f.name+"/revert", func(t *testing.T) {
			is := is.New(t)
			b := issue("t-1", 2)
			before := NewSnapshot([]beads.Issue{b})
			vs := []Violation{{Kind: f.violation(), IssueID: "t-1", Rule: f.rule}}
			m := &memTracker{}
			rs := Revert(context.Background(), m, before, vs)
			is.NoErr(rs[0].Err)
			is.Equal(m.calls, []string{"update t-1 " + f.revertFlag() + " " + f.value(b), "note t-1"}) // the value before, with the row's flag
		})
	}
}

// TestRefusalsNameNoProtectedFlag keeps the update policy's own refusals
// apart from the table's: a flag that sets a protected field is refused by
// its row, under the row's rule, and listed only there.
func TestRefusalsNameNoProtectedFlag(t *testing.T) {
	is := is.New(t)
	p, ok := policyFor("update")
	is.True(ok)
	update := lookup("update")
	for _, f := range protectedFields {
		for _, flag := range f.updateFlags() {
			_, twice := updateRefusals[flag]
			is.True(!twice)                         // refused by the row alone: drop it from updateRefusals
			is.Equal(p.refuse[flag], f.rule)        // the row's refusal
			is.True(!p.allows(flag))                // even if the allowlist names it
			is.Equal(update.flags[flag].long, flag) // a flag bd's update has
		}
	}
}

// TestProtectedFieldInExtra reads a field Issue has no Go field for by its
// JSON name: a row without a reader compares and reverts Extra's text.
func TestProtectedFieldInExtra(t *testing.T) {
	is := is.New(t)
	f := protectedField{name: "spec_id", rule: RuleUpdateField, flags: "spec-id", sample: "S-2"}
	b := issue("t-1", 2, func(i *beads.Issue) { i.Extra = map[string]string{"spec_id": "S-1"} })
	a := issue("t-1", 2, func(i *beads.Issue) { i.Extra = map[string]string{"spec_id": "S-2"} })
	is.Equal(f.value(b), "S-1")
	is.Equal(f.value(issue("t-1", 2)), "") // absent reads as empty
	is.Equal(f.violation(), Kind("spec_id_changed"))
	is.True(f.value(a) != f.value(b))
}

// Protected returns every protected field with the rule that protects it,
// in the table's order.
func Protected() []Protection {
	ps := make([]Protection, 0, len(protectedFields))
	for _, f := range protectedFields {
		ps = append(ps, Protection{Field: f.name, Rule: ruleByID(f.rule)})
	}
	return ps
}

// Protection is one field and the rule that protects it.
type Protection struct {
	Field string
	Rule  Rule
}

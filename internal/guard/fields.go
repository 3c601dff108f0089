package guard

import (
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// This file is the one table of the tracker fields BUILD may not change.
//
// To protect one more single-valued field, add a row with its bd JSON
// name, the rule that protects it, the `bd update` flags that set it and
// a sample value. Everything else follows from the row: the guard refuses
// the flags in BUILD (the update policy's refusals), `ralphd policy` lists
// them, the tamper diff compares the field, Revert puts the value back
// with `bd update <id> --<flag> <value>`, re-creating a deleted issue
// restores it, and the tests walk the row (fields_test.go, through the
// guard and around it with the stand-in bd). A field Issue has no Go field
// for is read from beads.Issue.Extra by its JSON name, so it needs no
// reader. If another bd command than `bd update` sets the field, refuse
// that command too (policy.go).

// Tracker fields and edges the table protects, by bd's JSON names.
// FieldIssue is the issue's existence; FieldStatus protects the statuses
// BUILD may not set (see BuildStatuses); FieldComments the comments
// already on an issue.
const (
	FieldIssue        = "issue"
	FieldTitle        = "title"
	FieldPriority     = "priority"
	FieldType         = "issue_type"
	FieldAcceptance   = "acceptance_criteria"
	FieldStatus       = "status"
	FieldParent       = "parent"
	FieldDeferUntil   = "defer_until"
	FieldDueAt        = "due_at"
	FieldExternalRef  = "external_ref"
	FieldEstimate     = "estimated_minutes"
	FieldLabels       = "labels"
	FieldDependencies = "dependencies"
	FieldComments     = "comments"
	// FieldReservedLabels protects the labels only ralphd adds
	// (ReservedLabels): BUILD may add other labels, not these.
	FieldReservedLabels = "reserved_labels"
)

// protectedField is one row of the table.
type protectedField struct {
	name string // bd's JSON name
	rule string // the rule that refuses changing it in BUILD
	// flags are the `bd update` flags (long names) that set the field,
	// space-separated; BUILD may use none of them, and Revert runs the
	// first. The fields without flags have more structure (the issue
	// itself, status, labels, edges, comments): Diff and Revert check
	// those by hand.
	flags string
	// read returns the value as text, in the form the first flag takes
	// it. Nil reads beads.Issue.Extra[name].
	read func(beads.Issue) string
	// kind names the violation; "" is name + "_changed".
	kind Kind
	// sample is a value the first flag takes that differs from a new
	// issue's; the tests set it around the guard. "P" stands for another
	// issue's id.
	sample string
}

// protectedFields is the table, in the order of the rules.
var protectedFields = []protectedField{
	{name: FieldIssue, rule: RuleDelete},
	{name: FieldComments, rule: RuleDelete},
	{name: FieldDependencies, rule: RuleDepRemove},
	{name: FieldPriority, rule: RulePriority, flags: "priority", kind: Priority, sample: "0",
		read: func(i beads.Issue) string { return strconv.Itoa(i.Priority) }},
	{name: FieldType, rule: RuleType, flags: "type", kind: Type, sample: "chore",
		read: func(i beads.Issue) string { return i.IssueType }},
	{name: FieldAcceptance, rule: RuleAcceptance, flags: "acceptance", kind: Acceptance, sample: "nothing",
		read: func(i beads.Issue) string { return i.AcceptanceCriteria }},
	{name: FieldTitle, rule: RuleTitle, flags: "title", kind: Title, sample: "an easier issue",
		read: func(i beads.Issue) string { return i.Title }},
	{name: FieldStatus, rule: RuleStatus},
	{name: FieldLabels, rule: RuleLabelRemove},
	{name: FieldReservedLabels, rule: RuleReservedLabel},
	{name: FieldParent, rule: RuleParent, flags: "parent", kind: Parent, sample: "P",
		read: func(i beads.Issue) string { return i.Parent }},
	{name: FieldDeferUntil, rule: RuleSchedule, flags: "defer", kind: DeferUntil, sample: "2031-01-01T00:00:00Z",
		read: func(i beads.Issue) string { return timeText(i.DeferUntil) }},
	{name: FieldDueAt, rule: RuleSchedule, flags: "due", kind: DueAt, sample: "2031-01-01T00:00:00Z",
		read: func(i beads.Issue) string { return timeText(i.DueAt) }},
	{name: FieldExternalRef, rule: RuleUpdateField, flags: "external-ref", kind: ExternalRef, sample: "gh-9",
		read: func(i beads.Issue) string { return i.ExternalRef }},
	{name: FieldEstimate, rule: RuleUpdateField, flags: "estimate", kind: Estimate, sample: "600",
		read: func(i beads.Issue) string { return strconv.Itoa(i.EstimatedMinutes) }},
	{name: "spec_id", rule: RuleUpdateField, flags: "spec-id", sample: "SPEC-9"},
}

// scalar reports whether Diff and Revert handle the field from its row
// alone.
func (f protectedField) scalar() bool { return f.flags != "" }

// updateFlags returns the `bd update` flags that set the field.
func (f protectedField) updateFlags() []string { return strings.Fields(f.flags) }

// revertFlag is the flag Revert sets the field with.
func (f protectedField) revertFlag() string { return f.updateFlags()[0] }

// value returns the field's value in is, as text.
func (f protectedField) value(is beads.Issue) string {
	if f.read == nil {
		return is.Extra[f.name]
	}
	return f.read(is)
}

// violation is the kind of a change to the field.
func (f protectedField) violation() Kind {
	if f.kind == "" {
		return Kind(f.name + "_changed")
	}
	return f.kind
}

// fieldOfKind returns the scalar field whose change is kind k.
func fieldOfKind(k Kind) (protectedField, bool) {
	for _, f := range protectedFields {
		if f.scalar() && f.violation() == k {
			return f, true
		}
	}
	return protectedField{}, false
}

// timeText renders a time as the RFC 3339 text `bd update --defer/--due`
// take, or "" for none (which clears it).
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// withProtectedFlags returns the refusals of `bd update`'s flags: a copy
// of the given ones, and every protected field's flags, each under its
// field's rule.
func withProtectedFlags(refusals map[string]string) map[string]string {
	refuse := maps.Clone(refusals)
	for _, f := range protectedFields {
		for _, flag := range f.updateFlags() {
			refuse[flag] = f.rule
		}
	}
	return refuse
}

// Tamper detection finds and reverts changes a BUILD iteration was not
// allowed to make to the tracker, however the agent made them: through the
// guard, around it with the real bd's absolute path, or by editing bd's
// database directly.
//
// It compares a snapshot of every issue taken before the iteration with one
// taken after it. The comparison is pure (Diff); undoing what it finds
// (Revert) uses PLAN powers through a small interface, so this package
// knows nothing about how bd is run.

package guard

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ralphd/ralphd/internal/beads"
)

// Snapshot is the state of every issue at one moment, keyed by id.
type Snapshot map[string]beads.Issue

// NewSnapshot indexes issues by id.
func NewSnapshot(issues []beads.Issue) Snapshot {
	s := make(Snapshot, len(issues))
	for _, is := range issues {
		s[is.ID] = is
	}
	return s
}

// Issues returns the snapshot's issues, sorted by id.
func (s Snapshot) Issues() []beads.Issue {
	out := make([]beads.Issue, 0, len(s))
	for _, id := range sortedIDs(s) {
		out = append(out, s[id])
	}
	return out
}

// Kind names a forbidden change.
type Kind string

// The forbidden changes BUILD mode can be caught making. A change to a
// protected field whose row (fields.go) names no kind is
// "<its JSON name>_changed".
const (
	Deleted        Kind = "deleted"               // an issue disappeared
	Priority       Kind = "priority_changed"      // priority differs
	Type           Kind = "type_changed"          // issue_type differs
	Acceptance     Kind = "acceptance_changed"    // acceptance_criteria differs
	Title          Kind = "title_changed"         // title differs
	Status         Kind = "status_changed"        // set to a status BUILD may not set
	Parent         Kind = "parent_changed"        // parent differs
	DeferUntil     Kind = "defer_until_changed"   // defer_until differs
	DueAt          Kind = "due_at_changed"        // due_at differs
	ExternalRef    Kind = "external_ref_changed"  // external_ref differs
	Estimate       Kind = "estimate_changed"      // estimated_minutes differs
	DepRemoved     Kind = "dependency_removed"    // a dependency edge disappeared
	LabelRemoved   Kind = "label_removed"         // a label disappeared
	CommentRemoved Kind = "comment_removed"       // a comment disappeared
	CloseNoReason  Kind = "closed_without_reason" // closed with an empty reason
	CloseNoEvident Kind = "closed_without_evidence"
	// ReservedLabelAdded: a label only ralphd adds (guard.ReservedLabels,
	// its stuck label, and Options.ReservedLabels) was added.
	ReservedLabelAdded Kind = "reserved_label_added"
	// OtherStatus and OtherAssignee: the status or assignee of an issue
	// that is neither the iteration's own nor one BUILD created changed
	// (Options.Own; a reopen of a closed one excepted).
	OtherStatus   Kind = "other_status_changed"
	OtherAssignee Kind = "other_assignee_changed"
	// CreatedAbove: an issue created in the window has a priority above
	// the iteration's own issue's (Options.Own).
	CreatedAbove Kind = "created_priority_above"
)

// Violation is one forbidden change.
type Violation struct {
	Kind    Kind
	IssueID string
	Before  string // the value before, as text
	After   string // the value after, as text
	Dep     beads.Dependency
	Label   string
	Comment beads.Comment
	// Rule is the guard rule that refuses the same change through the
	// guard ("" for a close that is judged, not refused).
	Rule string
}

// String describes the violation for notes and logs.
func (v Violation) String() string {
	switch v.Kind {
	case Deleted:
		return fmt.Sprintf("%s was deleted", v.IssueID)
	case DepRemoved:
		return fmt.Sprintf("dependency %s -> %s (%s) was removed", v.Dep.IssueID, v.Dep.DependsOnID, v.Dep.Type)
	case LabelRemoved:
		return fmt.Sprintf("label %q was removed from %s", v.Label, v.IssueID)
	case CommentRemoved:
		return fmt.Sprintf("a comment by %s was removed from %s: %q", v.Comment.Author, v.IssueID, v.Comment.Text)
	case CloseNoReason:
		return fmt.Sprintf("%s was closed without a reason", v.IssueID)
	case CloseNoEvident:
		return fmt.Sprintf("%s was closed with a reason that cites no command or evidence: %q", v.IssueID, v.After)
	case ReservedLabelAdded:
		return fmt.Sprintf("label %q, which only ralphd adds, was added to %s", v.Label, v.IssueID)
	case OtherStatus:
		return fmt.Sprintf("%s: status of another issue changed from %q to %q", v.IssueID, v.Before, v.After)
	case OtherAssignee:
		return fmt.Sprintf("%s: assignee of another issue changed from %q to %q", v.IssueID, v.Before, v.After)
	case CreatedAbove:
		return fmt.Sprintf("%s was created at priority %s, above its iteration's issue (P%s)", v.IssueID, v.After, v.Before)
	default:
		return fmt.Sprintf("%s: %s changed from %q to %q", v.IssueID, strings.TrimSuffix(string(v.Kind), "_changed"), v.Before, v.After)
	}
}

// Options tunes Diff.
type Options struct {
	// CitesEvidence reports whether a close reason cites a command or
	// evidence. Nil accepts any non-empty reason.
	CitesEvidence func(reason string) bool
	// AllowLabelRemoval lists labels BUILD may lose without a violation
	// (none by default).
	AllowLabelRemoval []string
	// ReservedLabels are more labels only ralphd adds, beside the guard's
	// (guard.ReservedLabels, its stuck label, which makes it skip an
	// issue): BUILD adding one is a violation, although adding other
	// labels is allowed.
	ReservedLabels []string
	// Own is the iteration's issue ("": the rules below are off). BUILD
	// may change the status and assignee only of Own and of the issues
	// Made reports; another issue's change is a violation (OtherStatus,
	// OtherAssignee), except a reopen of a closed issue, and closing it
	// is one whatever the reason. An issue created in the window may not
	// have a priority above Own's (CreatedAbove). See powers.go.
	Own string
	// Made reports whether BUILD created id in this run; nil: none.
	Made func(id string) bool
	// Beside are the issues other iterations worked on while this one
	// ran (workers): a new issue cannot be told to one of them, so it may
	// be as urgent as the most urgent of Own and these.
	Beside []string
}

// others reports whether id is an issue whose status and assignee BUILD
// may not change under opts.
func (opts Options) others(id string) bool {
	return opts.Own != "" && id != opts.Own && (opts.Made == nil || !opts.Made(id))
}

// structured are the protected fields without flags, which Diff checks
// and Revert undoes by hand.
var structured = []string{FieldIssue, FieldStatus, FieldLabels, FieldDependencies, FieldComments,
	FieldReservedLabels}

// protection is the table of protected fields (fields.go), read once:
// each field by bd's JSON name.
var protection = func() map[string]protectedField {
	m := make(map[string]protectedField, len(protectedFields))
	for _, f := range protectedFields {
		m[f.name] = f
	}
	return m
}()

// Diff returns the forbidden changes between before and after, in a stable
// order (by issue id, then field). The fields it checks are the ones the
// guard protects (the table in fields.go); comments are compared where both
// snapshots hold them (beads.Issue.Comments).
func Diff(before, after Snapshot, opts Options) []Violation {
	var vs []Violation
	fields := make([]string, 0, len(protection))
	for f := range protection {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	buildStatuses := BuildStatuses()
	reserved := append(ReservedLabels(), opts.ReservedLabels...)
	for _, id := range sortedIDs(before) {
		b := before[id]
		a, ok := after[id]
		if !ok {
			if p, on := protection[FieldIssue]; on {
				vs = append(vs, Violation{Kind: Deleted, IssueID: id, Before: b.Title, Rule: p.rule})
			}
			continue
		}
		other := opts.others(id)
		if other {
			vs = append(vs, otherChanges(b, a)...)
		}
		for _, f := range fields {
			p := protection[f]
			rule := p.rule
			if p.scalar() {
				if bv, av := p.value(b), p.value(a); bv != av {
					vs = append(vs, Violation{Kind: p.violation(), IssueID: id, Before: bv, After: av, Rule: rule})
				}
				continue
			}
			switch f {
			case FieldStatus:
				if other {
					continue // judged above, whatever the status
				}
				if a.Status != b.Status && a.Status != beads.StatusClosed && !slices.Contains(buildStatuses, a.Status) {
					vs = append(vs, Violation{Kind: Status, IssueID: id, Before: b.Status, After: a.Status, Rule: rule})
				}
			case FieldDependencies:
				for _, d := range b.Dependencies {
					// A parent-child edge is the parent field's to judge.
					if !a.DependsOn(d) && (d.Type != beads.DepParentChild || protection[FieldParent].rule == "") {
						vs = append(vs, Violation{Kind: DepRemoved, IssueID: id, Dep: d, Rule: rule})
					}
				}
			case FieldLabels:
				for _, l := range b.Labels {
					if !a.HasLabel(l) && !slices.Contains(opts.AllowLabelRemoval, l) {
						vs = append(vs, Violation{Kind: LabelRemoved, IssueID: id, Label: l, Rule: rule})
					}
				}
			case FieldComments:
				for _, c := range removedComments(b, a) {
					vs = append(vs, Violation{Kind: CommentRemoved, IssueID: id, Comment: c, Rule: rule})
				}
			case FieldReservedLabels:
				for _, l := range reserved {
					if a.HasLabel(l) && !b.HasLabel(l) {
						vs = append(vs, Violation{Kind: ReservedLabelAdded, IssueID: id, Label: l, Rule: rule})
					}
				}
			}
		}
		// A close in this iteration must carry a reason with evidence.
		// An issue that was already closed is judged only if its reason
		// changed.
		if a.Status == beads.StatusClosed && (b.Status != beads.StatusClosed || a.CloseReason != b.CloseReason) && !other {
			vs = append(vs, judgeClose(id, a.CloseReason, opts)...)
		}
	}
	return append(vs, createdChanges(before, after, opts, reserved)...)
}

// otherChanges returns the status and assignee changes of b to a, an
// issue BUILD may change neither of: any status change but a reopen, and
// any assignee change.
func otherChanges(b, a beads.Issue) []Violation {
	var vs []Violation
	if a.Status != b.Status && (b.Status != beads.StatusClosed || a.Status != beads.StatusOpen) {
		vs = append(vs, Violation{Kind: OtherStatus, IssueID: b.ID, Before: b.Status, After: a.Status, Rule: RuleOtherIssue})
	}
	if a.Assignee != b.Assignee {
		vs = append(vs, Violation{Kind: OtherAssignee, IssueID: b.ID, Before: b.Assignee, After: a.Assignee, Rule: RuleOtherIssue})
	}
	return vs
}

// createdChanges judges the issues created in the window, which before
// does not hold: none may have a priority above the iteration's own
// issue's, nor a label only ralphd adds.
func createdChanges(before, after Snapshot, opts Options, reserved []string) []Violation {
	own, hasOwn := before[opts.Own]
	for _, id := range opts.Beside {
		if b, ok := before[id]; ok && hasOwn && b.Priority < own.Priority {
			own = b
		}
	}
	var vs []Violation
	for _, id := range sortedIDs(after) {
		if _, ok := before[id]; ok {
			continue
		}
		a := after[id]
		if opts.Own != "" && hasOwn && a.Priority < own.Priority {
			vs = append(vs, Violation{Kind: CreatedAbove, IssueID: id, Before: strconv.Itoa(own.Priority),
				After: strconv.Itoa(a.Priority), Rule: RuleCreatePriority})
		}
		if protection[FieldReservedLabels].rule == "" {
			continue
		}
		for _, l := range reserved {
			if a.HasLabel(l) {
				vs = append(vs, Violation{Kind: ReservedLabelAdded, IssueID: id, Label: l, Rule: RuleReservedLabel})
			}
		}
	}
	return vs
}

// Created returns the ids of the issues after holds and before does not,
// sorted.
func Created(before, after Snapshot) []string {
	var ids []string
	for _, id := range sortedIDs(after) {
		if _, ok := before[id]; !ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// removedComments returns the comments of b that a no longer has (a
// comment whose text was rewritten in place is one of them). With
// a's comments unread, a lower count is all that shows: then every comment
// of b not provably kept counts as removed only if the count dropped.
func removedComments(b, a beads.Issue) []beads.Comment {
	if len(b.Comments) == 0 {
		return nil
	}
	if a.Comments == nil {
		if a.CommentCount >= len(b.Comments) {
			return nil
		}
		return b.Comments // unread: the caller reads them to know which
	}
	var gone []beads.Comment
	for _, c := range b.Comments {
		if !slices.ContainsFunc(a.Comments, func(x beads.Comment) bool {
			return (c.ID != "" && x.ID == c.ID && x.Text == c.Text) || (x.Text == c.Text && x.Author == c.Author) || x.Text == restoredComment(c)
		}) {
			gone = append(gone, c)
		}
	}
	return gone
}

func judgeClose(id, reason string, opts Options) []Violation {
	if strings.TrimSpace(reason) == "" {
		return []Violation{{Kind: CloseNoReason, IssueID: id}}
	}
	if opts.CitesEvidence != nil && !opts.CitesEvidence(reason) {
		return []Violation{{Kind: CloseNoEvident, IssueID: id, After: reason}}
	}
	return nil
}

func sortedIDs(s Snapshot) []string {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Tracker is what Revert needs from bd, used with PLAN powers.
type Tracker interface {
	Create(ctx context.Context, o beads.CreateOptions) (beads.Issue, error)
	Update(ctx context.Context, id string, sets ...beads.Set) (beads.Issue, error)
	DepAdd(ctx context.Context, issueID, dependsOnID, depType string) error
	LabelAdd(ctx context.Context, id, label string) error
	LabelRemove(ctx context.Context, id, label string) error
	Reopen(ctx context.Context, id, reason string) (beads.Issue, error)
	Close(ctx context.Context, id, reason string) (beads.Issue, error)
	UpdateStatus(ctx context.Context, id, status string) (beads.Issue, error)
	CommentAdd(ctx context.Context, id, text string) error
	AppendNotes(ctx context.Context, id, text string) (beads.Issue, error)
}

// Result is what Revert did about one violation.
type Result struct {
	Violation Violation
	Reverted  bool
	Err       error
}

// Revert undoes each violation as far as bd allows, and leaves a note on
// the issue saying what was reverted and why. A deleted issue is
// re-created with its id, fields, labels, dependencies, parent, status and
// comments (each comment re-added with its author and time in its text);
// its history cannot be restored.
func Revert(ctx context.Context, t Tracker, before Snapshot, vs []Violation) []Result {
	// Re-create deleted issues first: a deletion also removed the
	// dependency edges of other issues that pointed at it, and those can
	// only be re-added once it exists again.
	ordered := slices.Clone(vs)
	slices.SortStableFunc(ordered, func(a, b Violation) int {
		return boolInt(b.Kind == Deleted) - boolInt(a.Kind == Deleted)
	})
	rs := make([]Result, 0, len(vs))
	for _, v := range ordered {
		err := revertOne(ctx, t, before, v)
		r := Result{Violation: v, Reverted: err == nil, Err: err}
		note := fmt.Sprintf("ralphd: reverted a change BUILD mode may not make: %s. This belongs to PLANNING; leave a note instead.", v)
		if v.Kind == CloseNoReason || v.Kind == CloseNoEvident {
			note = fmt.Sprintf("ralphd: reopened: %s. Close with `bd close %s --reason \"<commands run and their results>\"`.", v, v.IssueID)
		}
		if err != nil {
			note = fmt.Sprintf("ralphd: detected a forbidden change (%s) but could not revert it: %v. PLANNING must review this.", v, err)
		}
		if _, nerr := t.AppendNotes(ctx, v.IssueID, note); nerr != nil && r.Err == nil {
			r.Err = fmt.Errorf("note on %s: %w", v.IssueID, nerr)
		}
		rs = append(rs, r)
	}
	return rs
}

func revertOne(ctx context.Context, t Tracker, before Snapshot, v Violation) error {
	b := before[v.IssueID]
	switch v.Kind {
	case Deleted:
		return recreate(ctx, t, b)
	case Status:
		_, err := t.UpdateStatus(ctx, v.IssueID, b.Status)
		return err
	case DepRemoved:
		return t.DepAdd(ctx, v.Dep.IssueID, v.Dep.DependsOnID, v.Dep.Type)
	case LabelRemoved:
		return t.LabelAdd(ctx, v.IssueID, v.Label)
	case ReservedLabelAdded:
		return t.LabelRemove(ctx, v.IssueID, v.Label)
	case OtherStatus:
		return restoreStatus(ctx, t, b, v.After)
	case OtherAssignee:
		_, err := t.Update(ctx, v.IssueID, beads.Set{Flag: "assignee", Value: v.Before})
		return err
	case CreatedAbove:
		_, err := t.Update(ctx, v.IssueID, beads.Set{Flag: "priority", Value: v.Before})
		return err
	case CommentRemoved:
		return t.CommentAdd(ctx, v.IssueID, restoredComment(v.Comment))
	case CloseNoReason, CloseNoEvident:
		_, err := t.Reopen(ctx, v.IssueID, "ralphd: a BUILD close must cite the commands run and their results")
		return err
	}
	if f, ok := fieldOfKind(v.Kind); ok {
		return revertField(ctx, t, f, b)
	}
	return fmt.Errorf("unknown violation kind %q", v.Kind)
}

// restoreStatus sets b's issue, now with status now, back to b's status:
// a close takes `bd close` with b's reason, leaving closed `bd reopen`.
func restoreStatus(ctx context.Context, t Tracker, b beads.Issue, now string) error {
	if b.Status == beads.StatusClosed {
		_, err := t.Close(ctx, b.ID, b.CloseReason)
		return err
	}
	if now == beads.StatusClosed {
		if _, err := t.Reopen(ctx, b.ID, "ralphd: BUILD closed an issue that was not its own"); err != nil {
			return err
		}
		if b.Status == beads.StatusOpen {
			return nil
		}
	}
	_, err := t.UpdateStatus(ctx, b.ID, b.Status)
	return err
}

// revertField sets a protected field back to its value in b.
func revertField(ctx context.Context, t Tracker, f protectedField, b beads.Issue) error {
	_, err := t.Update(ctx, b.ID, beads.Set{Flag: f.revertFlag(), Value: f.value(b)})
	return err
}

// createSets are the protected fields `bd create` sets: a re-created
// issue has them already (see recreate).
var createSets = []string{FieldTitle, FieldPriority, FieldType, FieldAcceptance}

// recreate puts a deleted issue back as it was before: id, fields, labels,
// dependencies, the protected fields create does not set, comments and
// status.
func recreate(ctx context.Context, t Tracker, b beads.Issue) error {
	p := b.Priority
	opts := beads.CreateOptions{
		ID: b.ID, Title: b.Title, Description: b.Description, Design: b.Design,
		Acceptance: b.AcceptanceCriteria, Notes: b.Notes, Type: b.IssueType,
		Priority: &p, Labels: b.Labels,
	}
	if _, err := t.Create(ctx, opts); err != nil {
		return fmt.Errorf("re-create %s: %w", b.ID, err)
	}
	for _, d := range b.Dependencies {
		if d.Type == beads.DepParentChild && d.DependsOnID == b.Parent {
			continue // restored with the parent below
		}
		if err := t.DepAdd(ctx, b.ID, d.DependsOnID, d.Type); err != nil {
			return fmt.Errorf("re-add dependency of %s on %s: %w", b.ID, d.DependsOnID, err)
		}
	}
	var zero beads.Issue
	for _, f := range protectedFields {
		if !f.scalar() || slices.Contains(createSets, f.name) || f.value(b) == f.value(zero) {
			continue
		}
		if err := revertField(ctx, t, f, b); err != nil {
			return fmt.Errorf("restore %s of %s: %w", f.name, b.ID, err)
		}
	}
	for _, c := range b.Comments {
		if err := t.CommentAdd(ctx, b.ID, restoredComment(c)); err != nil {
			return fmt.Errorf("restore a comment of %s: %w", b.ID, err)
		}
	}
	switch b.Status {
	case beads.StatusOpen, "":
	case beads.StatusClosed:
		if _, err := t.Close(ctx, b.ID, b.CloseReason); err != nil {
			return fmt.Errorf("close %s again: %w", b.ID, err)
		}
	default:
		if _, err := t.UpdateStatus(ctx, b.ID, b.Status); err != nil {
			return fmt.Errorf("restore the status of %s: %w", b.ID, err)
		}
	}
	return nil
}

// restoredComment is the text a removed comment is re-added with: bd
// records the re-adder as its author, so the original author and time go
// into the text.
func restoredComment(c beads.Comment) string {
	return fmt.Sprintf("%s\n\n(restored by ralphd; written by %s at %s)", c.Text, c.Author, timeText(c.CreatedAt))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The bd client is the Tracker ralphd uses.
var _ Tracker = (*beads.Client)(nil)

// Explained reports whether one of effects, the changes ralphd's own
// writes made to v's issue (or to any issue: beads.Effect.Issue ""),
// accounts for v exactly: the field set to the
// value v found, the label added or removed, the edge removed. A deletion
// and a removed comment are never ralphd's (it deletes neither); nor is
// any change to another value than the one ralphd's write set.
func Explained(v Violation, effects []beads.Effect) bool {
	for _, e := range effects {
		if e.Issue != v.IssueID && e.Issue != "" {
			continue
		}
		same := e.AnyValue || e.Value == v.After
		switch v.Kind {
		case Deleted, CommentRemoved, CreatedAbove:
			return false
		case Status, OtherStatus:
			if e.Op == "status" && same {
				return true
			}
		case OtherAssignee:
			if e.Op == "assignee" && same {
				return true
			}
		case LabelRemoved:
			if e.Op == beads.OpLabelRemove && e.Value == v.Label {
				return true
			}
		case ReservedLabelAdded:
			if e.Op == beads.OpLabelAdd && e.Value == v.Label {
				return true
			}
		case DepRemoved:
			if e.Op == beads.OpDepRemove && e.Value == v.Dep.DependsOnID {
				return true
			}
		case CloseNoReason, CloseNoEvident:
			if e.Op == "close-reason" && e.Value == v.After {
				return true
			}
		default:
			if f, ok := fieldOfKind(v.Kind); ok && slices.Contains(f.updateFlags(), e.Op) && same {
				return true
			}
		}
	}
	return false
}

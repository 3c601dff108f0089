// Package tamper detects and reverts changes a BUILD iteration was not
// allowed to make to the tracker, however the agent made them: through the
// guard, around it with the real bd's absolute path, or by editing bd's
// database directly.
//
// It compares a snapshot of every issue taken before the iteration with one
// taken after it. The comparison is pure (Diff); undoing what it finds
// (Revert) uses PLAN powers through a small interface, so this package
// knows nothing about how bd is run.
package tamper

import (
	"context"
	"fmt"
	"slices"
	"sort"
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

// Kind names a forbidden change.
type Kind string

// The forbidden changes BUILD mode can be caught making.
const (
	Deleted        Kind = "deleted"               // an issue disappeared
	Priority       Kind = "priority_changed"      // priority differs
	Type           Kind = "type_changed"          // issue_type differs
	Acceptance     Kind = "acceptance_changed"    // acceptance_criteria differs
	DepRemoved     Kind = "dependency_removed"    // a dependency edge disappeared
	LabelRemoved   Kind = "label_removed"         // a label disappeared
	CloseNoReason  Kind = "closed_without_reason" // closed with an empty reason
	CloseNoEvident Kind = "closed_without_evidence"
)

// Violation is one forbidden change.
type Violation struct {
	Kind    Kind
	IssueID string
	Before  string // the value before, as text
	After   string // the value after, as text
	Dep     beads.Dependency
	Label   string
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
	case CloseNoReason:
		return fmt.Sprintf("%s was closed without a reason", v.IssueID)
	case CloseNoEvident:
		return fmt.Sprintf("%s was closed with a reason that cites no command or evidence: %q", v.IssueID, v.After)
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
}

// Diff returns the forbidden changes between before and after, in a stable
// order (by issue id, then kind).
func Diff(before, after Snapshot, opts Options) []Violation {
	var vs []Violation
	for _, id := range sortedIDs(before) {
		b := before[id]
		a, ok := after[id]
		if !ok {
			vs = append(vs, Violation{Kind: Deleted, IssueID: id, Before: b.Title})
			continue
		}
		if a.Priority != b.Priority {
			vs = append(vs, Violation{Kind: Priority, IssueID: id, Before: fmt.Sprint(b.Priority), After: fmt.Sprint(a.Priority)})
		}
		if a.IssueType != b.IssueType {
			vs = append(vs, Violation{Kind: Type, IssueID: id, Before: b.IssueType, After: a.IssueType})
		}
		if a.AcceptanceCriteria != b.AcceptanceCriteria {
			vs = append(vs, Violation{Kind: Acceptance, IssueID: id, Before: b.AcceptanceCriteria, After: a.AcceptanceCriteria})
		}
		for _, d := range b.Dependencies {
			if !a.DependsOn(d) {
				vs = append(vs, Violation{Kind: DepRemoved, IssueID: id, Dep: d})
			}
		}
		for _, l := range b.Labels {
			if !a.HasLabel(l) && !slices.Contains(opts.AllowLabelRemoval, l) {
				vs = append(vs, Violation{Kind: LabelRemoved, IssueID: id, Label: l})
			}
		}
		// A close in this iteration must carry a reason with evidence.
		// An issue that was already closed is judged only if its reason
		// changed.
		if a.Status == beads.StatusClosed && (b.Status != beads.StatusClosed || a.CloseReason != b.CloseReason) {
			vs = append(vs, judgeClose(id, a.CloseReason, opts)...)
		}
	}
	return vs
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
	Update(ctx context.Context, id string, f beads.Fields) (beads.Issue, error)
	DepAdd(ctx context.Context, issueID, dependsOnID, depType string) error
	LabelAdd(ctx context.Context, id, label string) error
	Reopen(ctx context.Context, id, reason string) (beads.Issue, error)
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
// re-created with its id, fields, labels and dependencies; its comments and
// history cannot be restored.
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
		note := fmt.Sprintf("ralphd: reverted a change BUILD mode may not make: %s. Priority, type, acceptance criteria, dependencies and deletions belong to PLANNING; leave a note instead.", v)
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
			if err := t.DepAdd(ctx, b.ID, d.DependsOnID, d.Type); err != nil {
				return fmt.Errorf("re-add dependency of %s on %s: %w", b.ID, d.DependsOnID, err)
			}
		}
		return nil
	case Priority:
		p := b.Priority
		_, err := t.Update(ctx, v.IssueID, beads.Fields{Priority: &p})
		return err
	case Type:
		ty := b.IssueType
		_, err := t.Update(ctx, v.IssueID, beads.Fields{Type: &ty})
		return err
	case Acceptance:
		ac := b.AcceptanceCriteria
		_, err := t.Update(ctx, v.IssueID, beads.Fields{Acceptance: &ac})
		return err
	case DepRemoved:
		return t.DepAdd(ctx, v.Dep.IssueID, v.Dep.DependsOnID, v.Dep.Type)
	case LabelRemoved:
		return t.LabelAdd(ctx, v.IssueID, v.Label)
	case CloseNoReason, CloseNoEvident:
		_, err := t.Reopen(ctx, v.IssueID, "ralphd: a BUILD close must cite the commands run and their results")
		return err
	}
	return fmt.Errorf("unknown violation kind %q", v.Kind)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The bd client is the Tracker ralphd uses.
var _ Tracker = (*beads.Client)(nil)

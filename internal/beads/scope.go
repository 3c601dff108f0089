package beads

import (
	"context"
	"errors"
	"fmt"
)

// Lister lists the ready work under an issue: `bd ready --parent <scope>`.
// A *beads.Client implements it.
type Lister interface {
	Ready(ctx context.Context, opts ReadyOptions) ([]Issue, error)
}

// NextIn claims the first ready unassigned issue among the descendants of
// scope (an epic), or of the whole tracker when scope is "", that inScope
// keeps, and reads it back; scope "" with inScope nil is Next.
//
// No recording shows real bd 1.0.5 taking `ready --claim` with --parent,
// and bd cannot be asked to pass over what only ralphd knows, so such a
// claim is made of two recorded calls: `bd ready [--parent <scope>]` lists
// the candidates in bd's order, and `bd update <id>
// --claim` claims them one at a time, each read back. Candidates with an
// assignee or one of ExcludeLabels are passed over, as `ready --claim`
// passes them over. A candidate lost to another claimant (already
// claimed, a read-back that does not show the actor, a status that no
// longer allows a claim) is not an attempt: the next candidate is tried.
// When every candidate is lost the outcome is Empty, or Busy when some
// candidate was still losing serialization races after MaxTries; the
// ClaimResult's Tries then counts every claim call made.
//
// bd's answer is the tracker as it is now, and an agent working beside
// this worker can move an issue into the scope around the guard before
// its judgement reverts that. inScope, when not nil, is asked about each
// candidate before it is claimed, and one it rejects is passed over:
// ralphd answers from the tracker as the last judgement left it.
//
// The Tracker must also be a Lister.
func (c *Claimer) NextIn(ctx context.Context, scope string, inScope func(Issue) bool) (ClaimResult, error) {
	if scope == "" && inScope == nil {
		return c.Next(ctx)
	}
	if c.Actor == "" {
		return ClaimResult{}, errors.New("claim: no actor")
	}
	lister, ok := c.Tracker.(Lister)
	if !ok {
		return ClaimResult{}, fmt.Errorf("claim: the tracker cannot list the ready work%s", scopeText(scope))
	}
	ready, err := lister.Ready(ctx, ReadyOptions{Parent: scope})
	if err != nil {
		return ClaimResult{}, fmt.Errorf("claim: list the ready work%s: %w", scopeText(scope), err)
	}
	var res ClaimResult
	busy := false
	for _, is := range ready {
		if is.Assignee != "" || c.excluded(is) || (inScope != nil && !inScope(is)) {
			continue
		}
		r, err := c.run(ctx, func(ctx context.Context) (Issue, bool, error) {
			got, err := c.Tracker.Claim(ctx, is.ID)
			return got, err == nil, err
		})
		res.Tries += r.Tries
		if err != nil {
			return res, err // run's error names the claim call and the issue
		}
		switch r.Outcome {
		case Won:
			r.Tries = res.Tries
			return r, nil
		case Busy:
			busy = true
		}
		// Lost, Unclaimable or Busy: someone else got there first; try
		// the next candidate.
	}
	res.Outcome = Empty
	if busy {
		res.Outcome = Busy
	}
	return res, nil
}

// scopeText is " in scope", or "" for the whole tracker.
func scopeText(scope string) string {
	if scope == "" {
		return ""
	}
	return " in " + scope
}

// excluded reports whether is has one of the labels Next passes over.
func (c *Claimer) excluded(is Issue) bool {
	for _, l := range c.ExcludeLabels {
		if is.HasLabel(l) {
			return true
		}
	}
	return false
}

// Descendants returns the ids of the issues under root (its children,
// theirs, and so on) among issues, by their Parent; root itself is not
// one of them.
func Descendants(issues map[string]Issue, root string) map[string]bool {
	children := map[string][]string{}
	for id, is := range issues {
		if is.Parent != "" {
			children[is.Parent] = append(children[is.Parent], id)
		}
	}
	out := map[string]bool{}
	queue := []string{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, c := range children[id] {
			if !out[c] && c != root {
				out[c] = true
				queue = append(queue, c)
			}
		}
	}
	return out
}

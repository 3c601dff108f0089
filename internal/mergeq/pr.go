package mergeq

import (
	"context"
	"fmt"
)

// pullRequest is the strategy pr: as branch (branch.go), plus a pull
// request from ralph/<issue> into the target, opened on the queue's
// Forge with the request's Title and Body. Nothing is merged by ralphd:
// the work waits (Waiting) until a person, or the forge's auto-merge,
// merges the pull request, which the pool watches (Forge.Read). Another
// attempt at the issue replaces the branch, and so updates the same pull
// request.
type pullRequest struct{}

// Land puts w.Commit on ralph/<issue> and opens its pull request, or
// finds the one open. A forge that does not answer leaves the work
// waiting on the branch: the pool's watch opens the pull request later.
func (pullRequest) Land(ctx context.Context, q *Queue, w Work) (Landing, error) {
	if q.Forge == nil {
		return Landing{}, fmt.Errorf("integrate = pr needs a forge: set forge_repo (owner/name), and forge (github or gitea)")
	}
	name := IssueBranch(w.Issue)
	if err := q.putBranch(ctx, name, w.Commit); err != nil {
		return Landing{Outcome: Failed, Why: err.Error()}, nil
	}
	l := Landing{Outcome: Waiting, Commit: w.Commit, Branch: name}
	pr, err := q.Forge.Open(ctx, name, w.Commit, q.Target, w.Title, w.Body)
	if err != nil {
		l.Why = fmt.Sprintf("the work is on %s; its pull request is not open yet (%v)", name, err)
		return l, nil
	}
	l.PR = pr
	l.Why = fmt.Sprintf("pull request #%d (%s) awaits review and merge", pr.Number, pr.URL)
	return l, nil
}

// Landed reports whether a ralph/ branch is at commit, as branch does.
func (pullRequest) Landed(ctx context.Context, q *Queue, commit string) bool {
	return toBranch{}.Landed(ctx, q, commit)
}

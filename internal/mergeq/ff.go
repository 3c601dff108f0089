package mergeq

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ralphd/ralphd/internal/git"
)

// fastForward is the strategy ff, the default: the target itself is
// fast-forwarded to the work, and with a remote the work is pushed to the
// remote's target first (never forced). The issue is integrated once the
// target (and the remote's) holds the work; a rejected push or a target
// that moved meanwhile means another round.
type fastForward struct{}

// Land pushes w.Commit to the remote's target, when there is a remote,
// then fast-forwards the local target (and its checkout) to it.
func (fastForward) Land(ctx context.Context, q *Queue, w Work) (Landing, error) {
	if q.Remote != "" {
		pushed, err := q.push(ctx, w.Commit)
		if err != nil {
			return Landing{}, err
		}
		if !pushed {
			return Landing{Again: true}, nil // someone else got there first
		}
	}
	err := q.advance(ctx, w.Commit, w.Base)
	switch {
	case q.Remote != "" && err != nil:
		// The remote has the work; the local branch could not follow.
		return Landing{Outcome: Integrated, Commit: w.Commit, LocalErr: err}, nil
	case errors.Is(err, errMoved):
		return Landing{Again: true}, nil // the target moved under us: rebase onto it again
	case err != nil:
		kept, _ := q.keep(ctx, w.Dir, w.Request)
		return Landing{Kept: kept}, err
	}
	return Landing{Outcome: Integrated, Commit: w.Commit}, nil
}

// Landed reports whether commit is on the target, or, with a remote, on
// the remote's target as last fetched or pushed.
func (fastForward) Landed(ctx context.Context, q *Queue, commit string) bool {
	refs := []string{q.ref()}
	if q.Remote != "" {
		refs = append(refs, "refs/remotes/"+q.Remote+"/"+q.Target)
	}
	for _, r := range refs {
		if q.ancestor(ctx, commit, r) {
			return true
		}
	}
	return false
}

// push pushes tip to the remote's target without force. It reports false
// when the remote rejected it because the target moved.
func (q *Queue) push(ctx context.Context, tip string) (bool, error) {
	out, err := git.Output(ctx, q.Repo, "push", "--porcelain", q.Remote, tip+":refs/heads/"+q.Target)
	if err == nil {
		return true, nil
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("push: %w", ctx.Err())
	}
	if pushRejected(string(out)) {
		return false, nil
	}
	return false, fmt.Errorf("push to %s: %w", q.Remote, err)
}

// pushRejected reads `git push --porcelain` output: a ref line flagged "!"
// whose reason is that the remote moved (non-fast-forward, fetch first)
// or that the remote refused a ref update ("remote rejected").
func pushRejected(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		flag, rest, ok := strings.Cut(l, "\t")
		if !ok || flag != "!" {
			continue
		}
		_, summary, _ := strings.Cut(rest, "\t")
		if strings.HasPrefix(summary, "[rejected]") || strings.HasPrefix(summary, "[remote rejected]") {
			return true
		}
	}
	return false
}

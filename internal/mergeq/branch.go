package mergeq

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralphd/ralphd/internal/git"
)

// BranchPrefix starts the branch each issue's work is pushed to by the
// strategies branch and pr: ralph/<issue>.
const BranchPrefix = "ralph/"

// IssueBranch is the branch the strategies branch and pr put issue's
// work on.
func IssueBranch(issue string) string { return BranchPrefix + issue }

// toBranch is the strategy branch: each issue's rebased, verified work is
// put on a branch of its own, ralph/<issue>: pushed to the remote when
// there is one, a local branch otherwise. Nothing is merged: the target
// does not move, and whoever reviews the branch merges it. The issue
// counts as integrated once the branch holds the work. A later attempt at
// the same issue replaces the branch, under a lease: the push goes
// through only while the branch is missing or where ralphd's last push
// left it (its tracking ref), so a reviewer's commit pushed there
// meanwhile is never overwritten (the landing is then refused and the
// work kept).
type toBranch struct{}

// Land puts w.Commit on ralph/<issue>.
func (toBranch) Land(ctx context.Context, q *Queue, w Work) (Landing, error) {
	name := IssueBranch(w.Issue)
	if err := q.putBranch(ctx, name, w.Commit); err != nil {
		return Landing{Outcome: Failed, Why: err.Error()}, nil
	}
	return Landing{Outcome: Integrated, Commit: w.Commit, Branch: name}, nil
}

// Landed reports whether a ralph/ branch (the remote's, asked, with a
// remote) is at commit.
func (toBranch) Landed(ctx context.Context, q *Queue, commit string) bool {
	heads, err := q.issueBranches(ctx)
	if err != nil {
		return false
	}
	for _, h := range heads {
		if h == commit {
			return true
		}
	}
	return false
}

// putBranch sets branch name to commit: on the remote, pushed with a
// lease on what the remote has there now (nothing, or an earlier
// attempt's work), or locally without a remote.
func (q *Queue) putBranch(ctx context.Context, name, commit string) error {
	ref := "refs/heads/" + name
	if strings.HasPrefix(name, BranchPrefix+"-") {
		return fmt.Errorf("branch for the work: %q is not a branch name", name)
	}
	if _, err := git.Output(ctx, q.Repo, "check-ref-format", ref); err != nil {
		return fmt.Errorf("branch for the work: %q is not a branch name", name)
	}
	if q.Remote == "" {
		if _, err := git.Output(ctx, q.Repo, "update-ref", ref, commit); err != nil {
			return fmt.Errorf("set %s to the work: %w", name, err)
		}
		return nil
	}
	heads, err := q.issueBranches(ctx)
	if err != nil {
		return err
	}
	// The lease: the branch must be missing on the remote, or where
	// ralphd's last push left it (its tracking ref).
	tracking := "refs/remotes/" + q.Remote + "/" + name
	expect := ""
	if heads[name] != "" {
		last, err := line(ctx, q.Repo, "rev-parse", "--verify", "-q", tracking+"^{commit}")
		if err != nil || last != heads[name] {
			return fmt.Errorf("%s/%s moved since ralphd last pushed it (someone else pushed there?); ralphd does not overwrite it", q.Remote, name)
		}
		expect = last
	}
	out, err := git.Output(ctx, q.Repo, "push", "--porcelain", "--force-with-lease="+ref+":"+expect, q.Remote, commit+":"+ref)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("push %s: %w", name, ctx.Err())
		}
		if pushRejected(string(out)) {
			return fmt.Errorf("%s/%s moved since ralphd last pushed it (someone else pushed there?); ralphd does not overwrite it", q.Remote, name)
		}
		return fmt.Errorf("push %s to %s: %w", name, q.Remote, err)
	}
	if _, err := git.Output(ctx, q.Repo, "update-ref", tracking, commit); err != nil {
		return fmt.Errorf("record the push of %s: %w", name, err)
	}
	return nil
}

// issueBranches returns the ralph/ branches and their tips: the remote's,
// asked (never the tracking refs, which an agent can write), or the
// local ones without a remote.
func (q *Queue) issueBranches(ctx context.Context) (map[string]string, error) {
	var out []byte
	var err error
	if q.Remote == "" {
		out, err = git.Output(ctx, q.Repo, "for-each-ref", "--format=%(objectname)\t%(refname)", "refs/heads/"+BranchPrefix)
	} else {
		out, err = git.Output(ctx, q.Repo, "ls-remote", "--heads", q.Remote, "refs/heads/"+BranchPrefix+"*")
	}
	if err != nil {
		return nil, fmt.Errorf("list the %s branches: %w", BranchPrefix, err)
	}
	heads := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		hash, name, ok := strings.Cut(strings.TrimSpace(l), "\t")
		if ok && git.IsHash(hash) {
			heads[strings.TrimPrefix(name, "refs/heads/")] = hash
		}
	}
	return heads, nil
}

package mergeq

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestBranchPushesEachIssueAndMergesNothing: with integrate = branch, two
// workers' work lands on ralph/<issue> each, on the remote, rebased onto
// the remote's target and verified; neither target moves. Another
// attempt at an issue replaces its branch; a branch someone else pushed
// to meanwhile is never overwritten: the landing is refused, the work
// kept.
func TestBranchPushesEachIssueAndMergesNothing(t *testing.T) {
	is := is.New(t)
	remote, a, b := twoClones(t)
	sh(t, remote, "git", "config", "receive.denyNonFastForwards", "false") // a branch is replaced on a new attempt
	ctx := context.Background()
	s, err := LookupStrategy("branch")
	is.NoErr(err)
	verified := 0
	q := &Queue{Repo: a.repo, Target: "main", Remote: "origin", Strategy: s,
		Verify: func(context.Context, string) error { verified++; return nil }}
	main0 := sh(t, remote, "git", "rev-parse", "main")
	local0 := sh(t, a.repo, "git", "rev-parse", "main")

	r1 := a.work("w1", map[string]string{"a.txt": "a\n"})
	r2 := a.work("w2", map[string]string{"b.txt": "b\n"})
	var results []Result
	for _, r := range []Request{r1, r2} {
		res, err := q.Integrate(ctx, r)
		is.NoErr(err)
		is.Equal(res.Outcome(), Integrated)
		is.Equal(res.Branch, "ralph/"+r.Issue)
		is.Equal(sh(t, remote, "git", "rev-parse", "ralph/"+r.Issue), res.Commit) // pushed
		is.Equal(sh(t, remote, "git", "rev-parse", res.Commit+"~1"), main0)       // rebased onto the remote's target
		is.True(q.Landed(ctx, res.Commit))                                        // the next start finds it there
		results = append(results, res)
	}
	is.Equal(verified, 2)
	is.Equal(sh(t, remote, "git", "rev-parse", "main"), main0) // nothing merged
	is.Equal(sh(t, a.repo, "git", "rev-parse", "main"), local0)
	is.True(!strings.Contains(sh(t, remote, "git", "ls-tree", "--name-only", "ralph/is-w1"), "b.txt")) // one issue per branch

	// Another attempt at w1's issue replaces its branch.
	r1b := a.work("w1", map[string]string{"a.txt": "a, fixed\n"})
	r1b.Issue = r1.Issue
	res, err := q.Integrate(ctx, r1b)
	is.NoErr(err)
	is.Equal(res.Outcome(), Integrated)
	is.Equal(sh(t, remote, "git", "show", "ralph/is-w1:a.txt"), "a, fixed")
	is.True(!q.Landed(ctx, results[0].Commit)) // replaced

	// A reviewer pushes a commit of their own onto the branch: the next
	// attempt does not overwrite it.
	review := sh(t, b.repo, "sh", "-c", "git fetch -q origin ralph/is-w1 && git commit-tree -p FETCH_HEAD -m review FETCH_HEAD^{tree}")
	sh(t, b.repo, "git", "push", "-q", "origin", review+":refs/heads/ralph/is-w1")
	r1c := a.work("w1", map[string]string{"a.txt": "a, again\n"})
	r1c.Issue = r1.Issue
	res, err = q.Integrate(ctx, r1c)
	is.NoErr(err)
	is.Equal(res.Outcome(), Failed)
	is.True(strings.Contains(res.Reason(), "moved since ralphd last pushed it"))
	is.Equal(sh(t, remote, "git", "rev-parse", "ralph/is-w1"), review) // the reviewer's commit stands
	is.Equal(sh(t, a.repo, "git", "show", res.Kept+":a.txt"), "a, again")
	a.clean()
}

// TestBranchWithoutRemote: without a remote the branch is local.
func TestBranchWithoutRemote(t *testing.T) {
	is := is.New(t)
	f := newRepo(t)
	ctx := context.Background()
	s, err := LookupStrategy("branch")
	is.NoErr(err)
	q := &Queue{Repo: f.repo, Target: "main", Strategy: s}
	main0 := sh(t, f.repo, "git", "rev-parse", "main")
	res, err := q.Integrate(ctx, f.work("w1", map[string]string{"a.txt": "a\n"}))
	is.NoErr(err)
	is.Equal(res.Outcome(), Integrated)
	is.Equal(sh(t, f.repo, "git", "rev-parse", "ralph/is-w1"), res.Commit)
	is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), main0)
	is.True(q.Landed(ctx, res.Commit))
	is.True(!q.Landed(ctx, main0))
	f.clean()
}

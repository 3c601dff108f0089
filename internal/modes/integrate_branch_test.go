package modes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/mergeq"
)

// withRemote gives the project a bare remote, origin, holding its main.
func (p *project) withRemote(t *testing.T) string {
	t.Helper()
	remote := filepath.Join(p.root, "remote.git")
	sh(t, p.root, "git", "init", "-q", "--bare", "-b", "main", remote)
	sh(t, p.repo, "git", "remote", "add", "origin", remote)
	sh(t, p.repo, "git", "push", "-q", "origin", "main")
	sh(t, p.repo, "git", "fetch", "-q", "origin")
	return remote
}

// TestBranchModeTwoWorkers: with integrate = branch and a remote, two
// workers' issues each end on ralph/<issue> on the remote, rebased onto
// the remote's main and verified; main moves nowhere, and each issue
// notes where its work is, never that it is on main.
func TestBranchModeTwoWorkers(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	remote := p.withRemote(t)
	ids := []string{p.create("one"), p.create("two")}
	pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	s, err := mergeq.LookupStrategy("branch")
	is.NoErr(err)
	verified := 0
	pool.Queue = &mergeq.Queue{Repo: p.repo, Target: "main", Remote: "origin", Strategy: s,
		Verify: func(context.Context, string) error { verified++; return nil }}
	main0 := sh(t, remote, "git", "rev-parse", "main")

	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 2)
	is.Equal(verified, 2)
	is.Equal(sh(t, remote, "git", "rev-parse", "main"), main0) // nothing merged
	is.Equal(sh(t, p.repo, "git", "rev-parse", "main"), main0)
	for _, id := range ids {
		tip := sh(t, remote, "git", "rev-parse", "ralph/"+id)
		is.Equal(sh(t, remote, "git", "rev-parse", tip+"~1"), main0)                 // rebased onto main
		is.Equal(sh(t, remote, "git", "diff", "--name-only", main0, tip), id+".txt") // its own work only
		show := sh(t, p.repo, p.bd, "show", id, "--json")
		is.True(strings.Contains(show, `"status": "closed"`))
		is.True(strings.Contains(show, "ralphd: the work is on origin/ralph/"+id+" at "+tip))
		is.True(!strings.Contains(show, "integrated into")) // no other clone takes it for being on main
	}
}

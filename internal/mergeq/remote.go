package mergeq

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/proc"
)

// remoteTip returns the remote's target once a fetch into ref has brought
// its objects: the commit the remote itself names (git ls-remote), never
// what ref holds. Every agent can write the repository's refs/remotes,
// even sandboxed (its fetches need it), and one that rewrote ref right
// after the fetch would have the queue rebase onto, verify and push a
// commit of its own that the remote does not have. When the remote moved
// since the fetch (another clone pushed), its new tip may not be here
// yet: it is fetched again, a bounded number of times, with the same
// pauses as base (a fetch fails for a moment when another fetch of this
// repository updates ref at the same time).
func (q *Queue) remoteTip(ctx context.Context, ref string) (string, error) {
	var ferr error
	for try := 1; ; try++ {
		tip, err := q.lsRemote(ctx)
		if err != nil {
			return "", err
		}
		if _, err := line(ctx, q.Repo, "rev-parse", "--verify", "-q", tip+"^{commit}"); err == nil {
			return tip, nil
		}
		if try == fetchTries {
			return "", fmt.Errorf("fetch %s: %s/%s is at %s, which its fetches did not bring: %w", q.Remote, q.Remote, q.Target, tip, ferr)
		}
		if try > 1 {
			if err := proc.Sleep(ctx, time.Duration(try)*100*time.Millisecond); err != nil {
				return "", fmt.Errorf("fetch %s: %w", q.Remote, err)
			}
		}
		_, ferr = git.Output(ctx, q.Repo, "fetch", "-q", "--no-tags", q.Remote, "+"+q.ref()+":"+ref)
	}
}

// lsRemote asks the remote where its target is.
func (q *Queue) lsRemote(ctx context.Context) (string, error) {
	out, err := git.Output(ctx, q.Repo, "ls-remote", "--heads", q.Remote, q.ref())
	if err != nil {
		return "", fmt.Errorf("ask %s where %s is: %w", q.Remote, q.Target, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		hash, name, ok := strings.Cut(strings.TrimSpace(l), "\t")
		if ok && name == q.ref() && git.IsHash(hash) {
			return hash, nil
		}
	}
	return "", fmt.Errorf("ask %s where %s is: it has no %s", q.Remote, q.Target, q.ref())
}

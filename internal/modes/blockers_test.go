package modes

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// TestDependentOfAFailedBlocker: a worker claims the dependent y while bd
// counts its blocker x closed (x's agent closed it; its judgement has not
// failed it yet), and holds the claim only after x was reopened and
// released, and before x's retry is held. y is not ready after all: it is
// let go uncounted, and its agent starts only once x's work is on the
// target. It used to start at once (x was not held), and its close failed
// on the open blocker: a counted attempt, and a start too many (the
// flake of workers_scope_reparent).
func TestDependentOfAFailedBlocker(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	x := p.create("blocker")
	y := p.create("dependent", "--deps", x)
	var (
		mu        sync.Mutex
		starts    []string
		yClaimed  = make(chan struct{})
		yDecided  = make(chan struct{})
		decide    sync.Once
		xReadBack int
	)
	decided := func() { decide.Do(func() { close(yDecided) }) }
	wait := func(c chan struct{}, what string) {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Error(what)
		}
	}
	pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
		mu.Lock()
		starts = append(starts, a.Issue.ID)
		n := len(starts)
		mu.Unlock()
		if a.Issue.ID == y {
			decided()
		}
		if a.Issue.ID == x && n == 1 {
			// The agent closes x; the judgement then fails the attempt,
			// once another worker has claimed y.
			if _, err := a.BD.Close(ctx, x, "done"); err != nil {
				return false, err
			}
			wait(yClaimed, "y was never claimed while x was closed")
			return false, nil
		}
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	pool.ReadBack = func(ctx context.Context, claimed beads.Issue) (beads.Issue, bool, error) {
		switch claimed.ID {
		case y:
			select {
			case <-yClaimed:
				return beads.Issue{}, false, nil
			default:
			}
			close(yClaimed)
			// Hold y only once x is reopened and no longer held.
			for n := 0; n < 1500; n++ {
				pool.mu.Lock()
				_, held := pool.held[x]
				pool.mu.Unlock()
				if !held {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		case x:
			mu.Lock()
			xReadBack++
			retry := xReadBack == 2
			mu.Unlock()
			if retry {
				// x's retry is held only once y's holder decided.
				wait(yDecided, "y's holder never decided")
			}
		}
		return beads.Issue{}, false, nil // bd show
	}
	pool.Log = func(e Event) {
		if e.Issue == y && e.Kind == "released" {
			decided()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := pool.Run(ctx)
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 2)
	is.Equal(len(sum.Failed[y]), 0)     // y's early claim was no attempt
	is.Equal(starts, []string{x, x, y}) // y's agent started once, after x's retry
}

package modes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/mergeq"
	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

// sharedTracker makes a seed repository whose tracker is in the stand-in's
// server mode (issue ids prefixed prefix), and a bare remote cloned from
// it: what clones of one project on several machines share. It returns
// the stand-in bd and the three directories.
func sharedTracker(t *testing.T, prefix string) (bin, root, seed, remote string) {
	t.Helper()
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	if root, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	setEnv(t, filepath.Join(root, "home"))
	servers := filepath.Join(root, "servers")
	if err := os.MkdirAll(filepath.Join(servers, "127.0.0.1_45021"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BD_STANDIN_SERVER_ROOT", servers)
	seed, remote = filepath.Join(root, "seed"), filepath.Join(root, "remote.git")
	if err := os.MkdirAll(seed, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, seed, "git", "init", "-q", "-b", "main")
	sh(t, seed, bin, "init", "--prefix", prefix, "--quiet", "--server", "--server-host", "127.0.0.1", "--server-port", "45021", "--external")
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("two clones\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, seed, "git", "add", "-A")
	sh(t, seed, "git", "commit", "-q", "-m", "base")
	sh(t, root, "git", "clone", "-q", "--bare", seed, remote)
	return bin, root, seed, remote
}

// TestTwoClonesOneTrackerBareRemote: two clones, each with its own pool
// of 2 workers, share one tracker (the stand-in's server mode) and a bare
// remote that refuses non-fast-forward updates. Every issue is closed and
// integrated once, every commit reaches the remote, and nothing is forced.
func TestTwoClonesOneTrackerBareRemote(t *testing.T) {
	is := is.New(t)
	t.Setenv("BD_STANDIN_TXN_WINDOW", "5ms")
	bin, root, seed, remote := sharedTracker(t, "tc")
	sh(t, remote, "git", "config", "receive.denyNonFastForwards", "true")
	sh(t, remote, "git", "config", "receive.denyDeletes", "true")
	const n = 12
	for i := 0; i < n; i++ {
		sh(t, seed, bin, "--quiet", "create", fmt.Sprintf("issue %d", i), "--silent")
	}

	var mu sync.Mutex
	worked := map[string][]string{} // issue → clone/worker, from the iterations' own records
	pools := map[string]*Pool{}
	for _, c := range []string{"a", "b"} {
		dir := filepath.Join(root, "clone-"+c)
		sh(t, root, "git", "clone", "-q", remote, dir)
		pools[c] = &Pool{PoolSetup: PoolSetup{
			Workers: 2, Target: "main", Idle: 50 * time.Millisecond,
			Trees: &git.Manager{Repo: dir, Root: filepath.Join(root, "state-"+c, "worktrees")},
			Queue: &mergeq.Queue{Repo: dir, Target: "main", Remote: "origin"},
			Client: func(actor, d string) *beads.Client {
				return &beads.Client{Bin: bin, Dir: d, Actor: actor, Timeout: time.Minute}
			},
			Actor: func(w string) string { return "ralphd/clone-" + c + "/" + w },
			Iterate: byDone(func(ctx context.Context, a Assignment) (bool, error) {
				mu.Lock()
				worked[a.Issue.ID] = append(worked[a.Issue.ID], c+"/"+a.Worker)
				mu.Unlock()
				if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(c+"\n"), 0o644); err != nil {
					return false, err
				}
				time.Sleep(20 * time.Millisecond)
				return commitAndClose(ctx, a)
			}),
		}}
	}
	var wg sync.WaitGroup
	sums := map[string]Summary{}
	for c, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := p.Run(context.Background())
			if err != nil {
				t.Errorf("clone %s: %v", c, err)
			}
			mu.Lock()
			sums[c] = sum
			mu.Unlock()
		}()
	}
	wg.Wait()
	is.Equal(len(worked), n)
	for id, by := range worked {
		if len(by) != 1 {
			t.Errorf("%s worked by %v; failures: a %v b %v", id, by, sums["a"].Failed[id], sums["b"].Failed[id]) // closed once
		}
	}
	is.Equal(len(sums["a"].Integrated)+len(sums["b"].Integrated), n)
	files := sh(t, remote, "git", "ls-tree", "--name-only", "main")
	for id := range worked {
		is.True(strings.Contains(files, id+".txt")) // every commit is on the remote
	}
	// Linear history on the remote: base plus one commit per issue, no
	// merge; the remote refused every non-fast-forward update.
	is.Equal(sh(t, remote, "git", "rev-list", "--count", "main"), fmt.Sprint(n+1))
	is.Equal(sh(t, remote, "git", "rev-list", "--merges", "--count", "main"), "0")
	list := sh(t, filepath.Join(root, "clone-a"), bin, "--quiet", "list", "--all", "--json")
	is.Equal(strings.Count(list, `"status": "closed"`), n)
}

// TestDependentWaitsForBlockerOnRemote: across clones, bd counts a
// blocker closed as soon as the other clone's agent closes it, but its
// work reaches the remote only when that clone's queue pushes it. Clone
// b claims the dependent while clone a is still verifying the blocker:
// b waits, and its worker starts from a remote target that has the
// blocker's work. Clone a notes where the work went on the blocker.
func TestDependentWaitsForBlockerOnRemote(t *testing.T) {
	is := is.New(t)
	bin, root, seed, remote := sharedTracker(t, "rb")
	blocker := sh(t, seed, bin, "--quiet", "create", "blocker", "--silent")
	dependent := sh(t, seed, bin, "--quiet", "create", "dependent", "--silent")
	sh(t, seed, bin, "--quiet", "dep", "add", dependent, blocker)
	sh(t, seed, bin, "--quiet", "label", "add", dependent, "for-b")

	verifying := make(chan struct{})
	release := make(chan struct{})
	var (
		mu      sync.Mutex
		sawWork = map[string]bool{} // dependent's worktree had the blocker's file
		events  []Event
	)
	pool := func(c string, verify func(context.Context, string) error, exclude string) *Pool {
		dir := filepath.Join(root, "clone-"+c)
		sh(t, root, "git", "clone", "-q", remote, dir)
		return &Pool{PoolSetup: PoolSetup{
			Workers: 1, Target: "main", Idle: 50 * time.Millisecond,
			Trees: &git.Manager{Repo: dir, Root: filepath.Join(root, "state-"+c, "worktrees")},
			Queue: &mergeq.Queue{Repo: dir, Target: "main", Remote: "origin", Verify: verify},
			Client: func(actor, d string) *beads.Client {
				return &beads.Client{Bin: bin, Dir: d, Actor: actor, Timeout: time.Minute}
			},
			Actor:      func(w string) string { return "ralphd/clone-" + c + "/" + w },
			StuckLabel: exclude,
			Log: func(e Event) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, e)
			},
			Iterate: byDone(func(ctx context.Context, a Assignment) (bool, error) {
				if a.Issue.ID == dependent {
					_, err := os.Stat(filepath.Join(a.Dir, blocker+".txt"))
					mu.Lock()
					sawWork[c] = err == nil
					mu.Unlock()
				}
				if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(c+"\n"), 0o644); err != nil {
					return false, err
				}
				return commitAndClose(ctx, a)
			}),
		}}
	}
	var once sync.Once
	a := pool("a", func(ctx context.Context, dir string) error {
		once.Do(func() { close(verifying) })
		select {
		case <-release:
		case <-time.After(time.Minute):
		}
		return nil
	}, "for-b") // a leaves the dependent to b
	b := pool("b", nil, "ralph:stuck")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := a.Run(ctx); err != nil {
			t.Errorf("clone a: %v", err)
		}
	}()
	select { // a has closed the blocker and is verifying it
	case <-verifying:
	case <-ctx.Done():
		t.Fatal("clone a never verified the blocker")
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := b.Run(ctx); err != nil {
			t.Errorf("clone b: %v", err)
		}
	}()
	time.Sleep(1500 * time.Millisecond) // b claims the dependent, and must wait
	close(release)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	waited := false
	for _, e := range events {
		if e.Kind == "waiting" && e.Issue == dependent && strings.Contains(e.Detail, blocker) {
			waited = true
		}
	}
	is.True(waited)           // b waited for the blocker's work
	is.True(sawWork["b"])     // and its worker started with it
	is.Equal(len(sawWork), 1) // the dependent was worked once, by b
	shown := sh(t, seed, bin, "--quiet", "show", blocker, "--json")
	is.True(strings.Contains(shown, "ralphd: integrated into origin/main at "))
	files := sh(t, remote, "git", "ls-tree", "--name-only", "main")
	is.True(strings.Contains(files, blocker+".txt") && strings.Contains(files, dependent+".txt"))
}

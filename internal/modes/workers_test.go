package modes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

func sh(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// project is a repo with main checked out and a stand-in bd tracker.
type project struct {
	t    testing.TB
	bd   string
	repo string
	root string
}

// setEnv isolates git and names the committer, in this process and the
// processes it starts.
func setEnv(t testing.TB, home string) {
	for k, v := range map[string]string{
		"HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": filepath.Join(home, "gitconfig"),
		"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@x",
		"BEADS_ACTOR": "", "BEADS_DIR": "",
	} {
		if tt, ok := t.(*testing.T); ok {
			tt.Setenv(k, v)
		} else {
			os.Setenv(k, v)
		}
	}
}

func newProject(t *testing.T) *project {
	t.Helper()
	bin, err := standintest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	setEnv(t, filepath.Join(root, "home"))
	p := &project{t: t, bd: bin, repo: filepath.Join(root, "repo"), root: root}
	if err := os.MkdirAll(p.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.repo, "shared.txt"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, p.repo, "git", "init", "-q", "-b", "main")
	sh(t, p.repo, p.bd, "init", "--prefix", "wk", "--quiet")
	sh(t, p.repo, "git", "add", "-A")
	sh(t, p.repo, "git", "commit", "-q", "-m", "base")
	return p
}

func (p *project) create(title string, args ...string) string {
	p.t.Helper()
	return sh(p.t, p.repo, append([]string{p.bd, "--quiet", "create", title, "--silent"}, args...)...)
}

func (p *project) pool(k int, it func(context.Context, Assignment) (bool, error)) *Pool {
	return &Pool{PoolSetup: PoolSetup{
		Workers: k, Target: "main", StuckLabel: "ralph:stuck", Idle: 50 * time.Millisecond,
		Trees: &git.Manager{Repo: p.repo, Root: filepath.Join(p.root, "state", "worktrees")},
		Queue: &mergeq.Queue{Repo: p.repo, Target: "main"},
		Client: func(actor, dir string) *beads.Client {
			return &beads.Client{Bin: p.bd, Dir: dir, Actor: actor, Timeout: time.Minute}
		},
		Actor:   func(w string) string { return "ralphd/test/" + w },
		Iterate: byDone(it),
	}}
}

// byDone is the Iteration of a fake that says whether it finished its
// issue, or how it failed.
func byDone(f func(context.Context, Assignment) (bool, error)) Iteration {
	return func(ctx context.Context, a Assignment) Ended {
		done, err := f(ctx, a)
		switch {
		case err != nil:
			return Ended{Kind: Errored, Err: err}
		case done:
			return Ended{Kind: Finished}
		}
		return Ended{Kind: Unfinished}
	}
}

// commitAndClose is the end of a fake iteration: commit everything in the
// worktree and close the issue through bd, from the worktree.
func commitAndClose(ctx context.Context, a Assignment) (bool, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", "git add -A && git commit -q -m \"$1\"", "sh", "work on "+a.Issue.ID)
	cmd.Dir = a.Dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, fmt.Errorf("commit: %v: %s", err, out)
	}
	if _, err := a.BD.Close(ctx, a.Issue.ID, "done, tests pass"); err != nil {
		return false, err
	}
	return true, nil
}

// record is one worker's own record of working on an issue.
type record struct {
	worker, issue string
	start, closed time.Time
}

// TestDependencyChainThreeWorkers: 3 workers over 9 issues, 4 of them in
// a chain; the chain's order holds and nothing is worked twice.
func TestDependencyChainThreeWorkers(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	chain := []string{p.create("chain 1")}
	for i := 2; i <= 4; i++ {
		chain = append(chain, p.create(fmt.Sprintf("chain %d", i), "--deps", chain[len(chain)-1]))
	}
	for i := 0; i < 5; i++ {
		p.create(fmt.Sprintf("free %d", i))
	}
	var mu sync.Mutex
	var recs []record
	var pool *Pool
	statusSeen := false
	pool = p.pool(3, func(ctx context.Context, a Assignment) (bool, error) {
		r := record{worker: a.Worker, issue: a.Issue.ID, start: time.Now()}
		for _, st := range pool.Status() {
			if st.Worker == a.Worker {
				mu.Lock()
				statusSeen = statusSeen || (st.Issue == a.Issue.ID && st.Worktree == a.Dir && st.Attempt == 1)
				mu.Unlock()
			}
		}
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
			return false, err
		}
		time.Sleep(30 * time.Millisecond)
		done, err := commitAndClose(ctx, a)
		r.closed = time.Now()
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
		return done, err
	})
	pool.StatusFile = filepath.Join(p.root, "workers.json")
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.True(statusSeen) // status names each worker's worktree, issue and attempt
	b, err := os.ReadFile(pool.StatusFile)
	is.NoErr(err)
	final, err := ParseStatusFile(b)
	is.NoErr(err)
	is.Equal(final.PID, os.Getpid())
	is.Equal(len(final.Workers), 3)
	for _, st := range final.Workers {
		is.Equal(st.Issue, "") // all idle at the end
	}
	is.Equal(len(sum.Integrated), 9)
	is.Equal(len(sum.Failed), 0)
	seen := map[string]record{}
	workers := map[string]bool{}
	for _, r := range recs {
		_, dup := seen[r.issue]
		is.True(!dup) // never worked twice
		seen[r.issue] = r
		workers[r.worker] = true
	}
	is.Equal(len(seen), 9)
	is.True(len(workers) > 1) // the work was shared
	for i := 1; i < len(chain); i++ {
		is.True(seen[chain[i]].start.After(seen[chain[i-1]].closed)) // order respected
	}
	files := sh(t, p.repo, "git", "ls-files")
	for id := range seen {
		is.True(strings.Contains(files, id+".txt")) // every issue's work is on main
	}
	is.Equal(sh(t, p.repo, "git", "status", "--porcelain", "--", ".", ":(exclude).beads"), "")
	left, err := git.List(context.Background(), p.repo)
	is.NoErr(err)
	is.Equal(len(left), 1+3) // main and the three reusable worker worktrees
}

// TestSameFileTwoWorkers: both edit the same line; the second is
// reopened with the conflict noted, retried on the fresh base, and no work
// is lost.
func TestSameFileTwoWorkers(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	a, b := p.create("edit A"), p.create("edit B")
	var start sync.WaitGroup
	start.Add(2)
	first := map[string]bool{}
	var mu sync.Mutex
	pool := p.pool(2, func(ctx context.Context, as Assignment) (bool, error) {
		mu.Lock()
		firstTry := !first[as.Issue.ID]
		first[as.Issue.ID] = true
		mu.Unlock()
		if firstTry {
			start.Done()
			start.Wait() // both work at once, on the same base
		}
		f := filepath.Join(as.Dir, "shared.txt")
		old, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		body := strings.Replace(string(old), "base\n", "base edited by "+as.Issue.ID+"\n", 1)
		if body == string(old) {
			body = string(old) + "and by " + as.Issue.ID + "\n"
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, as)
	})
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 2)
	is.Equal(len(sum.Failed), 1) // one conflict, one failed attempt
	for id, why := range sum.Failed {
		is.True(strings.Contains(why[0], "shared.txt"))
		notes := sh(t, p.repo, p.bd, "show", id, "--json")
		is.True(strings.Contains(notes, "shared.txt")) // the note names the file
	}
	final := sh(t, p.repo, "cat", "shared.txt")
	is.True(strings.Contains(final, a) && strings.Contains(final, b)) // both edits are on main
	is.True(sh(t, p.repo, "git", "branch", "--list", mergeq.KeptPrefix+"*") != "")
}

// TestHopelessIssueEndsStuck: failed attempts count; after MaxAttempts the
// issue is labelled stuck and nobody claims it again.
func TestHopelessIssueEndsStuck(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	id := p.create("impossible")
	tries := 0
	var mu sync.Mutex
	pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
		mu.Lock()
		tries++
		mu.Unlock()
		return false, nil
	})
	pool.Log = func(e Event) { t.Logf("%s %s %s %s", e.Worker, e.Issue, e.Kind, e.Detail) } // a failure's story
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(tries, DefaultMaxAttempts)
	is.Equal(sum.Stuck, []string{id})
	out := sh(t, p.repo, p.bd, "show", id, "--json")
	is.True(strings.Contains(out, "ralph:stuck"))
	is.True(strings.Contains(out, `"status": "open"`)) // released, not held
}

// TestDependentStartsFromItsBlockersWork: bd calls an issue ready as soon
// as its blocker is closed, which an agent does before ralphd has judged
// and integrated the blocker's work. The dependent must not start from a
// target that lacks that work; if the blocker's work never reaches the
// target, the dependent is let go, not worked and not counted.
func TestDependentStartsFromItsBlockersWork(t *testing.T) {
	for _, integrate := range []bool{true, false} {
		t.Run(fmt.Sprintf("blocker integrated=%v", integrate), func(t *testing.T) {
			is := is.New(t)
			p := newProject(t)
			blocker := p.create("blocker")
			dependent := p.create("dependent", "--deps", blocker)
			var mu sync.Mutex
			sawBlocker := map[string]bool{} // per attempt on the dependent: its work was in the worktree
			tries := map[string]int{}
			pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
				mu.Lock()
				tries[a.Issue.ID]++
				n := tries[a.Issue.ID]
				mu.Unlock()
				if a.Issue.ID == dependent {
					_, err := os.Stat(filepath.Join(a.Dir, blocker+".txt"))
					mu.Lock()
					sawBlocker[fmt.Sprint(n)] = err == nil
					mu.Unlock()
					if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("x\n"), 0o644); err != nil {
						return false, err
					}
					return commitAndClose(ctx, a)
				}
				if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("x\n"), 0o644); err != nil {
					return false, err
				}
				done, err := commitAndClose(ctx, a)
				if err != nil {
					return false, err
				}
				// The close is in bd; the other worker is idle and claims
				// the dependent while this one is still "judging".
				time.Sleep(400 * time.Millisecond)
				if !integrate && n == 1 {
					return false, nil // the checks failed: reopened, not integrated
				}
				return done, nil
			})
			sum, err := pool.Run(context.Background())
			is.NoErr(err)
			is.Equal(len(sum.Integrated), 2)
			mu.Lock()
			defer mu.Unlock()
			is.True(len(sawBlocker) >= 1)
			for attempt, saw := range sawBlocker {
				if !saw {
					t.Errorf("attempt %s on the dependent started without the blocker's work", attempt)
				}
			}
			is.Equal(tries[dependent], 1) // never worked before its blocker was on main
			is.Equal(len(sum.Failed[dependent]), 0)
		})
	}
}

// TestTakeHold: a worker that wins a claim on an issue another worker of
// the pool still holds. If the holder is giving it back (it failed, and
// released it in bd), the claim is fair: the worker waits for the holder
// and takes the issue, which stays its own in bd. (A run once ended with
// an issue one attempt short: the fair claim was taken for an agent's
// release behind the holder's back, the issue given back to the holder's
// actor, who had already let go of it, and nobody worked it again.) If
// the holder is not letting go, the claim is a lost race: the issue goes
// back to the holder.
func TestTakeHold(t *testing.T) {
	for _, lettingGo := range []bool{true, false} {
		t.Run(fmt.Sprintf("holder letting go=%v", lettingGo), func(t *testing.T) {
			is := is.New(t)
			p := newProject(t)
			id := p.create("contested")
			pool := p.pool(2, func(context.Context, Assignment) (bool, error) { return false, nil })
			ctx := context.Background()
			a, b := pool.actor("w1"), pool.actor("w2")
			_, err := pool.Client(a, p.repo).Claim(ctx, id)
			is.NoErr(err)
			ha, other := pool.hold(id, a)
			is.True(other == nil)
			if lettingGo {
				is.NoErr(pool.giveUp(ctx, a, id, nil)) // the holder gives it back in bd
			} else {
				_, err := pool.Client(a, p.repo).Release(ctx, id) // an agent, behind the holder's back
				is.NoErr(err)
			}
			won, err := pool.Client(b, p.repo).Claim(ctx, id)
			is.NoErr(err)
			pool.busy = 2
			go func() {
				time.Sleep(50 * time.Millisecond)
				pool.release(id, ha) // the holder is through
			}()
			h := pool.takeHold(ctx, "w2", b, beads.ClaimResult{Issue: won, Outcome: beads.Won})
			shown := sh(t, p.repo, p.bd, "show", id, "--json")
			if lettingGo {
				is.True(h != nil)                                       // w2 holds it
				is.True(strings.Contains(shown, `"assignee": "`+b+`"`)) // and it is w2's in bd
			} else {
				is.True(h == nil)                                       // a lost race
				is.True(strings.Contains(shown, `"assignee": "`+a+`"`)) // given back to the holder
			}
		})
	}
}

// TestPoolRecoversKilledAdd: the run before was killed mid `git worktree
// add` of a worker's worktree, which leaves an empty commondir and fails
// every list of worktrees, the merge queue's recovery among them. The
// next run starts, and works its issue.
func TestPoolRecoversKilledAdd(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	id := p.create("one")
	pool := p.pool(1, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, "f.txt"), []byte("f\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	_, _, err := pool.Trees.Open(context.Background(), "w1", "main")
	is.NoErr(err)
	admin := filepath.Join(p.repo, ".git", "worktrees", "w1")
	for name, body := range map[string]string{"locked": "initializing", "HEAD": strings.Repeat("0", 40) + "\n", "commondir": ""} {
		is.NoErr(os.WriteFile(filepath.Join(admin, name), []byte(body), 0o644))
	}
	is.NoErr(os.Remove(filepath.Join(admin, "index")))
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(sum.Integrated, []string{id})
}

package modes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/mergeq"
)

// TestNextClaimBesideJudgement: iterations that call AgentEnded have the
// pool claim the worker's next issue while they are still being judged.
// Every issue is integrated once, a dependent still starts from a target
// that has its blocker's work, and no claim is left behind.
func TestNextClaimBesideJudgement(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	chain := []string{p.create("chain 1")}
	for i := 2; i <= 3; i++ {
		chain = append(chain, p.create(fmt.Sprintf("chain %d", i), "--deps", chain[len(chain)-1]))
	}
	for i := 0; i < 6; i++ {
		p.create(fmt.Sprintf("free %d", i))
	}
	var mu sync.Mutex
	worked := map[string]int{}
	pool := p.pool(3, func(ctx context.Context, a Assignment) (bool, error) {
		for i := 1; i < len(chain); i++ {
			if a.Issue.ID == chain[i] {
				if _, err := os.Stat(filepath.Join(a.Dir, chain[i-1]+".txt")); err != nil {
					return false, fmt.Errorf("%s started without its blocker's work: %w", a.Issue.ID, err)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
			return false, err
		}
		done, err := commitAndClose(ctx, a)
		if a.AgentEnded == nil {
			return false, errors.New("no AgentEnded in the assignment")
		}
		a.AgentEnded() // the agent ended: the judgement follows
		mu.Lock()
		worked[a.Issue.ID]++
		mu.Unlock()
		return done, err
	})
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 9)
	for id, n := range worked {
		if n != 1 {
			t.Errorf("%s worked %d times", id, n)
		}
	}
	is.Equal(len(sum.Failed), 0)
	list := sh(t, p.repo, p.bd, "--quiet", "list", "--status", "in_progress", "--json")
	is.Equal(strings.TrimSpace(list), "[]") // no claim left behind
	for _, id := range chain {
		sh(t, p.repo, "git", "cat-file", "-e", "main:"+id+".txt") // on the target
	}
	queued, _ := filepath.Glob(filepath.Join(pool.Trees.Root, ".queued-*"))
	is.Equal(len(queued), 0)
	trees, err := git.List(context.Background(), p.repo)
	is.NoErr(err)
	for _, tr := range trees {
		if strings.Contains(tr.Dir, "mergeq") {
			t.Errorf("the merge queue's worktree is left: %s", tr.Dir)
		}
	}
}

// TestDrainGivesBackTheNextClaim: a pool that drains while a worker holds
// the issue it claimed beside its last judgement gives that issue back,
// uncounted.
func TestDrainGivesBackTheNextClaim(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	for i := 0; i < 6; i++ {
		p.create(fmt.Sprintf("issue %d", i))
	}
	errCap := errors.New("the run's cap")
	pool := p.pool(2, nil)
	pool.Iterate = func(ctx context.Context, a Assignment) Ended {
		a.AgentEnded()
		return Ended{Kind: Stopped, Err: errCap}
	}
	sum, err := pool.Run(context.Background())
	is.True(errors.Is(err, errCap)) // Run returns what stopped it
	is.Equal(len(sum.Failed), 0)    // a stop is not an attempt
	list := sh(t, p.repo, p.bd, "--quiet", "list", "--status", "in_progress", "--json")
	is.Equal(strings.TrimSpace(list), "[]") // the claims made beside the judgements are given back
}

// TestRecoverQueued: work a stop left in the merge queue is settled at
// the next start. Work whose rebased result reached the target is done;
// work that did not is kept on a wip branch and its issue reopened, with
// a note, and worked again; a marker that is not one is dropped.
func TestRecoverQueued(t *testing.T) {
	for _, tc := range []struct {
		name    string
		landed  bool
		garbage bool
		other   bool // the marker names an issue another actor closed
	}{
		{name: "reached the target", landed: true},
		{name: "did not reach the target"},
		{name: "garbage marker", garbage: true},
		{name: "someone else's closed issue", other: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			p := newProject(t)
			id := p.create("handed over")
			actor := "ralphd/test/w1"
			if tc.other {
				actor = "a-person"
			}
			c := &beads.Client{Bin: p.bd, Dir: p.repo, Actor: actor}
			ctx := context.Background()
			_, err := c.Claim(ctx, id)
			is.NoErr(err)
			// The worker's work, handed over as one commit.
			sh(t, p.repo, "git", "checkout", "-q", "-b", "side")
			is.NoErr(os.WriteFile(filepath.Join(p.repo, id+".txt"), []byte("handed\n"), 0o644))
			sh(t, p.repo, "git", "add", id+".txt")
			sh(t, p.repo, "git", "commit", "-q", "-m", "work")
			commit := sh(t, p.repo, "git", "rev-parse", "HEAD")
			sh(t, p.repo, "git", "checkout", "-q", "main")
			if tc.landed {
				sh(t, p.repo, "git", "merge", "-q", "--ff-only", "side")
			}
			sh(t, p.repo, "git", "branch", "-D", "side")
			_, err = c.Close(ctx, id, "done, tests pass")
			is.NoErr(err)
			pool := p.pool(1, nil)
			is.NoErr(os.MkdirAll(pool.Trees.Root, 0o755))
			mark := id + "\n" + commit + "\n" + commit + "\n"
			if !tc.landed {
				mark = id + "\n" + commit + "\n\n"
			}
			if tc.garbage {
				mark = "--flag\nnot a commit\n"
			}
			is.NoErr(os.WriteFile(filepath.Join(pool.Trees.Root, ".queued-w1"), []byte(mark), 0o600))
			var worked []string
			pool.Iterate = byDone(func(ctx context.Context, a Assignment) (bool, error) {
				worked = append(worked, a.Issue.ID)
				if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("again\n"), 0o644); err != nil {
					return false, err
				}
				return commitAndClose(ctx, a)
			})
			_, err = pool.Run(ctx)
			is.NoErr(err)
			left, _ := filepath.Glob(filepath.Join(pool.Trees.Root, ".queued-*"))
			is.Equal(len(left), 0)
			is2, err := c.Show(ctx, id)
			is.NoErr(err)
			is.Equal(is2.Status, beads.StatusClosed)
			switch {
			case tc.landed || tc.garbage || tc.other:
				is.Equal(len(worked), 0)                             // not reopened
				is.True(!strings.Contains(is2.Notes, "merge queue")) // nor noted
			default:
				is.Equal(worked, []string{id})
				is.True(strings.Contains(is2.Notes, "handed to the merge queue"))
				wips := sh(t, p.repo, "git", "for-each-ref", "--format=%(objectname)", "refs/heads/"+git.WipPrefix+"w1/")
				is.Equal(wips, commit) // the handed-over commit is kept
			}
		})
	}
}

// FuzzParseQueued: whatever a queued marker holds, parseQueued does not
// panic, and what it accepts is an issue id and commit ids that print
// back to the same marker.
func FuzzParseQueued(f *testing.F) {
	c := strings.Repeat("a", 40)
	for _, s := range []string{"wk-1\n" + c + "\n\n", "wk-1\n" + c + "\n" + c + "\n", "", "\n\n\n", "-x\n" + c + "\n\n", "wk 1\n" + c + "\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := parseQueued(b)
		if !ok {
			return
		}
		if !git.IsHash(m.commit) || (m.rebased != "" && !git.IsHash(m.rebased)) || m.issue == "" || strings.HasPrefix(m.issue, "-") {
			t.Fatalf("accepted %q as %+v", b, m)
		}
		if got := m.issue + "\n" + m.commit + "\n" + m.rebased + "\n"; got != strings.TrimSuffix(string(b), "\n")+"\n" {
			t.Fatalf("%q parsed to %+v, which prints as %q", b, m, got)
		}
	})
}

// TestNextClaimOfADependentWhoseBlockerFails: the claim made beside a
// judgement can take a dependent while bd counts its blocker closed; when
// the judgement then fails the blocker (reopened), the dependent is let
// go, uncounted, and worked only once the blocker's work is on the
// target.
func TestNextClaimOfADependentWhoseBlockerFails(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	blocker := p.create("blocker")
	dependent := p.create("dependent", "--deps", blocker)
	var mu sync.Mutex
	var order []string
	tries := 0
	pool := p.pool(1, func(ctx context.Context, a Assignment) (bool, error) {
		mu.Lock()
		order = append(order, a.Issue.ID)
		mu.Unlock()
		if a.Issue.ID == dependent {
			if _, err := os.Stat(filepath.Join(a.Dir, blocker+".txt")); err != nil {
				return false, fmt.Errorf("the dependent started without its blocker's work: %w", err)
			}
		}
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("x\n"), 0o644); err != nil {
			return false, err
		}
		done, err := commitAndClose(ctx, a)
		if err != nil {
			return false, err
		}
		a.AgentEnded()
		if a.Issue.ID == blocker && tries == 0 {
			tries++
			// The next claim takes the dependent: the blocker is closed.
			for i := 0; i < 200; i++ {
				if strings.Contains(sh(t, p.repo, p.bd, "--quiet", "show", dependent, "--json"), `"in_progress"`) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			return false, nil // the judgement fails the blocker
		}
		return done, nil
	})
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 2)
	is.Equal(order, []string{blocker, blocker, dependent})
	is.Equal(len(sum.Failed[dependent]), 0) // letting it go is not an attempt
}

// TestMarkersThatAreNotFilesDoNotHang: a FIFO, a directory or a link in
// place of a pending or queued marker (an agent without the sandbox can
// write the state directory) is dropped at the start: the run goes on,
// and nothing blocks on reading it.
func TestMarkersThatAreNotFilesDoNotHang(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	p.create("one")
	pool := p.pool(1, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("x\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	is.NoErr(os.MkdirAll(pool.Trees.Root, 0o755))
	is.NoErr(syscall.Mkfifo(filepath.Join(pool.Trees.Root, ".queued-w1"), 0o600))
	is.NoErr(syscall.Mkfifo(filepath.Join(pool.Trees.Root, ".pending-w1"), 0o600))
	is.NoErr(os.Mkdir(filepath.Join(pool.Trees.Root, ".queued-w2"), 0o755))
	is.NoErr(os.Symlink("/dev/zero", filepath.Join(pool.Trees.Root, ".pending-w2")))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := pool.Run(ctx)
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 1)
	left, _ := filepath.Glob(filepath.Join(pool.Trees.Root, ".*-w*"))
	is.Equal(len(left), 0)
}

// waitingStrategy lands nothing: the work waits for someone outside
// ralphd, as a pull request does.
type waitingStrategy struct{}

func (waitingStrategy) Land(_ context.Context, _ *mergeq.Queue, w mergeq.Work) (mergeq.Landing, error) {
	return mergeq.Landing{Outcome: mergeq.Waiting, Commit: w.Commit, Why: "a person reviews it"}, nil
}

func (waitingStrategy) Landed(context.Context, *mergeq.Queue, string) bool { return false }

// TestWaitingWorkIsNeitherFailedNorIntegrated: the pool acts on the
// queue's outcome, not on its strategy. Work that waits is not a failed
// attempt (the issue stays closed) and is not counted integrated.
func TestWaitingWorkIsNeitherFailedNorIntegrated(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	id := p.create("reviewed elsewhere")
	before := sh(t, p.repo, "git", "rev-parse", "main")
	pool := p.pool(1, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, "w.txt"), []byte("w\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	pool.Queue.Strategy = waitingStrategy{}
	var mu sync.Mutex
	var waiting []Event
	pool.Log = func(e Event) {
		if e.Kind == "waiting" {
			mu.Lock()
			waiting = append(waiting, e)
			mu.Unlock()
		}
	}
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 0) // not integrated
	is.Equal(len(sum.Failed), 0)     // not a failed attempt
	is.Equal(len(waiting), 1)
	is.Equal(waiting[0].Issue, id)
	is.Equal(waiting[0].Detail, "a person reviews it")                                         // the strategy's word
	is.True(strings.Contains(sh(t, p.repo, p.bd, "show", id, "--json"), `"status": "closed"`)) // not reopened
	is.Equal(sh(t, p.repo, "git", "rev-parse", "main"), before)                                // the strategy moved nothing
}

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

	"github.com/ralphd/ralphd/internal/git"
)

// TestAgentMovesTargetAndOtherBranch: one worker's agent, while another
// worker's agent runs beside it, moves the target to a commit of its own
// and moves the other worker's branch to it too. Both moves are put back
// and reported, the foreign commit is kept on a branch, both iterations
// are charged (their first attempts fail), and the retries integrate only
// verified work: the target never holds the foreign commit.
func TestAgentMovesTargetAndOtherBranch(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	attacker := p.create("attacker")
	victim := p.create("victim")
	var (
		mu        sync.Mutex
		tries     = map[string]int{}
		evil      string
		orphan    string
		moves     []RefMove
		victimIn  = make(chan Assignment, 1)
		attacked  = make(chan struct{})
		attackOne sync.Once
	)
	pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
		mu.Lock()
		tries[a.Issue.ID]++
		n := tries[a.Issue.ID]
		mu.Unlock()
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
			return false, err
		}
		if n == 1 {
			switch a.Issue.ID {
			case victim:
				victimIn <- a
				select {
				case <-attacked:
				case <-time.After(time.Minute):
					t.Error("the attacker never ran")
				}
			case attacker:
				var v Assignment
				select {
				case v = <-victimIn:
				case <-time.After(time.Minute):
					t.Error("the victim never ran")
				}
				// A commit of the attacker's own, then the two moves.
				x := sh(t, a.Dir, "sh", "-c", "echo unverified > evil.txt && git add evil.txt && git commit -q -m evil && git rev-parse HEAD && git reset -q --hard HEAD~1")
				mu.Lock()
				evil = x
				mu.Unlock()
				sh(t, a.Dir, "git", "update-ref", "refs/heads/main", x)
				// The victim's branch goes to a commit that drops its base (a
				// commit on top of it would pass for the victim's own: only
				// the sandbox prevents that).
				y := sh(t, a.Dir, "sh", "-c", "git commit-tree -m orphan $(git rev-parse HEAD^{tree})")
				mu.Lock()
				orphan = y
				mu.Unlock()
				sh(t, a.Dir, "git", "update-ref", "refs/heads/"+v.Branch, y)
				attackOne.Do(func() { close(attacked) })
			}
		}
		return commitAndClose(ctx, a)
	})
	pool.RefMoved = func(m RefMove) {
		mu.Lock()
		defer mu.Unlock()
		moves = append(moves, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := pool.Run(ctx)
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 2)

	// Both moves were found and put back; both windows were charged.
	refs := map[string]bool{}
	for _, m := range moves {
		is.NoErr(m.Err)
		refs[m.Ref] = true
		if m.Ref == "refs/heads/main" {
			is.Equal(m.Got, evil)
		} else { // the victim's agent committed on top of what it found
			is.NoErr(exec.Command("git", "-C", p.repo, "merge-base", "--is-ancestor", orphan, m.Got).Run())
		}
		charged := map[string]bool{}
		for _, s := range m.Suspects {
			charged[s.Issue] = s.Charged
		}
		is.True(charged[attacker]) // the guilty window
		is.True(charged[victim])   // and the one beside it: ralphd cannot tell
	}
	is.True(refs["refs/heads/main"])
	is.True(refs["refs/heads/"+git.Branch("w1")] || refs["refs/heads/"+git.Branch("w2")])
	is.Equal(len(sum.Failed[attacker]), 1)
	is.Equal(len(sum.Failed[victim]), 1)
	is.True(strings.Contains(sum.Failed[victim][0], "moved"))

	// The target holds both issues' verified work and never the foreign
	// commit; that commit is kept on a branch.
	for _, id := range []string{attacker, victim} {
		is.Equal(sh(t, p.repo, "git", "show", "main:"+id+".txt"), id)
	}
	if err := exec.Command("git", "-C", p.repo, "merge-base", "--is-ancestor", evil, "main").Run(); err == nil {
		t.Fatal("the foreign commit is on the target")
	}
	kept := sh(t, p.repo, "git", "for-each-ref", "--format=%(objectname)", "refs/heads/"+git.MovedPrefix)
	is.True(strings.Contains(kept, evil))
	keeps := false
	for _, k := range strings.Fields(kept) {
		keeps = keeps || exec.Command("git", "-C", p.repo, "merge-base", "--is-ancestor", orphan, k).Run() == nil
	}
	is.True(keeps) // what the victim's branch was moved to is kept too
	is.Equal(sh(t, p.repo, "git", "status", "--porcelain", "--", ".", ":(exclude).beads"), "")
}

// TestMoveAfterTheLastIntegration: a move made after every window ended
// is found when the pool ends, put back, and charged to nobody.
func TestMoveAfterTheLastIntegration(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	p.create("one")
	var moves []RefMove
	pool := p.pool(1, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, "one.txt"), []byte("one\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	pool.RefMoved = func(m RefMove) { moves = append(moves, m) }
	pool.Log = func(e Event) {
		if e.Kind == "integrated" { // the last step: move the target behind the pool's back
			sh(t, p.repo, "git", "update-ref", "refs/heads/main", "main~1")
		}
	}
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 1)
	is.Equal(len(moves), 1)
	is.Equal(len(moves[0].Suspects), 0) // every agent had stopped when the refs were last found in place
	is.Equal(sh(t, p.repo, "git", "rev-list", "--count", "main"), "2")
	is.Equal(sh(t, p.repo, "git", "status", "--porcelain", "--", ".", ":(exclude).beads"), "")
}

// TestCleanRunChargesNothing: eight workers with quick agents that only
// commit their own file and close their issue. Windows end, worktrees
// are reset and work is handed over all at once, so the checks of the
// refs run while workers move their own refs on; none of that may read
// as a move behind ralphd's back. (A check that read a worker's refs as
// settled, then compared git with the state the worker had gone on to,
// charged it with a move "from nothing".)
func TestCleanRunChargesNothing(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	const n = 32
	for i := range n {
		p.create(fmt.Sprintf("issue %d", i))
	}
	var (
		mu    sync.Mutex
		moves []RefMove
	)
	pool := p.pool(8, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
			return false, err
		}
		if a.AgentEnded != nil {
			a.AgentEnded()
		}
		return commitAndClose(ctx, a)
	})
	pool.RefMoved = func(m RefMove) {
		mu.Lock()
		defer mu.Unlock()
		moves = append(moves, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := pool.Run(ctx)
	is.NoErr(err)
	mu.Lock()
	defer mu.Unlock()
	for _, m := range moves {
		t.Errorf("charged with a move no one made: %s", m.String())
	}
	is.Equal(len(sum.Integrated), n)
}

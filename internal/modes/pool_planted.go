package modes

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/git"
)

// An agent can plant a FIFO, or a link to /dev/zero, where git opens a
// file (a loose ref, a reflog, a worktree's HEAD or index): every git
// call that reads it would then block for its timeout, again and again.
// The pool removes what is planted there (gitscrub) at the start, at
// each window's end, and, through the queue, before each hand-over and
// integration, and charges it like a move of a ref: to every iteration
// whose window was open since a scrub last found nothing.
//
// Those scrubs come after the agent whose window ends, but the other
// workers' agents run meanwhile: one can plant a FIFO just before another
// worker's git call. So the pool also scrubs every scrubEvery while it
// runs; a scrub lets go of a git already waiting on a FIFO it removes,
// which bounds such a wait to about scrubEvery.

// scrubEvery is how often the pool scrubs while it runs.
const scrubEvery = 2 * time.Second

// prepareScrub names the repository's git directories and what each of
// the pool's worktrees' HEAD holds, for the scrubs, and scrubs once
// before the pool's first git work (what is found then is reported, and
// charged to nobody). Then it scrubs every scrubEvery until stop is
// called.
func (p *Pool) prepareScrub(ctx context.Context) (stop func(), err error) {
	common, err := git.CommonDir(ctx, p.Queue.Repo)
	if err != nil {
		return nil, fmt.Errorf("workers: find the git directory: %w", err)
	}
	r := &git.Scrubber{Common: common, Heads: map[string]string{}}
	// The main checkout's HEAD as it is now, before any agent ran.
	if head, err := atomicfile.Read(filepath.Join(r.Common, "HEAD"), git.MaxRef); err == nil {
		r.Heads[p.Queue.Repo] = strings.TrimSpace(string(head))
	}
	for i := 1; i <= max(1, p.Workers); i++ {
		r.Heads[filepath.Join(p.Trees.Root, Name(i))] = "ref: refs/heads/" + git.Branch(Name(i))
	}
	p.scrubRepo = r
	if err := p.scrub(""); err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	p.Queue.Scrub = func() error { return p.scrub("") }
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(scrubEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := p.scrub(""); err != nil {
					p.log(Event{Kind: "planted", Detail: err.Error()})
				}
			}
		}
	}()
	return func() { close(done); <-ended }, nil
}

// scrub removes what is planted where git opens files, and charges each
// finding like a move of a ref. With a worker named (at its window's end,
// when no git of the pool's adds or removes its worktree), that worker's
// worktree is checked whole: its HEAD, git directory and .git file, and
// its files (gitscrub.ScrubTree): the hand-over's add and the judgement's
// status read every .gitignore there.
func (p *Pool) scrub(worker string) error {
	if p.scrubRepo == nil {
		return nil
	}
	var owned []string
	if worker != "" {
		owned = append(owned, filepath.Join(p.Trees.Root, worker))
	}
	found, err := p.scrubRepo.Scrub(owned...)
	if worker != "" && err == nil {
		found, err = p.scrubTree(worker, owned[0], found)
	}
	for _, f := range found {
		p.moved(git.Move{Ref: f.Path, Planted: f.String(), Err: f.Err}, f.Since)
	}
	if err != nil {
		return fmt.Errorf("remove what was planted in the git directory: %w", err)
	}
	return nil
}

// scrubTree adds to found what gitscrub.ScrubTree finds in worker's
// worktree, dir; each is charged from when a scrub of that worktree last
// found nothing there (its files are looked at only at its windows' ends).
func (p *Pool) scrubTree(worker, dir string, found []git.Planted) ([]git.Planted, error) {
	started := time.Now()
	inTree, err := git.ScrubTree(dir)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.treeClean == nil {
		p.treeClean = map[string]time.Time{}
	}
	for i := range inTree {
		inTree[i].Since = p.treeClean[worker]
	}
	if len(inTree) == 0 && err == nil {
		p.treeClean[worker] = started
	}
	return append(found, inTree...), err
}

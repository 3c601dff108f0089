package modes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/git"
)

// The refs a pool owns: the target (the merge queue's), and each worker's
// branch and worktree HEAD. Every agent can write the repository's refs
// (its commits need it), so one worker's agent could move another's
// branch, repoint its HEAD, or move the target. The pool records where it
// left each worker's refs after every step it makes (the worktree opened
// at the target, the agent's iteration, which may only add commits on top
// of the base, the integration), and checks them, with the target, at
// each window's end, before each integration (in the queue, under its
// lock) and when the pool ends. A move it did not make is put back, what
// it pointed at is kept on a workertree.MovedPrefix branch, and it is
// reported to RefMoved with the iterations that may have made it: every
// one whose agent window was open since the refs were last found in
// place. Those not yet integrated are charged: their attempt fails, and
// their work stays on a branch.

// RefMove is a move of a ref the pool owns that it did not make.
type RefMove struct {
	git.Move
	// Suspects are the iterations whose agent window was open since the
	// ref was last found in place.
	Suspects []Suspect
}

// Suspect is an iteration that may have made a move.
type Suspect struct {
	Worker string
	Issue  string
	// Charged is true when its attempt fails for it; false when its work
	// was integrated before the move was found.
	Charged bool
}

// refState is where the pool left a worker's refs.
type refState struct {
	dir, branch string
	// tip is the branch's commit when settled; base is what the agent's
	// commits must stay on top of while it runs.
	tip, base string
	running   bool      // the agent's window is open: only growth is checked, at its end
	busy      bool      // ralphd itself is moving them (opening, integrating)
	since     time.Time // when they were last found in place
}

// openWindow opens the window of worker's iteration on issue in the
// ledger, and records its refs: the worktree t, whose branch is at base.
func (p *Pool) openWindow(worker, issue string, t git.Tree, base string) *window {
	w := p.ledger.open(worker, issue)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refs == nil {
		p.refs = map[string]*refState{}
	}
	p.refs[worker] = &refState{dir: t.Dir, branch: t.Branch, base: base, running: true, since: time.Now()}
	return w
}

// setBusy marks worker's refs as being moved by ralphd. It waits for a
// check that is putting them back (recheck).
func (p *Pool) setBusy(worker string) {
	lk := p.refLock(worker)
	lk.Lock()
	defer lk.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.refs[worker]; r != nil {
		r.busy, r.running = true, false
	}
}

// settleRefs settles worker's refs with its branch at tip, where ralphd
// just found or left it; with tip "", where the branch is now. It returns
// the tip it settled them at ("" when the worker has no refs yet).
func (p *Pool) settleRefs(ctx context.Context, worker, tip string) string {
	p.mu.Lock()
	r := p.refs[worker]
	p.mu.Unlock()
	if r == nil {
		return ""
	}
	if tip == "" {
		tip, _ = git.RefAt(ctx, p.Queue.Repo, "refs/heads/"+r.branch)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r.busy, r.running = false, false
	r.tip, r.since = tip, time.Now()
	return tip
}

// endWindow ends w's agent window: worker's own refs must have only grown
// from the base (or, when the iteration failed, may be rewound to an
// older target commit: ralphd keeps failed work on a branch and rewinds
// the worktree), and every other settled worker's refs and the target
// must be where the pool left them. It returns the tip the worker's work
// is at, for the queue.
//
// The worker's own refs are its alone while its window is open (no check
// looks at a running worker's), so that check runs beside the others'.
// The check of the others' refs and the target is shared: any check that
// began after the window ended will do, so the workers whose windows end
// together wait for one check, not for one each (checkAfter).
func (p *Pool) endWindow(ctx context.Context, w *window, done bool) (string, error) {
	end := p.ledger.end(w)
	p.mu.Lock()
	r := p.refs[w.worker]
	p.mu.Unlock()
	// The shared check first: it puts back the objects an agent deleted,
	// without which the worker's own refs cannot be read.
	errs := []error{p.scrub(w.worker), p.checkAfter(ctx, end)}
	tip := ""
	if r != nil {
		var err error
		if tip, err = p.checkGrowth(ctx, w.worker, r, done); err != nil {
			errs = append(errs, err)
		}
	}
	return p.settleRefs(ctx, w.worker, tip), errors.Join(errs...)
}

// checkGrowth checks a worker's refs at the end of its own window: HEAD
// names its branch, and the branch holds the base. It returns where it
// found or left the branch ("" when it cannot tell).
func (p *Pool) checkGrowth(ctx context.Context, worker string, r *refState, done bool) (string, error) {
	ref := "refs/heads/" + r.branch
	if _, err := p.checkHead(ctx, worker, r, r.base); err != nil {
		return "", err
	}
	got, err := git.RefAt(ctx, p.Queue.Repo, ref)
	if err != nil {
		return "", err
	}
	if got != "" {
		if _, err := git.Output(ctx, p.Queue.Repo, "merge-base", "--is-ancestor", r.base, got); err == nil {
			return got, nil // the agent's own commits, or nothing
		}
		if !done {
			if _, err := git.Output(ctx, p.Queue.Repo, "merge-base", "--is-ancestor", got, r.base); err == nil {
				return got, nil // rewound to where the issue's attempts began
			}
		}
	}
	m := git.Move{Worker: worker, Ref: ref, Want: r.base, Got: got}
	m.Kept, m.Err = git.RestoreRef(ctx, p.Queue.Repo, ref, r.base, got, worker, time.Now())
	p.moved(m, r.since)
	if m.Err != nil {
		return "", nil
	}
	return r.base, nil
}

// checkHead puts worker's HEAD back on its branch when something else
// moved it, keeping a detached commit that base lacks, and reports whether
// it had moved.
func (p *Pool) checkHead(ctx context.Context, worker string, r *refState, base string) (bool, error) {
	ref := "refs/heads/" + r.branch
	head, err := git.Head(ctx, r.dir)
	if err != nil {
		return false, err
	}
	want := "ref: " + ref
	if head == want {
		return false, nil
	}
	m := git.Move{Worker: worker, Ref: "HEAD of " + r.dir, Want: want, Got: head}
	m.Kept, m.Err = git.SetHead(ctx, r.dir, ref, head, base, worker+"-head", time.Now())
	p.moved(m, r.since)
	return true, nil
}

// checkAfter returns the outcome of a check of the target and every
// settled worker's refs (checkOthers) that began at or after t: the last
// one, when it did, or a new one. Checks run one at a time, so the
// windows that end while one runs share the next.
func (p *Pool) checkAfter(ctx context.Context, t time.Time) error {
	p.checking.Lock()
	defer p.checking.Unlock()
	p.mu.Lock()
	last, err := p.lastCheck, p.lastCheckErr
	p.mu.Unlock()
	if !last.IsZero() && !last.Before(t) {
		return err
	}
	started := time.Now()
	err = p.checkOthers(ctx)
	p.mu.Lock()
	p.lastCheck, p.lastCheckErr = started, err
	p.mu.Unlock()
	return err
}

// checkOthers checks the target and every settled worker's refs (a
// running worker's are checked at its window's end, by checkGrowth). The
// workers' refs and HEADs are read in two git calls; a ref found out of
// place is then looked at again, and put back, on its own.
// The target is checked only when the merge queue is not integrating (an
// integration checks it itself first, under the queue's lock, before it
// admits any work), so that a window's end never waits for a verify.
func (p *Pool) checkOthers(ctx context.Context) error {
	started := time.Now()
	lost, err := p.checkHistory(ctx)
	if err != nil {
		return err
	}
	moves, checked, err := p.Queue.TryCheck(ctx)
	if err != nil {
		return err
	}
	found := len(moves) > 0 || !checked || lost
	// The settled workers, as they are now: a worker may go on (busy,
	// then running) while the check reads git, and is then not checked.
	type settled struct {
		name string
		r    *refState
		st   refState
	}
	var others []settled
	p.mu.Lock()
	for name, r := range p.refs {
		if !r.running && !r.busy && r.tip != "" {
			others = append(others, settled{name, r, *r})
		}
	}
	p.mu.Unlock()
	if len(others) == 0 {
		if !found {
			p.mu.Lock()
			p.clean = started
			p.mu.Unlock()
		}
		return nil
	}
	refs, err := git.Refs(ctx, p.Queue.Repo, "refs/heads/"+git.BranchPrefix)
	if err != nil {
		return err
	}
	trees, err := git.List(ctx, p.Queue.Repo)
	if err != nil {
		return err
	}
	for _, o := range others {
		ref := "refs/heads/" + o.st.branch
		if !onBranch(trees, o.st.dir, o.st.branch) || refs[ref] != o.st.tip {
			// Out of place, or moved on by its own worker since: look
			// again, the worker kept from moving its refs meanwhile.
			moved, err := p.recheck(ctx, o.name, o.r, o.st)
			if err != nil {
				return err
			}
			found = found || moved
		}
		p.mu.Lock()
		if cur := p.refs[o.name]; cur == o.r && !cur.running && !cur.busy {
			cur.since = started
		}
		p.mu.Unlock()
	}
	if !found {
		p.mu.Lock()
		p.clean = started
		p.mu.Unlock()
	}
	return nil
}

// recheck looks again at the refs of a settled worker that a check found
// out of place, and puts back what moved. It holds the worker's refLock,
// so that the worker cannot start to move them itself (setBusy) while
// they are looked at and put back; a worker no longer settled where st
// says (it went on since the check read git) is left alone.
func (p *Pool) recheck(ctx context.Context, name string, r *refState, st refState) (bool, error) {
	lk := p.refLock(name)
	lk.Lock()
	defer lk.Unlock()
	p.mu.Lock()
	still := p.refs[name] == r && !r.running && !r.busy && r.tip == st.tip
	p.mu.Unlock()
	if !still {
		return false, nil
	}
	moved, err := p.checkHead(ctx, name, &st, st.tip)
	if err != nil {
		return false, err
	}
	ref := "refs/heads/" + st.branch
	got, err := git.RefAt(ctx, p.Queue.Repo, ref)
	if err != nil {
		return false, err
	}
	if got != st.tip {
		moved = true
		m := git.Move{Worker: name, Ref: ref, Want: st.tip, Got: got}
		m.Kept, m.Err = git.RestoreRef(ctx, p.Queue.Repo, ref, st.tip, got, name, time.Now())
		p.moved(m, st.since)
	}
	return moved, nil
}

// refLock is worker's lock against a check putting back its refs while
// the worker starts to move them (see recheck).
func (p *Pool) refLock(worker string) *sync.Mutex {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refLocks == nil {
		p.refLocks = map[string]*sync.Mutex{}
	}
	lk := p.refLocks[worker]
	if lk == nil {
		lk = &sync.Mutex{}
		p.refLocks[worker] = lk
	}
	return lk
}

// onBranch reports whether the worktree dir, as git lists it, has branch
// checked out.
func onBranch(trees []git.Worktree, dir, branch string) bool {
	for _, t := range trees {
		if t.Dir == filepath.Clean(dir) {
			return !t.Detached && t.Branch == branch
		}
	}
	return false
}

func (p *Pool) lastClean() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clean
}

// targetMoved is the queue's Moved: a move of the target, or of a
// worker's refs found by the queue.
func (p *Pool) targetMoved(m git.Move) {
	since := p.lastClean()
	if c := p.Queue.CleanAt(); m.Worker == "" && c.After(since) {
		since = c // the target was last found in place then
	}
	if m.Worker != "" {
		p.mu.Lock()
		if r := p.refs[m.Worker]; r != nil && r.since.After(since) {
			since = r.since
		}
		p.mu.Unlock()
	}
	p.moved(m, since)
}

// moved charges, through the ledger, every iteration whose window was
// open after since, and reports the move.
func (p *Pool) moved(m git.Move, since time.Time) {
	rm := RefMove{Move: m, Suspects: p.ledger.found(finding{kind: gitFinding, details: []string{m.String()}, since: since})}
	p.log(Event{Worker: m.Worker, Kind: "ref-moved", Detail: m.String() + suspectList(rm.Suspects)})
	if p.RefMoved != nil {
		p.RefMoved(rm)
	}
}

func suspectList(ss []Suspect) string {
	if len(ss) == 0 {
		return "; no agent window was open"
	}
	var b strings.Builder
	b.WriteString("; charged: ")
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", s.Issue, s.Worker)
		if !s.Charged {
			b.WriteString(" [already integrated]")
		}
	}
	return b.String()
}

// finish checks every ref once more when the pool ends.
func (p *Pool) finish(ctx context.Context) error {
	p.checking.Lock()
	defer p.checking.Unlock()
	return p.checkOthers(ctx)
}

// chargedError refuses the work of an iteration charged with a move.
type chargedError struct{ why string }

func (e *chargedError) Error() string { return e.why }

// also adds a charge to another reason for a failed attempt.
func also(charge string) string {
	if charge == "" {
		return ""
	}
	return "; also, " + charge
}

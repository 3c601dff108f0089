package modes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/mergeq"
)

// A worker hands finished work to the merge queue as one commit
// (mergeq.Queue.Hand) and goes on to claim its next issue while the queue
// integrates it in a worktree of its own. The workers so stay in step
// (their agents start, end and are judged at about the same times, so one
// reading of the tracker serves many; see trackview) instead of drifting
// apart by the length of the queue, and the queue works beside the agents
// rather than between them.
//
// The issue stays held (holding) and counts as busy until its integration
// ends: a dependent waits for it (awaitBlockers), and an integration that
// fails reopens the issue, which may make work ready. A worker has at most
// one piece of work in the queue; it waits for it before handing over the
// next. A marker in the worktrees' root (.queued-<worker>: the issue, the
// commit handed over, and the rebased commit once the queue has verified
// it) lets the next start settle work a crash or a stop left in the queue
// (recoverQueued).

// job is one worker's finished work in the merge queue.
type job struct {
	a      Assignment
	issue  beads.Issue
	win    *window
	commit string // the work, as handed over
	h      *holding
	done   chan struct{} // closed when the job has ended
	// free is closed when the job leaves the queue: when it ends, or
	// when its work waits in a pull request (review.go).
	free     chan struct{}
	freeOnce sync.Once
	// reviewSince, for a pull request watched again after a restart, is
	// when its work was pushed.
	reviewSince time.Time
}

// leaveQueue takes j out of its worker's queue slot: the worker may hand
// over its next work.
func (p *Pool) leaveQueue(j *job) {
	j.freeOnce.Do(func() {
		p.mu.Lock()
		if p.queued[j.a.Worker] == j {
			delete(p.queued, j.a.Worker)
			p.writeStatusLocked()
		}
		p.mu.Unlock()
		if j.free != nil {
			close(j.free)
		}
	})
}

// awaitQueued waits until worker has no work in the queue, and reports
// whether it had to wait.
func (p *Pool) awaitQueued(ctx context.Context, worker string) (bool, error) {
	p.mu.Lock()
	j := p.queued[worker]
	p.mu.Unlock()
	if j == nil {
		return false, nil
	}
	select {
	case <-j.done:
		return true, nil
	case <-j.free:
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// enqueue integrates j in a goroutine of its own; the pool waits for it
// before it ends. When it ends, the issue is released from the pool, and
// an error that is not about the work stops the pool.
func (p *Pool) enqueue(ctx context.Context, j *job) {
	p.mu.Lock()
	if p.queued == nil {
		p.queued = map[string]*job{}
	}
	p.queued[j.a.Worker] = j
	p.writeStatusLocked()
	p.mu.Unlock()
	p.jobs.Add(1)
	go func() {
		defer p.jobs.Done()
		err := p.integrate(ctx, j)
		p.release(j.issue.ID, j.h)
		p.leaveQueue(j)
		p.mu.Lock()
		p.endedLocked(j.issue, err == nil && j.h.integrated)
		p.mu.Unlock()
		close(j.done)
		if err != nil && p.abort != nil {
			p.abort(err)
		}
	}()
}

// integrate runs j through the merge queue and settles its issue: on the
// target (j.h.integrated), or a failed attempt, reopened with a note that
// says why. A stop (ctx) leaves the queued marker, for the next start.
func (p *Pool) integrate(ctx context.Context, j *job) error {
	a, id := j.a, j.issue.ID
	title, body := "", ""
	if p.Queue.Forge != nil {
		// The pull request's words: the issue as the agent closed it.
		if is, err := p.Client(a.Actor, p.Queue.Repo).Show(ctx, id); err == nil {
			j.issue = is
		}
		title, body = p.prTitle(j.issue), p.prBody(j.issue, a.Attempt)
	}
	res, err := p.Queue.Integrate(ctx, mergeq.Request{Worker: a.Worker, Issue: id, Commit: j.commit, Title: title, Body: body,
		Admit: func() error {
			if why := p.ledger.failed(j.win); why != "" {
				return &chargedError{why}
			}
			return nil
		},
		Rebased: func(c string) error { return p.writeQueued(a.Worker, id, j.commit, c) },
	})
	if ctx.Err() != nil {
		return nil // closed, its work in the commit the marker names: the next start settles it
	}
	queuedMarker := true // until the work leaves the queue's hands
	defer func() {
		if queuedMarker {
			p.clearQueued(a.Worker)
		}
	}()
	if ce := (*chargedError)(nil); errors.As(err, &ce) {
		return p.fail(ctx, a, Failure{Why: ce.why + p.keepHanded(ctx, j), Integration: true})
	}
	if err != nil {
		return p.fail(ctx, a, Failure{Why: fmt.Sprintf("integration failed: %v", err) + p.keepHanded(ctx, j), Integration: true})
	}
	switch res.Outcome() {
	case mergeq.Failed:
		return p.fail(ctx, a, Failure{Why: res.Reason(), Integration: true, Conflicts: res.Conflicts})
	case mergeq.Waiting:
		// Out of the queue's hands: not reopened, and not integrated, so
		// a dependent here does not build on it.
		p.log(Event{Worker: a.Worker, Issue: id, Kind: "waiting", Detail: res.Why})
		if p.Queue.Forge == nil {
			return nil
		}
		// In a pull request: the worker is free, the issue held until
		// the pull request is settled.
		p.clearQueued(a.Worker)
		queuedMarker = false // the worker's next work writes its own
		p.leaveQueue(j)
		return p.awaitReview(ctx, j, res)
	}
	if res.Integrated {
		p.ledger.integrated(j.win)
	}
	switch {
	case res.Branch != "":
		// On a branch of its own (integrate = branch), not the target:
		// said so, never as integrated into the target, so that no
		// other clone's dependent takes it for being there.
		p.noteBranch(ctx, a.Worker, a.Actor, id, res.Branch, res.Commit)
	case p.Queue.Remote != "" && res.Commit != "":
		// For a dependent another clone claims (remote.go); work that
		// was empty is "at" the remote's target it started from.
		p.noteIntegrated(ctx, a.Worker, a.Actor, id, res.Commit)
	}
	if err := p.tally.Integrated(id); err != nil {
		return fmt.Errorf("worker %s: %w", a.Worker, err)
	}
	j.h.integrated = true
	p.mu.Lock()
	p.sum.Integrated = append(p.sum.Integrated, id)
	p.mu.Unlock()
	p.log(Event{Worker: a.Worker, Issue: id, Kind: "integrated", Detail: res.Commit})
	return nil
}

// keepHanded keeps the work of j, which the queue refused before it could
// keep it itself, on a kept branch, and says where for the failure's
// note.
func (p *Pool) keepHanded(ctx context.Context, j *job) string {
	kept, err := git.KeepIfNew(context.WithoutCancel(ctx), p.Queue.Repo, j.commit, "refs/heads/"+p.Target, mergeq.KeptPrefix+j.issue.ID, time.Now())
	switch {
	case err != nil:
		return fmt.Sprintf("; the work (%s) could not be kept on a branch: %v", j.commit, err)
	case kept == "":
		return ""
	}
	return "; the work is kept on " + kept
}

// queuedPath is the marker of worker's work in the queue.
func (p *Pool) queuedPath(worker string) string {
	return filepath.Join(p.Trees.Root, ".queued-"+worker)
}

// setQueued records j's work as in the queue.
func (p *Pool) setQueued(j *job) error {
	return p.writeQueued(j.a.Worker, j.issue.ID, j.commit, "")
}

// writeQueued writes worker's queued marker: the issue, the commit handed
// over, and the rebased result ("" until the queue has one). It is what
// crash recovery goes by: written atomically and synced.
func (p *Pool) writeQueued(worker, id, commit, rebased string) error {
	if err := os.MkdirAll(p.Trees.Root, 0o755); err != nil {
		return fmt.Errorf("worker %s: %w", worker, err)
	}
	body := id + "\n" + commit + "\n" + rebased + "\n"
	if err := atomicfile.Write(p.queuedPath(worker), []byte(body), 0o600); err != nil {
		return fmt.Errorf("worker %s: record the work handed to the merge queue: %w", worker, err)
	}
	return nil
}

func (p *Pool) clearQueued(worker string) { _ = os.Remove(p.queuedPath(worker)) }

// maxMarker bounds a pending or queued marker ralphd reads back: an issue
// id and two commit ids fit many times over.
const maxMarker = 64 << 10

// readMarker reads worker's pending or queued marker at path. Anything
// but a file ralphd wrote (a FIFO, a link, a directory, a huge file) is
// dropped, and reported false: recovery cannot act on it, and must not
// hang on it.
func (p *Pool) readMarker(path, worker string) ([]byte, bool) {
	b, err := atomicfile.Read(path, maxMarker)
	if err != nil {
		p.log(Event{Worker: worker, Kind: "recovered", Detail: "dropped " + filepath.Base(path) + ": " + err.Error()})
		_ = os.RemoveAll(path)
		return nil, false
	}
	return b, true
}

// queuedMark is a parsed queued marker.
type queuedMark struct {
	issue, commit, rebased string
}

// parseQueued reads a queued marker; ok is false for anything that is not
// one (the marker is then dropped: recovery cannot act on it).
func parseQueued(b []byte) (queuedMark, bool) {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		return queuedMark{}, false
	}
	m := queuedMark{issue: lines[0], commit: lines[1], rebased: lines[2]}
	if m.issue == "" || strings.HasPrefix(m.issue, "-") || strings.ContainsAny(m.issue, " \t\r\x00") ||
		!git.IsHash(m.commit) || (m.rebased != "" && !git.IsHash(m.rebased)) {
		return queuedMark{}, false
	}
	return m, true
}

// recoverQueued settles the work a crash or a stop left in the merge
// queue, after the queue's own recovery (the target's move finished or
// undone): work whose rebased result is on the target is done; a closed
// issue whose work is not is reopened, with a note naming a wip branch
// that keeps the commit handed over; a claim still held is released. A
// marker is acted on only when its issue is still assigned to its worker
// (bd keeps the assignee of a closed issue). It returns the issues it
// settled.
func (p *Pool) recoverQueued(ctx context.Context, c *beads.Client) (map[string]bool, error) {
	marks, _ := filepath.Glob(filepath.Join(p.Trees.Root, ".queued-*"))
	settled := map[string]bool{}
	for _, path := range marks {
		worker := strings.TrimPrefix(filepath.Base(path), ".queued-")
		b, ok := p.readMarker(path, worker)
		if !ok {
			continue
		}
		m, ok := parseQueued(b)
		if !ok || git.CheckWorker(worker) != nil {
			p.log(Event{Worker: worker, Kind: "recovered", Detail: "dropped " + filepath.Base(path) + ": not a queue marker"})
			_ = os.Remove(path)
			continue
		}
		is, err := c.Show(ctx, m.issue)
		if err != nil {
			return settled, fmt.Errorf("workers: recover %s's issue %s: %w", worker, m.issue, err)
		}
		switch {
		case is.Assignee != p.actor(worker):
			// Not this worker's issue (or no longer): a marker this pool's
			// worker did not write, or one whose issue was taken since.
			p.log(Event{Worker: worker, Issue: m.issue, Kind: "recovered", Detail: "dropped " + filepath.Base(path) + ": the issue is not " + worker + "'s"})
		case p.Queue.Landed(ctx, m.rebased):
			if err := p.tally.Integrated(m.issue); err != nil {
				return settled, fmt.Errorf("workers: %w", err)
			}
			p.log(Event{Worker: worker, Issue: m.issue, Kind: "recovered", Detail: "its work reached " + p.Target + " before the stop"})
		default:
			if err := p.settleQueued(ctx, c, worker, m, is); err != nil {
				return settled, err
			}
		}
		settled[m.issue] = true
		_ = os.Remove(path)
	}
	return settled, nil
}

// settleQueued gives back an issue whose work, handed to the queue, did
// not reach the target: the commit is kept on a wip branch (when it holds
// anything the target lacks), and a closed issue is reopened with a note
// that names it.
func (p *Pool) settleQueued(ctx context.Context, c *beads.Client, worker string, m queuedMark, is beads.Issue) error {
	actor := p.actor(worker)
	kept, where := "", "the commit handed over is gone from the repository"
	if _, err := git.Output(ctx, p.Queue.Repo, "cat-file", "-e", m.commit+"^{commit}"); err == nil {
		if kept, err = git.KeepIfNew(ctx, p.Queue.Repo, m.commit, "refs/heads/"+p.Target, git.WipPrefix+worker, time.Now()); err != nil {
			return fmt.Errorf("workers: keep %s's work on %s: %w", worker, m.issue, err)
		}
		where = "the work held nothing " + p.Target + " lacks"
		if kept != "" {
			where = "the work is kept on " + kept
		}
	}
	if is.Status == beads.StatusClosed {
		note := fmt.Sprintf("ralphd %s: the run stopped after this issue's work was handed to the merge queue and before it reached %s; %s", worker, p.Target, where)
		if _, err := c.AppendNotes(ctx, m.issue, note); err != nil {
			return fmt.Errorf("workers: %w", err)
		}
	}
	if err := p.giveUp(ctx, actor, m.issue, nil); err != nil {
		return err
	}
	p.log(Event{Worker: worker, Issue: m.issue, Kind: "recovered", Detail: "its work had not reached " + p.Target})
	return nil
}

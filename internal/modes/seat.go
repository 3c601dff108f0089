package modes

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// This file is what a BUILD iteration of a worker shares with its pool
// (pool.go, workers.go): the pool's baseline of the tracker, the judging
// window, and the pool's readings. iteration.go asks these of its Loop;
// outside workers (no seat) each does nothing, or what the single loop
// does.

// seat is a worker's place in its pool, for the iteration its Assignment
// gives it (workers.go). A worker's verified close keeps the issue's
// attempt record until its work is integrated.
type seat struct {
	pool *Pool
	// actor is the worker's bd actor: what bd records as created_by for
	// the issues and dependencies its agent adds through the guard.
	actor string
	// agentEnded, when set, is told that the BUILD agent has ended and its
	// work is about to be judged (Assignment.AgentEnded).
	agentEnded func()
	// win is the iteration's window in the pool's ledger (ledger.go).
	win *window
	// readingDue, when set, ends this worker's count as about to ask for
	// a reading (Pool.judgementDue).
	readingDue func()
	// readSeq numbers the pool's reading snapshotAfter last returned (see
	// guard.View); readDone is when that reading ended.
	readSeq  uint64
	readDone time.Time
}

// pool is the pool a worker's Loop runs in, with the other workers; nil
// outside workers.
// creditFor returns the iteration an issue or a dependency that appeared
// in iteration it's window is charged to: it, unless createdBy, the bd
// actor bd recorded for it, is another worker of the same pool that is
// in an iteration now. Its agent added it through the guard, which runs
// bd as that worker's actor, and the pool's first judgement after it
// accounts for it, whichever window that is. What was added around the
// guard carries whatever actor the agent chose, and is charged to it.
func (l *Loop) creditFor(createdBy string, it *buildIter) credit {
	own := credit{n: it.n, issue: it.issue.ID}
	p := l.pool()
	if p == nil || l.seat.actor == "" || createdBy == l.seat.actor || p.actorPrefix == "" || !strings.HasPrefix(createdBy, p.actorPrefix) {
		return own
	}
	if c, ok := p.iterationOf(createdBy); ok {
		return c
	}
	return own
}

func (l *Loop) pool() *Pool {
	if l.seat == nil {
		return nil
	}
	return l.seat.pool
}

// readAt is when the pool's reading this worker last had ended; zero
// outside workers.
func (l *Loop) readAt() time.Time {
	if l.seat == nil {
		return time.Time{}
	}
	return l.seat.readDone
}

// judgeWindow starts the tamper judgement of a worker's iteration: it waits
// for the other workers' judgements, and judges against the shared
// baseline. The returned func ends the window, making after the baseline.
// Outside workers it does nothing.
func (l *Loop) judgeWindow(it *buildIter) func(after guard.Snapshot) {
	p := l.pool()
	if p == nil {
		return func(guard.Snapshot) {}
	}
	p.judging.Lock()
	if p.baseline != nil {
		it.before = p.baseline
	}
	var once sync.Once
	return func(after guard.Snapshot) {
		once.Do(func() {
			if after != nil {
				p.setBaseline(after)
				p.baselineSeq = l.seat.readSeq
			}
			p.judging.Unlock()
		})
	}
}

// notBehindBaseline returns after, a worker's reading of the tracker
// taken before its judgement began, or a newer one when the pool's
// baseline is newer than it: a judgement in between reverted something
// and read again. Diffing that baseline against the older reading would
// see the reverted changes made again. The caller holds the judgement
// window (judgeWindow). Outside workers it returns after.
func (l *Loop) notBehindBaseline(ctx context.Context, after guard.Snapshot) (guard.Snapshot, error) {
	p := l.pool()
	if p == nil || p.view == nil || l.seat.readSeq >= p.baselineSeq {
		return after, nil
	}
	return l.snapshotSince(ctx, p.baselineSeq-1)
}

// sharedBaseline makes a worker's iteration start from the shared baseline
// (the tracker as the last judgement left it, forbidden changes reverted)
// rather than from its own snapshot, which may hold another worker's
// forbidden change not yet reverted: that snapshot, persisted for a crash
// and restored from, would undo the revert. Outside workers it does
// nothing.
func (l *Loop) sharedBaseline(it *buildIter) {
	p := l.pool()
	if p == nil {
		return
	}
	p.judging.Lock()
	defer p.judging.Unlock()
	if p.baseline != nil {
		it.before = p.baseline
	}
}

// ownCloses drops, in a worker's judgement, the closes of issues another
// worker of this pool is working on: that worker's iteration judges them,
// by their own checks in their own worktree. A close by anyone else (a
// person, an agent closing work it was not given) is judged here. An
// assignee is not enough to tell: an agent may set any, one that looks
// like another worker's included, so the issue must be one that worker's
// iteration is on now. Outside workers it returns others.
func (l *Loop) ownCloses(others []beads.Issue, after guard.Snapshot) []beads.Issue {
	p := l.pool()
	if p == nil {
		return l.othersCloses(others, after)
	}
	mine := p.actorPrefix + l.State.Worker()
	return slices.DeleteFunc(others, func(o beads.Issue) bool {
		a := after[o.ID].Assignee
		return a != mine && p.worksOn(o.ID, a)
	})
}

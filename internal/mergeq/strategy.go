package mergeq

import (
	"context"
	"fmt"
	"strings"
)

// A Strategy decides where the queue puts a worker's work once it is
// rebased onto the target and verified, and when its issue counts as
// integrated. The queue does the rest, the same for every strategy: it
// checks the work out in its own worktree, rebases it, refuses work that
// changes the tracker's files, runs verify, records the result
// (Request.Rebased), and only then calls Land.
//
// A strategy lives in a file of its own in this package and has one line
// in strategies; the configuration key integrate names it.
type Strategy interface {
	// Land puts w.Commit, the rebased and verified work, where the
	// strategy keeps integrated work, and says what became of it. It runs
	// with the queue's lock held: it must not call the queue's exported
	// methods. An error ends the integration as it is; a strategy that
	// wants the work kept first keeps it (Queue.keep) and says where
	// (Landing.Kept).
	Land(ctx context.Context, q *Queue, w Work) (Landing, error)
	// Landed reports whether commit, a rebased result recorded before a
	// stop or a crash (Request.Rebased), reached where Land puts work: the
	// next start settles the issue by it.
	Landed(ctx context.Context, q *Queue, commit string) bool
}

// Work is what the queue hands a strategy to land.
type Work struct {
	Request
	// Commit is the work rebased onto Base and verified: HEAD of Dir.
	Commit string
	// Base is the target's tip the work was rebased onto (the remote's,
	// with a remote).
	Base string
	// Dir is the queue's worktree, where Commit is checked out.
	Dir string
}

// Landing is what a strategy's Land did with the work.
type Landing struct {
	// Outcome is Integrated or Waiting when the work is where the
	// strategy puts it; Failed means the strategy refused it, for the
	// reason Why, and the queue keeps it on a branch.
	Outcome Outcome
	// Again means the place the work goes moved since Base was read (a
	// push was rejected, the target moved): the queue fetches, rebases,
	// verifies and lands again, up to MaxPushTries rounds. Outcome is
	// then not looked at.
	Again bool
	// Commit is where the work now is: the target's new tip, for ff.
	Commit string
	// Why says, for the note, why the work waits or was refused.
	Why string
	// LocalErr is a failure after the work landed that does not undo it
	// (for ff: the remote has it, the local target could not follow).
	LocalErr error
	// Kept is the branch the strategy kept the work on before it
	// returned an error.
	Kept string
	// Branch, when set, is the branch (on the remote, with one) the
	// strategy put the work on instead of the target: its issue's
	// work is not on the target.
	Branch string
	// PR is the pull request the work is in (the strategy pr), when
	// one is open.
	PR PullRequest
}

// Outcome is what an integration made of an issue: what a pool acts on,
// whatever the strategy.
type Outcome int

const (
	// Failed means the work is not integrated: Result.Reason says why,
	// and Result.Kept where the work is.
	Failed Outcome = iota
	// Integrated means the issue is done: its work is where the strategy
	// puts integrated work, or it held nothing to integrate.
	Integrated
	// Waiting means the work is where the strategy put it, and the issue
	// counts as integrated only once something outside ralphd acts (a
	// pull request is merged): Result.Reason says what it waits for.
	Waiting
)

// String returns the outcome's name, for logs.
func (o Outcome) String() string {
	switch o {
	case Failed:
		return "failed"
	case Integrated:
		return "integrated"
	case Waiting:
		return "waiting"
	}
	return fmt.Sprintf("outcome-%d", int(o))
}

// DefaultStrategy is the strategy a queue without one uses, and the
// configuration's default.
const DefaultStrategy = "ff"

// namedStrategy is one entry of the registry.
type namedStrategy struct {
	name string
	s    Strategy
}

// strategies lists the integration strategies; the first is the default.
// Adding one is its file and one line here: the configuration's allowed
// values and LookupStrategy read it.
func strategies() []namedStrategy {
	return []namedStrategy{
		{DefaultStrategy, fastForward{}},
		{"branch", toBranch{}},
		{"pr", pullRequest{}},
	}
}

// StrategyNames returns the names of the integration strategies, the
// default first.
func StrategyNames() []string {
	var names []string
	for _, e := range strategies() {
		names = append(names, e.name)
	}
	return names
}

// LookupStrategy returns the strategy called name; "" is the default. An
// unknown name is an error that lists the valid ones.
func LookupStrategy(name string) (Strategy, error) {
	if name == "" {
		name = DefaultStrategy
	}
	for _, e := range strategies() {
		if e.name == name {
			return e.s, nil
		}
	}
	return nil, fmt.Errorf("unknown integration strategy %q: choose one of %s", name, strings.Join(StrategyNames(), ", "))
}

// strategy is q.Strategy, or the default.
func (q *Queue) strategy() Strategy {
	if q.Strategy != nil {
		return q.Strategy
	}
	return fastForward{}
}

// Landed reports whether commit, the rebased result of a piece of work
// recorded before a stop or a crash (Request.Rebased), reached where the
// queue's strategy puts integrated work. An empty commit (the work was
// never rebased) did not.
func (q *Queue) Landed(ctx context.Context, commit string) bool {
	if commit == "" {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.strategy().Landed(ctx, q, commit)
}

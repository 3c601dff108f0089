package modes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/mergeq"
)

// WorkersDir is the directory, in the project's state directory, that holds
// the workers' worktrees; ralphd owns it.
const WorkersDir = "worktrees"

// WorkersStatusFile is the pool's status file in the state directory, read
// by `ralphd status`.
const WorkersStatusFile = "workers.json"

// MergeJournalFile is the merge queue's journal in the state directory
// (mergeq.Queue.Journal): not in the git directory, which every agent can
// write, sandboxed or not.
const MergeJournalFile = "mergeq.journal"

// MergeTipFile records, while workers run, where the merge queue left the
// target (mergeq.Queue.TipFile), for the start after a crash.
const MergeTipFile = "mergeq.tip"

// MergeTreeDir is the merge queue's own worktree in the state directory
// (mergeq.Queue.Tree), where handed-over work is rebased and verified:
// the sandbox keeps the state directory, and the git directory's
// worktrees/, read-only to the agents.
const MergeTreeDir = "mergeq"

// startWorking records that actor's iteration n is on id; the returned
// func ends that.
func (p *Pool) startWorking(id, actor string, n int) func() {
	p.workingMu.Lock()
	defer p.workingMu.Unlock()
	if p.working == nil {
		p.working, p.iterOf = map[string]string{}, map[string]credit{}
	}
	p.working[id] = actor
	p.iterOf[actor] = credit{n: n, issue: id}
	return func() {
		p.workingMu.Lock()
		defer p.workingMu.Unlock()
		if p.working[id] == actor {
			delete(p.working, id)
		}
		if p.iterOf[actor].n == n {
			delete(p.iterOf, actor)
		}
	}
}

// credit is an iteration a change is charged to: its number and issue.
type credit struct {
	n     int
	issue string
}

// iterationOf returns the iteration actor's worker is in now, if any.
func (p *Pool) iterationOf(actor string) (credit, bool) {
	p.workingMu.Lock()
	defer p.workingMu.Unlock()
	c, ok := p.iterOf[actor]
	return c, ok
}

// worksOn reports whether actor's iteration is on id now.
func (p *Pool) worksOn(id, actor string) bool {
	p.workingMu.Lock()
	defer p.workingMu.Unlock()
	return actor != "" && p.working[id] == actor
}

// agentStarted counts a worker's agent as running until the returned
// func is called. Outside workers it does nothing.
func (p *Pool) agentStarted() func() {
	if p == nil {
		return func() {}
	}
	return countUntil(&p.agents)
}

// judgementDue counts a worker whose agent has ended as about to ask for
// a reading, until the returned func is called (its first reading came,
// or the iteration ended without). Outside workers it does nothing.
func (p *Pool) judgementDue() func() {
	if p == nil {
		return func() {}
	}
	return countUntil(&p.judgingSoon)
}

// countUntil adds one to c until the returned func is first called.
func countUntil(c *atomic.Int32) func() {
	c.Add(1)
	var once sync.Once
	return func() { once.Do(func() { c.Add(-1) }) }
}

// readingDebounce is how long a reading of the tracker waits for agents
// that still run to end (trackview.View.Debounce): in a pool in step they
// end within a few hundred milliseconds of each other, and one reading
// then judges them all; an agent that ends alone waits this long for
// nothing, a moment beside any real agent's run.
const readingDebounce = 300 * time.Millisecond

// WorkerActor is the bd actor of worker w of this clone: the host, and a
// short hash of the clone's directory and state directory, which tells two
// clones on one host apart (their project ids are the same when they share
// a remote).
func (l *Loop) WorkerActor(w string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	sum := sha256.Sum256([]byte(l.Dir + "\x00" + l.State.Dir()))
	return "ralphd/" + host + "/" + hex.EncodeToString(sum[:3]) + "/" + w
}

// BuildWorkers is Build with k workers at once, each in its own git
// worktree under the state directory, claiming issues through bd, and
// integrating finished work through a merge queue of one into the branch
// checked out in the project directory. k ≤ 1 is Build.
func (l *Loop) BuildWorkers(ctx context.Context, maxIter, k int) (*Result, error) {
	return l.buildRun(ctx, maxIter, k, runOpts{})
}

// buildRun is a BUILD run with k workers (k ≤ 1: the single loop), as o
// says.
func (l *Loop) buildRun(ctx context.Context, maxIter, k int, o runOpts) (*Result, error) {
	return l.runMode(ctx, ModeBuild, maxIter, func(ctx context.Context, res *Result) error {
		if k <= 1 {
			return l.build(ctx, res, maxIter, o)
		}
		return l.buildWorkers(ctx, res, maxIter, k, o)
	})
}

func (l *Loop) buildWorkers(ctx context.Context, res *Result, maxIter, k int, o runOpts) error {
	if err := l.checkClean(ctx, false); err != nil {
		return res.stop(StopError, "the working tree is not clean", err)
	}
	if err := l.pinTracker(ctx, res.RunID); err != nil {
		return res.stop(StopError, "could not pin the tracker", err)
	}
	l.noteRunStart(ctx, res)
	out, err := git.Output(ctx, l.Dir, "symbolic-ref", "-q", "--short", "HEAD")
	target := strings.TrimSpace(string(out))
	if err != nil || target == "" {
		return res.stop(StopError, "the project has no branch checked out", fmt.Errorf("workers need a branch checked out in %s to integrate into: %w", l.Dir, err))
	}
	strategy, err := mergeq.LookupStrategy(l.Config.Integrate)
	if err != nil {
		return res.stop(StopError, "no such integration strategy", err)
	}
	// One reading of the tracker serves every worker that needs one at
	// about the same time; its own Loop keeps the comments cache.
	reader := l.derive(l.Deps, nil)
	view := &guard.View{Read: reader.snapshotFresh, Debounce: readingDebounce}
	base, err := view.Since(ctx, 0)
	if err != nil {
		return res.stop(StopError, "could not snapshot the tracker", err)
	}
	p := &Pool{PoolSetup: PoolSetup{
		Workers: k,
		Target:  target,
		Trees:   &git.Manager{Repo: l.Dir, Root: filepath.Join(l.State.Dir(), WorkersDir)},
		Queue: &mergeq.Queue{Repo: l.Dir, Target: target, Remote: l.Config.WorkersRemote, Strategy: strategy, Journal: filepath.Join(l.State.Dir(), MergeJournalFile),
			TipFile: filepath.Join(l.State.Dir(), MergeTipFile), Tree: filepath.Join(l.State.Dir(), MergeTreeDir)},
		Client:      l.workerClient,
		StuckLabel:  StuckLabel,
		Scope:       l.Config.Scope,
		StatusFile:  filepath.Join(l.State.Dir(), WorkersStatusFile),
		KeepObjects: filepath.Join(l.State.Dir(), KeptObjectsDir),
		Hold:        o.hold,
		Paused:      o.paused,
		Yield:       o.yield,
		Log: func(e Event) {
			step := logjsonl.WorkerStep{Worker: e.Worker, IssueID: e.Issue, Kind: e.Kind, Detail: e.Detail}
			if r := e.Review; r != nil {
				step.PullRequest = &logjsonl.PullRequest{Number: r.PR, URL: r.URL, Branch: r.Branch, State: r.State}
			}
			l.event(logjsonl.EventWorker, step)
		},
	}, poolJudging: poolJudging{
		res:         res,
		baselineSeq: base.Seq,
		view:        view,
		actorPrefix: l.WorkerActor(""),
	}}
	p.setBaseline(base.Snap)
	p.Queue.Verify = func(ctx context.Context, dir string) error { return l.verifyIn(ctx, p, dir) }
	if l.Config.Integrate == "pr" {
		forge, err := l.forge()
		if err != nil {
			return res.stop(StopError, "integrate = pr without a forge", err)
		}
		p.Queue.Forge, p.ReviewPoll = forge, l.Config.ForgePoll
		if l.Config.Verify != "" {
			p.Checks = "verify: " + l.Config.Verify
		}
	}
	p.Actor = func(w string) string { return p.actorPrefix + w }
	if p.Scope != "" {
		p.InScope = p.inScope
	}
	if maxIter > 0 {
		p.Capped = func(claims int) bool {
			p.resMu.Lock()
			defer p.resMu.Unlock()
			return p.res.Iterations+p.inflight+claims >= maxIter
		}
	}
	p.Tally = &stateTally{l: l, p: p}
	p.RefMoved = l.refMoved(p)
	// A judgement's reading waits for every worker whose agent has ended
	// and, for a moment (Debounce), for those whose agent runs, which in
	// a pool in step end together; it starts at once when all of them
	// wait.
	view.Expected = func() (int, int) {
		return int(p.judgingSoon.Load()), int(p.agents.Load())
	}
	// The claim's read-back reads nothing where bd's answer to a claim
	// can be trusted (beads.Version.TrustedClaims): who holds the issue
	// is in that answer, and the rest is as the run's last reading holds
	// it (claimedIssue). An issue no reading has held yet, and any claim
	// of a bd whose answers are not trusted, is read back with bd show.
	trusted := false
	if v, err := beads.ReadVersion(ctx, l.BD.Bin); err == nil {
		trusted = v.TrustedClaims()
	}
	p.ReadBack = func(_ context.Context, claimed beads.Issue) (beads.Issue, bool, error) {
		if !trusted {
			return beads.Issue{}, false, nil
		}
		is, ok := claimedIssue(l.reads(), claimed)
		return is, ok, nil
	}
	p.Iterate = func(ctx context.Context, a Assignment) Ended {
		if o.isPaused() && o.hold != nil {
			// Paused while the issue was claimed: its agent starts
			// after the resume.
			if err := o.hold(ctx); err != nil {
				return Ended{Kind: Errored, Err: err}
			}
		}
		return l.workerIteration(ctx, p, maxIter, a)
	}
	sum, err := p.Run(ctx)
	_ = os.Remove(p.StatusFile)
	seen := l.reads().hidden.Load()
	l.closingRead(ctx)
	hiddenAtEnd := l.reads().hidden.Load() > seen
	res.PullRequests = sum.Reviews
	for _, s := range sum.Saved {
		l.human().Warn("work left in a worker's worktree (a failed attempt's, or a stopped worker's) is kept on a branch", "worker", s.Worker, "branch", s.Branch)
	}
	switch {
	case ctx.Err() != nil:
		return stopped(ctx, res, "stopped by a signal; the workers' attempts in flight were given back")
	case err == nil && o.yielding():
		return res.stop(StopMaxIterations, yieldReason, ErrCapReached)
	case errors.Is(err, ErrCapReached):
		if res.Stop == "" {
			res.Stop, res.Reason = StopMaxIterations, fmt.Sprintf("reached the cap of %d iterations", maxIter)
		}
		return err
	case errors.Is(err, ErrAgentUnusable):
		return res.stop(StopAgentUnusable, err.Error(), err)
	case err != nil:
		return res.stop(StopError, "a worker failed", err)
	}
	if len(res.Stuck) > 0 && len(res.Closed) == 0 {
		return res.stop(StopAllSkipped, "every issue the workers took is stuck; PLANNING or `ralphd reset ID` puts it back", nil)
	}
	// After hidden changes found at the end, the issues whose closes
	// their charge reopened are ready: the hidden changes say why (below).
	left, elsewhere := l.readyLeft(ctx, p)
	res.elsewhere = elsewhere
	if len(left) > 0 && !hiddenAtEnd {
		if p.capped() {
			return res.stop(StopMaxIterations, fmt.Sprintf("reached the cap of %d iterations with ready work left (next: %s)", maxIter, left[0]), ErrCapReached)
		}
		return res.stop(StopMaxIterations, fmt.Sprintf("the workers stopped, but bd still lists ready work none of them took: %s; run again", strings.Join(left, ", ")), ErrCapReached)
	}
	if !hiddenAtEnd {
		if err := l.queueEmpty(ctx, res); !errors.Is(err, errHiddenFound) {
			return err
		}
	}
	return res.stop(StopMaxIterations, "the full reading of the tracker that decides the run is done found changes hidden from the readings of what changed; "+
		"they were reverted and charged, and work may be ready again: run again", ErrCapReached)
}

// readyLeft is the pool's last word before it reports its work done: the
// issues `bd ready` lists that a worker should have taken (not stuck, not
// someone's, not the fleet's, in scope, not an epic waiting on its
// children). Workers leave when their claims find nothing; this holds the
// exit 0 to bd's own list, whatever a claim passed over. A claim one of
// this clone's workers left on an open issue is freed here and counted
// (claimsleft.go): no claim takes an assigned issue. The ready issues
// assigned to someone else are returned apart, for the run's last word. A
// failing bd call leaves it to the checks after it.
func (l *Loop) readyLeft(ctx context.Context, p *Pool) (left, elsewhere []string) {
	ready, err := l.BD.Ready(ctx, beads.ReadyOptions{Parent: p.Scope})
	if err != nil {
		return nil, nil
	}
	epics := epicWaits{l: l}
	for _, is := range ready {
		if leftClaim(is, p.actorPrefix, nil) { // the workers have left: nobody holds it
			if err := freeClaim(ctx, l.BD, is.ID); err != nil {
				l.human().Warn("a claim left on an open issue keeps it from the workers", "issue", is.ID, "assignee", is.Assignee, "err", err)
			}
			is.Assignee = ""
		}
		if is.HasLabel(StuckLabel) || is.HasLabel(FleetLabel) || (p.InScope != nil && !p.InScope(is)) {
			continue
		}
		if is.Assignee != "" {
			elsewhere = append(elsewhere, is.ID+" ("+is.Assignee+")")
			continue
		}
		kids, err := epics.of(ctx, is)
		if err != nil {
			return nil, elsewhere
		}
		if len(kids) == 0 {
			left = append(left, is.ID)
		}
	}
	return left, elsewhere
}

// workerClient is bd for a worker: its actor, run in dir.
func (l *Loop) workerClient(actor, dir string) *beads.Client {
	c := &beads.Client{Bin: l.RealBD, Dir: dir, Actor: actor, Env: l.BD.Env, Timeout: l.BD.Timeout, Redact: l.BD.Redact, OnCall: l.BD.OnCall, OnWrite: l.BD.OnWrite}
	if c.Bin == "" {
		c.Bin = l.BD.Bin
	}
	return c
}

// verifyIn runs the verify command in dir (the merge queue's check of a
// rebased result). The rebased result is the agents' code, run after
// their iterations were judged: it runs under the guard, in the agents'
// sandbox (with no branch of its own to write), contained, and is judged
// like an iteration (see queueJudgement): a forbidden change
// to the tracker found after it is reverted, and fails the integration.
func (l *Loop) verifyIn(ctx context.Context, p *Pool, dir string) error {
	if l.Config.Verify == "" {
		return nil
	}
	// Its sandbox shares the repository as a worker's does (sandboxShared).
	d := l.Deps
	d.Dir = dir
	w := l.derive(d, &seat{pool: p})
	// The queue's window, like an iteration's: a change another judgement
	// finds while it is open is charged to it too.
	win := &buildIter{issue: beads.Issue{ID: "(merge queue)"}, win: p.ledger.openQueue(l.now())}
	defer p.ledger.closeAgent(win.win)
	var c check
	if err := w.guardedChecks(ctx, 0, func(ce checkEnv) {
		c = w.runCheck(ctx, ce, check{Name: "verify", Gate: GateVerify, Command: l.Config.Verify})
	}); err != nil {
		return err
	}
	found, err := l.queueJudgement(ctx, p, win)
	if err != nil {
		return fmt.Errorf("judge the tracker after verify: %w", err)
	}
	if len(found) > 0 {
		return fmt.Errorf("the tracker changed around the guard while `%s` ran after the rebase (reverted), or beside it: %s", c.Command, strings.Join(found, "; "))
	}
	if !c.passed() {
		return fmt.Errorf("`%s` exited %d after the rebase:\n%s", c.Command, c.ExitCode, judge.Truncate(c.Output, 30))
	}
	return nil
}

// queueJudgement judges the tracker after the merge queue ran the agents'
// code in win's window, as a worker's judgement does: a reading that
// started after the code ended, diffed against the pool's baseline inside
// the judging window, its forbidden changes reverted and charged to the
// other windows open beside it. It returns what it found and what other
// judgements charged to win: whoever made it (the code the queue ran, or
// an agent running beside it), the integration fails, so the work stays
// on a branch, and its issue is retried.
func (l *Loop) queueJudgement(ctx context.Context, p *Pool, win *buildIter) ([]string, error) {
	j := l.derive(l.Deps, &seat{pool: p})
	after, err := j.snapshotAfter(ctx)
	if err != nil {
		return nil, err
	}
	endWindow := j.judgeWindow(win)
	defer endWindow(nil)
	if after, err = j.notBehindBaseline(ctx, after); err != nil {
		return nil, err
	}
	at := j.readAt()
	fixed, found := j.revertAgainst(ctx, win.before, after, 0, owner{})
	if len(fixed) > 0 {
		if after, err = j.readTracker(ctx); err != nil {
			after = nil // the baseline stays; the next judgement reads again
		}
	}
	if at.IsZero() {
		at = l.now()
	}
	p.ledger.found(finding{kind: trackerFinding, details: slices.Clone(found), by: win.win, at: at, sandboxed: l.sandboxed(ModeBuild)})
	for _, c := range p.ledger.judged(win.win) {
		found = append(found, fmt.Sprintf("%s (found by iteration %d, worker %s, issue %s, while the queue's verify ran)", c.detail, c.iteration, c.worker, c.issueID))
	}
	endWindow(after)
	return found, nil
}

// forWorker is the Loop one worker's iterations run with: the worktree,
// bd as the worker's actor, and the worker's own running record.
func (l *Loop) forWorker(p *Pool, a Assignment) (*Loop, error) {
	st, err := l.State.ForWorker(a.Worker)
	if err != nil {
		return nil, err
	}
	d := l.Deps
	d.Dir, d.BD, d.State = a.Dir, a.BD, st
	d.Env = append(slices.Clip(l.environ()), "BEADS_ACTOR="+a.Actor)
	d.Human = l.human().With("worker", a.Worker)
	return l.derive(d, &seat{pool: p, actor: a.Actor, agentEnded: a.AgentEnded, win: a.win}), nil
}

// workerIteration is one BUILD iteration of one worker: the run's caps,
// the issue's stuck check, then buildIteration in the worker's Loop, its
// result merged into the run's.
func (l *Loop) workerIteration(ctx context.Context, p *Pool, maxIter int, a Assignment) Ended {
	w, err := l.forWorker(p, a)
	if err != nil {
		return Ended{Kind: Stopped, Err: err}
	}
	r, err := w.record(a.Issue.ID)
	if err != nil {
		return Ended{Kind: Stopped, Err: err}
	}
	if cause := stuck(r, l.Config.MaxStuck); cause != judge.NotStuck {
		p.resMu.Lock()
		err := w.markStuck(ctx, p.res, r)
		p.resMu.Unlock()
		if err != nil {
			return Ended{Kind: Stopped, Err: err}
		}
		return Ended{Kind: Skipped, Err: errors.New(stuckWhy(r, cause))}
	}
	p.resMu.Lock()
	if maxIter > 0 && p.res.Iterations+p.inflight >= maxIter {
		p.res.stop(StopMaxIterations, fmt.Sprintf("reached the cap of %d iterations with ready work left (next: %s)", maxIter, a.Issue.ID), nil)
		p.resMu.Unlock()
		return Ended{Kind: Stopped, Err: ErrCapReached}
	}
	if l.overBudget(p.res) {
		p.res.stop(StopBudget, fmt.Sprintf("the run's agent cost reached the cap of $%.2f", l.Config.MaxCostUSD), nil)
		p.resMu.Unlock()
		return Ended{Kind: Stopped, Err: ErrCapReached}
	}
	n := p.next
	p.next++
	p.inflight++
	mine := &Result{Mode: ModeBuild, RunID: l.RunID, Iterations: n, built: p.res.ledger()}
	start := 0.0
	if p.res.CostUSD != nil {
		start = *p.res.CostUSD
		mine.CostUSD = &start // the budget left is the run's, not the worker's
	}
	p.resMu.Unlock()
	if a.started != nil {
		a.started() // counted in inflight now (counted twice a moment: capNear only waits)
	}

	// Each worker's iteration asks the run's rota which agent runs it; the
	// rota's switches are logged where its limits and drops are.
	w.cur = Agent{}
	w.chooseAgent()
	endWorking := p.startWorking(a.Issue.ID, a.Actor, n)
	it, err := w.buildIteration(ctx, mine, a.Issue)
	endWorking()

	p.resMu.Lock()
	p.inflight--
	p.merge(mine, n, start)
	p.resMu.Unlock()
	switch {
	case ctx.Err() != nil:
		return Ended{Kind: Errored, Err: ctx.Err()}
	case errors.Is(err, ErrAgentUnusable):
		p.resMu.Lock()
		dropped := w.dropAgent(p.res, it.reason)
		p.resMu.Unlock()
		if dropped {
			return Ended{Kind: Skipped, Err: err} // another agent takes the issue up
		}
		return Ended{Kind: Stopped, Err: err}
	case errors.Is(err, ErrInterrupted):
		return Ended{Kind: Skipped, Err: err}
	case err != nil:
		return Ended{Kind: Stopped, Err: fmt.Errorf("%s: %w", it.reason, err)}
	case it.rateLimited:
		quota := backoff{max: l.Config.QuotaBackoffMax}
		if w.limitAgent(it, &quota) {
			return Ended{Kind: Skipped, Err: errors.New("rate-limited; another agent runs until the limit ends")}
		}
		if err := w.waitQuota(ctx, &quota, it.resetAt, it.resetRounded, n+1, it.reason); err != nil {
			return Ended{Kind: Errored, Err: err}
		}
		return Ended{Kind: Skipped, Err: errors.New("rate-limited")}
	case slices.Contains(mine.Closed, a.Issue.ID):
		return Ended{Kind: Finished}
	}
	return Ended{Kind: Unfinished}
}

// merge adds one worker iteration's result (its iterations numbered from
// n, its cost counted from start) to the run's. The caller holds p.resMu.
func (p *Pool) merge(mine *Result, n int, start float64) {
	res := p.res
	res.Iterations += mine.Iterations - n // 0 for an iteration given back
	for _, id := range mine.Tried {
		res.tried(id)
	}
	res.Closed = append(res.Closed, mine.Closed...)
	res.Stuck = append(res.Stuck, mine.Stuck...)
	res.Skipped = append(res.Skipped, mine.Skipped...)
	res.FailureBranches = append(res.FailureBranches, mine.FailureBranches...)
	res.Violations += mine.Violations
	res.Created = append(res.Created, mine.Created...)
	res.Usage = res.Usage.Add(mine.Usage)
	if mine.CostUSD != nil {
		spent := *mine.CostUSD - start
		if res.CostUSD != nil {
			spent += *res.CostUSD
		}
		res.CostUSD = &spent
	}
}

// stateTally keeps the workers' attempts in ralphd's state, where `ralphd
// status` and `ralphd reset` see them. The BUILD iteration counts and
// judges its own attempt; the tally adds the failures only the pool sees
// (integration), and resets an issue once its work is on the target.
type stateTally struct {
	l *Loop
	p *Pool
}

func (g *stateTally) Attempts(issue string) (int, error) { return g.l.State.Attempt(issue) }

func (g *stateTally) Failed(ctx context.Context, a Assignment, f Failure) (int, bool, error) {
	id := a.Issue.ID
	r, err := g.l.record(id)
	if err != nil {
		return 0, false, err
	}
	if f.Integration {
		// The iteration closed the issue and counted its attempt, whose
		// record stays until integration (a worker's seat): record why it failed.
		g.p.resMu.Lock()
		g.p.res.Closed = slices.DeleteFunc(g.p.res.Closed, func(x string) bool { return x == id })
		g.p.resMu.Unlock()
		at := judge.Attempt{Iteration: r.Count, LastGate: "integrate", ExitCode: 1, FilesModified: f.Conflicts,
			Outputs: []judge.Output{{Name: "integrate", ExitCode: 1, Text: f.Why}}}
		if err := g.l.State.RecordFailure(id, r.Judgement, at); err != nil {
			return r.Count, false, err
		}
		if r, err = g.l.record(id); err != nil {
			return 0, false, err
		}
		if stuck(r, g.l.Config.MaxStuck) != judge.NotStuck {
			w, err := g.l.forWorker(g.p, a)
			if err != nil {
				return r.Count, true, err
			}
			w.BD = a.BD
			g.p.resMu.Lock()
			err = w.markStuck(ctx, g.p.res, r)
			g.p.resMu.Unlock()
			return r.Count, true, err
		}
		return r.Count, false, nil
	}
	// The iteration judged itself, and marked the issue stuck if it is.
	return r.Count, stuck(r, g.l.Config.MaxStuck) != judge.NotStuck, nil
}

func (g *stateTally) Integrated(issue string) error {
	if _, err := g.l.State.Reset(issue); err != nil {
		return err
	}
	g.l.forgetSession(issue)
	return nil
}

// sweepWorkers settles the iterations workers of a killed ralphd left, as
// Sweep does the single loop's: one running record per worker. The
// workers' claims and worktrees are the pool's to recover when it starts.
func (l *Loop) sweepWorkers(ctx context.Context) ([]string, []sweptWindow) {
	if l.State.Worker() != "" {
		return nil, nil
	}
	names, err := l.State.RunningWorkers()
	if err != nil {
		return []string{err.Error()}, nil
	}
	var did []string
	var judged []sweptWindow
	for _, name := range names {
		st, err := l.State.ForWorker(name)
		if err != nil {
			continue
		}
		d := l.Deps
		d.State = st
		d.Log, d.Observer, d.Human = nil, nil, nil // one summary line, below
		w := l.derive(d, nil)
		msg, sw, err := w.sweep(ctx)
		if err != nil {
			did = append(did, fmt.Sprintf("worker %s: %v", name, err))
			continue
		}
		judged = append(judged, sw...)
		if msg != "" {
			did = append(did, "worker "+name+": "+strings.TrimPrefix(msg, "sweep: "))
		}
	}
	return did, judged
}

// tagWorker adds "worker" to an event's data, so that the lines of
// concurrent workers in the run's one log can be told apart. Data that is
// not a JSON object is wrapped.
func tagWorker(data any, worker string) any {
	b, err := json.Marshal(data)
	if err != nil {
		return data
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return map[string]any{"worker": worker, "value": data}
	}
	m["worker"] = worker
	return m
}

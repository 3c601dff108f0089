// A Pool runs K workers over one bd tracker: each claims an issue
// through bd (internal/beads), works on it in its own git worktree
// (internal/git), and hands a finished issue to the merge queue of
// one (internal/mergeq). The tracker and git are the only shared state.
//
// The work on an issue is an Iteration the caller supplies (ralphd's BUILD
// iteration). A failed attempt is one whose iteration does not finish its
// issue or whose integration fails (a conflict, a red verify after the
// rebase, rejected pushes); then the issue is reopened with a note that
// says why (naming the conflicting files) and released, so that it is
// retried on a fresh base. A lost claim race is never an attempt. The
// attempts are kept by a Tally (ralphd's state store, so `ralphd status`
// and `ralphd reset` see them), which also decides when an issue is stuck;
// a stuck issue is labelled StuckLabel and no worker claims it again.

package modes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/mergeq"
)

// Assignment is one claimed issue given to one worker.
type Assignment struct {
	Worker  string
	Actor   string
	Issue   beads.Issue
	Attempt int           // this worker pool's attempt number on the issue, from 1
	Dir     string        // the worker's worktree, checked out at the target
	Branch  string        // the worker's branch
	BD      *beads.Client // bd as the worker's actor, running in Dir
	// AgentEnded, when set, is for the Iteration to call once its agent
	// has ended, before it reads the tracker to judge the agent's work:
	// the pool then claims the worker's next issue beside the judgement.
	// It returns at once.
	AgentEnded func()

	// win is the iteration's window in the pool's ledger.
	win *window
	// started, when set, is called once the iteration counts against the
	// run's cap (workerIteration).
	started func()
}

// Iteration works on an assignment in its worktree, and says what it
// came to.
type Iteration func(ctx context.Context, a Assignment) Ended

// Ended is what an Iteration came to. The pool switches on its Kind.
type Ended struct {
	Kind End
	// Err says why: how an Errored iteration failed, why a Skipped one
	// gave its issue back, or what stopped the pool (Run returns it).
	Err error
}

// End is how an Iteration ended.
type End int

const (
	// Unfinished: the issue stays open; a failed attempt.
	Unfinished End = iota
	// Finished: the iteration closed the issue in bd and passed its own
	// checks; its work goes to the merge queue.
	Finished
	// Errored: the iteration itself failed (Err); a failed attempt.
	Errored
	// Skipped: the issue is released without a failed attempt, and the
	// worker goes on (it was found stuck, or its agent was rate-limited).
	Skipped
	// Stopped: the issue is released without a failed attempt, and the
	// pool drains (a cost cap, an iteration cap, an agent that cannot
	// run): no worker claims again, the others finish the issues they
	// hold, and Run returns the first Stopped iteration's Err.
	Stopped
)

// Failure is one failed attempt, as the pool hands it to the Tally.
type Failure struct {
	Why string
	// Integration: the iteration finished the issue, but its work could
	// not be integrated. Otherwise the iteration itself failed.
	Integration bool
	// Conflicts are the files a rebase conflicted on.
	Conflicts []string
}

// Tally keeps the attempts on issues and decides when one is stuck.
type Tally interface {
	// Attempts returns the failed attempts counted on an issue so far.
	Attempts(issue string) (int, error)
	// Failed records a failed attempt of a (unless the Iteration already
	// counted it) and returns the attempts now counted and whether the
	// issue is stuck; the Tally marks a stuck issue (StuckLabel) itself.
	Failed(ctx context.Context, a Assignment, f Failure) (attempts int, stuck bool, err error)
	// Integrated: the issue's work is on the target; its attempts end.
	Integrated(issue string) error
}

// MemoryTally is a Tally that keeps the counts in memory, for tests and
// tools: Max failed attempts (zero: DefaultMaxAttempts) make an issue
// stuck, which is then labelled Label through the worker's bd client.
type MemoryTally struct {
	Max   int
	Label string

	mu    sync.Mutex
	count map[string]int
}

// Attempts implements Tally.
func (m *MemoryTally) Attempts(issue string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count[issue], nil
}

// Failed implements Tally.
func (m *MemoryTally) Failed(ctx context.Context, a Assignment, f Failure) (int, bool, error) {
	m.mu.Lock()
	if m.count == nil {
		m.count = map[string]int{}
	}
	m.count[a.Issue.ID]++
	n := m.count[a.Issue.ID]
	m.mu.Unlock()
	limit := m.Max
	if limit <= 0 {
		limit = DefaultMaxAttempts
	}
	if n < limit {
		return n, false, nil
	}
	if m.Label != "" && a.BD != nil {
		if err := a.BD.LabelAdd(ctx, a.Issue.ID, m.Label); err != nil {
			return n, true, fmt.Errorf("label %s stuck: %w", a.Issue.ID, err)
		}
	}
	return n, true, nil
}

// Integrated implements Tally.
func (m *MemoryTally) Integrated(issue string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.count, issue)
	return nil
}

// Defaults for a Pool's zero fields.
const (
	DefaultMaxAttempts = 3
	DefaultIdle        = 2 * time.Second
)

// Pool is K workers. Run it once. It is made of four parts, each with its
// own owner: what it runs with (PoolSetup, set before Run), its claims
// and integrations (poolWork), what it holds against the agents
// (poolIntegrity), and, in a BUILD run with workers (buildWorkers), what
// its workers' iterations share for their judgements: the run's result
// and iteration numbers, the tracker's baseline and reading (poolJudging).
type Pool struct {
	PoolSetup
	poolWork
	poolIntegrity
	poolJudging
}

// PoolSetup is what a Pool runs with, set before Run.
type PoolSetup struct {
	// Workers is K; zero means 1.
	Workers int
	// Target is the branch work is integrated into.
	Target string
	// Trees and Queue are the worktrees and the merge queue.
	Trees *git.Manager
	Queue *mergeq.Queue
	// Client returns the bd client of a worker, running in dir with the
	// worker's actor.
	Client func(actor, dir string) *beads.Client
	// Actor names a worker's bd actor; nil means "ralphd/<host>/<worker>".
	Actor func(worker string) string
	// Iterate is the work.
	Iterate Iteration
	// Tally keeps the attempts; nil means a MemoryTally labelling
	// StuckLabel.
	Tally Tally
	// StuckLabel marks issues no worker claims again.
	StuckLabel string
	// Scope, when set, limits the claims to the descendants of this issue
	// (an epic), as `bd ready --parent` does. InScope, when set, is asked
	// about each candidate bd lists there before it is claimed (see
	// claim.Claimer.NextIn).
	Scope   string
	InScope func(beads.Issue) bool
	// Capped, when set, reports whether the run may start no more
	// iterations (its iteration cap is reached) once claims more
	// iterations start: with claims 0 a worker then claims nothing more
	// and leaves (an issue claimed only to be given back costs two
	// writes, each holding an embedded tracker's lock), and the run asks
	// bd once whether work was left (Loop.readyLeft); with the claims
	// under way, a worker waits for them before it claims.
	Capped func(claims int) bool
	// Idle is how long a worker that found nothing to claim waits, while
	// others still work, for want of an event in the pool (see idle.go)
	// before it asks bd again; zero means DefaultIdle.
	Idle time.Duration
	// RemoteWait bounds, with a remote, the wait for the work of a
	// blocker another clone's ralphd closed (remote.go); zero means
	// DefaultRemoteWait.
	RemoteWait time.Duration
	// ReviewPoll is how long the pool waits between reads of a pull
	// request, with integrate = pr (review.go); zero means
	// DefaultReviewPoll. Checks names ralphd's checks for the pull
	// request's body (the verify command).
	ReviewPoll time.Duration
	Checks     string
	// ReadBack, when set, is the workers' claim read-back (see
	// beads.Claimer.ReadBack); nil means `bd show`.
	ReadBack func(ctx context.Context, claimed beads.Issue) (beads.Issue, bool, error)
	// Hold, when set, is asked before each claim and returns once the
	// worker may claim (the dashboard's pause; see pause.go). Paused,
	// when set, says whether Hold would wait now: a paused pool makes no
	// claim beside a judgement either.
	Hold   func(ctx context.Context) error
	Paused func() bool
	// Yield, when set, says that another daemon sharing the tracker is
	// about to plan (fleet.go): the pool drains, as at the end of a batch.
	Yield func() bool
	// Log receives events; nil means none. It is called from the worker
	// goroutines, one call at a time.
	Log func(Event)

	// StatusFile, when set, is rewritten atomically (a StatusFile in
	// JSON: this process's PID, one entry per worker) whenever a worker
	// takes or finishes an issue, for `ralphd status` in another process.
	StatusFile string
	// KeepObjects, when set, is where the pool keeps hard links of the
	// repository's object files, and holds its history beside the refs
	// it owns (refs.go, git.History): what an agent deletes or rewinds
	// is put back at the next check. "" holds none.
	KeepObjects string
	// RefMoved, when set, is told of each move of the target or of a
	// worker's branch or HEAD that the pool did not make (refs.go), after
	// it was put back; the suspects it names not yet integrated have
	// their attempt failed. Run sets the Queue's Moved to report to it.
	RefMoved func(RefMove)
}

// poolWork is the pool's claims, its idle parking and the integrations
// under way, guarded by mu (but what says otherwise).
type poolWork struct {
	mu   sync.Mutex
	busy int
	held map[string]*holding // issues a worker of this pool holds, until handled
	// leftLooked is the generation (plus one) whose workers' leaving last
	// looked for claims left on reopened issues (freeLeftOnLeave).
	leftLooked int
	// unfinished are the issues whose last handling here ended without
	// their work on the target (blockers.go).
	unfinished map[string]bool
	tally      Tally
	sum        Summary
	draining   bool
	stopErr    error
	status     map[string]WorkerStatus

	// Idle parking (idle.go): gen counts the events that can make work
	// ready; emptyIn is the generation whose probe found nothing (-1:
	// none); wake is closed to wake the parked workers; probe lets one
	// probe run at a time.
	gen, emptyIn int
	wake         chan struct{}
	probe        chan struct{}
	// claiming counts the workers in a claim (the cap counts them: capWait).
	claiming int
	// starting counts the claims won whose iterations have not started
	// (capNear counts them with the claims under way).
	starting int
	// queued is each worker's work in the merge queue (queue.go); jobs
	// counts the integrations under way, and abort stops the pool when
	// one fails for good.
	queued map[string]*job
	// reviews are the pull requests the pool waits on (review.go), by
	// issue; forgeCalls and forgeNotModified count the forge's requests.
	reviews                      map[string]ReviewStatus
	rewatched                    []reviewMark // journaled by a stopped pool (review.go)
	forgeCalls, forgeNotModified int
	jobs                         sync.WaitGroup
	abort                        context.CancelCauseFunc

	probes        atomic.Int64 // `bd ready --claim` calls made
	probesSkipped atomic.Int64 // answered by a probe of the same generation
}

// poolIntegrity is what the pool holds against the agents: the windows'
// ledger, the refs and objects it keeps, and the scrubs.
type poolIntegrity struct {
	// ledger holds the iterations' windows, and charges them with what
	// the checks of the refs and the scrubs find (ledger.go).
	ledger ledger
	// checking serialises the checks of the refs (refs.go); refs, clean
	// (when they were last all found in place), and when the last check
	// began and what it returned, are guarded by mu.
	checking     sync.Mutex
	refs         map[string]*refState
	clean        time.Time
	lastCheck    time.Time
	lastCheckErr error
	// refLocks are the workers' locks against a check putting back their
	// refs while they start to move them (recheck).
	refLocks map[string]*sync.Mutex
	// history is the repository's refs (but the pool's own) and objects
	// as the last check found them; nil without KeepObjects.
	history *git.History
	// scrubRepo names the git directories to scrub (planted.go);
	// treeClean is, per worker, when a scrub of its worktree last found
	// nothing planted.
	scrubRepo *git.Scrubber
	treeClean map[string]time.Time
}

// poolJudging is the BUILD run's judgements (set by buildWorkers; zero
// in a pool that judges nothing itself).
type poolJudging struct {
	// resMu guards res, the run's result, and the iteration numbers:
	// next numbers iterations (unique in the run, never reused); inflight
	// counts those running, for the iteration cap.
	resMu          sync.Mutex
	res            *Result
	next, inflight int
	// actorPrefix starts the bd actor of every worker of this pool.
	actorPrefix string
	// judging serialises the tamper judgements of concurrent iterations;
	// baseline is the tracker as the last judgement left it (forbidden
	// changes reverted). Every iteration is judged against it, not against
	// its own start: a change (or a revert) another worker's window made is
	// judged once, by whichever judgement sees it first.
	judging  sync.Mutex
	baseline guard.Snapshot
	// scoped is the ids under Scope in baseline (workers_scope.go).
	scoped atomic.Pointer[map[string]bool]
	// epics are the epics in baseline and their children (epics.go).
	epics atomic.Pointer[epicFamily]
	// baselineSeq numbers the reading baseline is (see trackview): a
	// judgement never diffs the baseline against an older reading.
	baselineSeq uint64
	// view is the pool's one reading of the tracker, shared by the
	// judgements.
	view *guard.View
	// judgingSoon counts the workers whose agent has ended and whose
	// judgement has not had its first reading yet: they will ask for one
	// soon, so a reading waits for them (see trackview.View.Expected).
	judgingSoon atomic.Int32
	// working maps each issue a worker's iteration is on to that
	// worker's actor: the closes its judgement will judge. Its own lock:
	// judgements read it while they hold judging.
	workingMu sync.Mutex
	working   map[string]string
	iterOf    map[string]credit // a worker's actor: the iteration it is in
	// ownStuck holds the issues ralphd itself labelled stuck in this run
	// (issue id → true): the pool's baseline may not have the label yet,
	// and a judgement must not take it for an agent's (revertAgainst).
	ownStuck sync.Map
	// agents counts the workers whose agent runs: each will ask for a
	// reading when it ends.
	agents atomic.Int32
}

// WorkerStatus is what one worker is doing.
type WorkerStatus struct {
	Worker   string    `json:"worker"`
	Actor    string    `json:"actor"`
	Worktree string    `json:"worktree,omitempty"`
	Issue    string    `json:"issue,omitempty"` // "" when idle
	Attempt  int       `json:"attempt,omitempty"`
	Since    time.Time `json:"since"`
	// Queued is the issue whose work the worker handed to the merge
	// queue, until it is integrated or given back.
	Queued string `json:"queued,omitempty"`
}

// ReviewStatus is a pull request the pool waits on.
type ReviewStatus struct {
	Issue  string `json:"issue"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	PR     int    `json:"pr,omitempty"` // 0 until the forge opened it
	URL    string `json:"url,omitempty"`
	// State is one of ReviewOpening, ReviewWaiting, ReviewChecksFailing,
	// ReviewChangesRequested, ReviewMerged, ReviewClosed; a settled pull
	// request keeps its last state until the issue's next one.
	State string    `json:"state"`
	Since time.Time `json:"since"` // when its work was pushed
}

// setReview records the pull request of s.Issue (id), or forgets id's
// with a zero s, rewrites the status file, and logs a change of state as
// worker's event.
func (p *Pool) setReview(worker, id string, s ReviewStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reviews == nil {
		p.reviews = map[string]ReviewStatus{}
	}
	old, had := p.reviews[id]
	if s.Issue == "" {
		delete(p.reviews, id)
	} else {
		p.reviews[id] = s
	}
	p.writeStatusLocked()
	if s.Issue != "" && (!had || old.State != s.State || old.PR != s.PR || old.Commit != s.Commit) && p.Log != nil {
		// The dashboard's pull requests, from the run log.
		p.Log(Event{At: time.Now(), Worker: worker, Issue: id, Kind: "pull-request", Detail: fmt.Sprintf("#%d %s", s.PR, s.State), Review: &s})
	}
}

// countForge adds a read's requests to the pool's count.
func (p *Pool) countForge(st mergeq.PRState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forgeCalls += st.Calls
	p.forgeNotModified += st.NotModified
}

// ForgeCalls returns the forge requests the pool's reads of pull
// requests made, and how many of them were answered 304.
func (p *Pool) ForgeCalls() (calls, notModified int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forgeCalls, p.forgeNotModified
}

func (p *Pool) reviewsLocked() []ReviewStatus {
	out := make([]ReviewStatus, 0, len(p.reviews))
	for _, r := range p.reviews {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ReviewStatus) int { return strings.Compare(a.Issue, b.Issue) })
	return out
}

func (p *Pool) statusLocked() []WorkerStatus {
	out := make([]WorkerStatus, 0, len(p.status))
	for _, s := range p.status {
		if j := p.queued[s.Worker]; j != nil {
			s.Queued = j.issue.ID
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b WorkerStatus) int { return strings.Compare(a.Worker, b.Worker) })
	return out
}

// setStatus records a worker's status and rewrites the status file.
func (p *Pool) setStatus(s WorkerStatus) {
	s.Since = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status == nil {
		p.status = map[string]WorkerStatus{}
	}
	p.status[s.Worker] = s
	p.writeStatusLocked()
}

// writeStatusLocked rewrites the status file. The caller holds p.mu.
func (p *Pool) writeStatusLocked() {
	if p.StatusFile == "" {
		return
	}
	// The file only informs `ralphd status`: a failed write must not
	// stop the work, and the next change rewrites it whole.
	_ = writeStatusFile(p.StatusFile, p.statusLocked(), p.reviewsLocked())
}

// Event is one thing a worker did.
type Event struct {
	At     time.Time
	Worker string
	Issue  string
	Kind   string // claimed, lost, integrated, waiting, failed, stuck, idle-exit, cap-exit, pull-request
	Detail string
	// Review is set on a pull-request event: the pull request's new state.
	Review *ReviewStatus
}

// Summary is what a run did.
type Summary struct {
	Integrated []string            // issues whose work is on the target
	Failed     map[string][]string // issue → why each failed attempt failed
	Stuck      []string
	Saved      []git.Saved // leftovers kept on wip branches
	Claims     int         // claims won
	// Reviews are the pull requests of the run (integrate = pr), each in
	// its last state, by issue.
	Reviews []ReviewStatus
}

func (p *Pool) actor(worker string) string {
	if p.Actor != nil {
		return p.Actor(worker)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "ralphd/" + host + "/" + worker
}

func (p *Pool) log(e Event) {
	if p.Log == nil {
		return
	}
	e.At = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Log(e)
}

// Run recovers what a crash left (the merge queue's journal, worker
// worktrees), then runs the workers until none can claim anything and
// none is working, or ctx ends. The first error that is not a lost race
// stops every worker.
func (p *Pool) Run(ctx context.Context) (Summary, error) {
	if p.Iterate == nil || p.Trees == nil || p.Queue == nil || p.Client == nil || p.Target == "" {
		return Summary{}, errors.New("workers: the pool needs Iterate, Trees, Queue, Client and Target")
	}
	p.tally = p.Tally
	if p.tally == nil {
		p.tally = &MemoryTally{Label: p.StuckLabel}
	}
	p.sum = Summary{Failed: map[string][]string{}}
	p.probe, p.emptyIn = make(chan struct{}, 1), -1
	stopScrub, err := p.prepareScrub(ctx)
	if err != nil {
		return p.sum, err
	}
	defer stopScrub()
	// A worker's worktree a kill left half added fails every list of
	// worktrees, the queue's recovery among them: it goes first.
	if _, err := p.Trees.ForgetKilledAdds(ctx); err != nil {
		return p.sum, fmt.Errorf("workers: %w", err)
	}
	if _, err := p.Queue.Recover(ctx); err != nil {
		return p.sum, fmt.Errorf("workers: %w", err)
	}
	if err := p.recoverClaims(ctx); err != nil {
		return p.sum, err
	}
	saved, err := p.Trees.Recover(ctx, p.Target)
	p.sum.Saved = append(p.sum.Saved, saved...)
	if err != nil {
		return p.sum, fmt.Errorf("workers: %w", err)
	}
	// From here on the target is the queue's, and the workers' refs the
	// pool's: a move neither made is put back and reported (refs.go).
	p.Queue.Moved = p.targetMoved
	notes, err := p.Queue.Watch(ctx)
	for _, n := range notes {
		p.log(Event{Kind: "remote", Detail: n})
	}
	if err != nil {
		return p.sum, fmt.Errorf("workers: %w", err)
	}
	names := make([]string, max(1, p.Workers))
	for i := range names {
		names[i] = Name(i + 1)
	}
	if err := p.Trees.Reserve(ctx, names, p.Target); err != nil {
		return p.sum, fmt.Errorf("workers: %w", err)
	}
	// Every worktree is made now, one after the other (git cannot add
	// two at once), so that the workers start together: made on each
	// worker's first claim, they would start one worktree apart, and
	// stay apart (see queue.go).
	for _, w := range names {
		saved, err := p.Trees.Prepare(ctx, w, p.Target)
		p.sum.Saved = append(p.sum.Saved, saved...)
		if err != nil {
			return p.sum, fmt.Errorf("workers: %w", err)
		}
	}
	if err := p.holdHistory(ctx); err != nil {
		return p.sum, fmt.Errorf("workers: %w", err)
	}
	p.clean = time.Now()
	k := max(1, p.Workers)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.abort = cancel
	// The pull requests a stopped pool waited on, before any worker
	// claims: their dependents wait again.
	p.rewatch(ctx, p.rewatched)
	var wg sync.WaitGroup
	for i := 1; i <= k; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.work(ctx, Name(i)); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	p.jobs.Wait()
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	ferr := p.finish(fctx)
	if err := p.Queue.RemoveTree(fctx); err != nil {
		p.log(Event{Kind: "queue", Detail: err.Error()})
	}
	fcancel()
	ferr = errors.Join(ferr, p.Queue.Unwatch())
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sum.Reviews = p.reviewsLocked()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return p.sum, err
	}
	if ctx.Err() != nil {
		return p.sum, ctx.Err()
	}
	if ferr != nil {
		return p.sum, fmt.Errorf("workers: check the refs at the end: %w", ferr)
	}
	return p.sum, p.stopErr
}

// Name is the name of the pool's i-th worker, from 1.
func Name(i int) string { return fmt.Sprintf("w%d", i) }

// stop drains the pool after a Stopped iteration; Run returns the first
// stop's err.
func (p *Pool) stop(err error) {
	p.mu.Lock()
	if p.stopErr == nil {
		// The words the run reports this stop with.
		p.stopErr = fmt.Errorf("workers: stop: %w", err)
	}
	p.mu.Unlock()
	p.Drain()
}

// Drain stops the workers from claiming more work; each finishes the
// issue it holds, and Run returns once all have.
func (p *Pool) Drain() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draining = true
}

func (p *Pool) isDraining() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.draining
}

// work is one worker's loop.
func (p *Pool) work(ctx context.Context, worker string) error {
	actor := p.actor(worker)
	client := p.Client(actor, p.Queue.Repo)
	cl := &beads.Claimer{Tracker: probeGate{Tracker: client, p: p}, Actor: actor, ReadBack: p.ReadBack}
	if p.StuckLabel != "" {
		cl.ExcludeLabels = []string{p.StuckLabel}
	}
	idle := p.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	p.setStatus(WorkerStatus{Worker: worker, Actor: actor})
	var next *nextClaim // claimed while the last iteration was judged
	defer func() {
		if next != nil {
			if r, err := next.wait(); err == nil && r.Outcome == beads.Won {
				p.unstart()
			}
		}
		p.dropClaim(ctx, actor, next)
	}()
	for ctx.Err() == nil && !p.isDraining() {
		var res beads.ClaimResult
		var err error
		if next != nil {
			res, err = next.wait()
			next = nil
		} else {
			if stop, err := p.holdBeforeClaim(ctx, worker); stop {
				return err
			}
			if p.capWait(ctx) {
				p.log(Event{Worker: worker, Kind: "cap-exit"})
				return nil
			}
			res, err = p.claim(ctx, cl)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker %s: %w", worker, err)
		}
		switch res.Outcome {
		case beads.Won:
		case beads.Empty:
			// Others may still close what unblocks more work.
			if p.park(ctx, idle) {
				if p.freeLeftOnLeave(ctx, client) { // claimsleft.go
					continue
				}
				p.log(Event{Worker: worker, Kind: "idle-exit"})
				return nil
			}
			continue
		default: // lost, busy, unclaimable: a lost race, not an attempt
			p.log(Event{Worker: worker, Issue: res.Issue.ID, Kind: "lost", Detail: res.Outcome.String()})
			continue
		}
		started := sync.OnceFunc(p.unstart)
		if p.isDraining() || ctx.Err() != nil {
			started()
			p.dropClaim(ctx, actor, &nextClaim{res: res, done: closedChan})
			break
		}
		if p.paused() {
			// Claimed beside the last judgement, before the pause: given
			// back, and claimed again after it.
			started()
			p.dropClaim(ctx, actor, &nextClaim{res: res, done: closedChan})
			continue
		}
		p.mu.Lock()
		p.sum.Claims++
		p.mu.Unlock()
		h := p.takeHold(ctx, worker, actor, res)
		if h == nil {
			started()
			continue
		}
		// The worker claims its next issue as soon as its agent ends,
		// beside its judgement (see Assignment.AgentEnded); not while the
		// pool is paused.
		agentEnded := func() {
			if next == nil && ctx.Err() == nil && !p.isDraining() && !p.paused() && !p.yielding() && !p.capNear() {
				next = p.startClaim(ctx, cl)
			}
		}
		j, err := p.handle(ctx, worker, actor, res.Issue, h, agentEnded, started)
		started()
		if j != nil {
			p.enqueue(ctx, j) // the issue stays held, and busy, until it ends
			continue
		}
		p.release(res.Issue.ID, h)
		p.mu.Lock()
		p.endedLocked(res.Issue, false)
		p.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// capped reports whether the run may start no more iterations.
func (p *Pool) capped() bool { return p.Capped != nil && p.Capped(0) }

// capNear reports whether the claims under way would fill the run's
// iteration cap if each of them won: a claim made now could only be given
// back.
func (p *Pool) capNear() bool {
	if p.Capped == nil {
		return false
	}
	p.mu.Lock()
	pending := p.claiming + p.starting
	p.mu.Unlock()
	return p.Capped(pending)
}

// capWaitMax bounds capWait.
const capWaitMax = 2 * time.Minute

// unstart is a won claim's iteration started, or the claim given back.
func (p *Pool) unstart() {
	p.mu.Lock()
	p.starting--
	p.mu.Unlock()
}

// capWait waits, before a claim, while the claims under way may fill the
// run's iteration cap, and reports whether it is reached (the worker
// leaves). The claims end within their bd calls' time; one that does not
// win leaves room for this worker's. After capWaitMax it claims all the
// same: at worst an issue is claimed and given back, never a run held.
func (p *Pool) capWait(ctx context.Context) (capped bool) {
	deadline := time.Now().Add(capWaitMax)
	for p.capNear() && !p.capped() && ctx.Err() == nil && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p.capped()
}

// claim asks bd for an issue to work on (claim.Claimer.NextIn), keeping
// the pool's counts: a worker counts as busy from the moment it asks bd
// for work (one that won a claim and is reading it back is about to work,
// and may close what unblocks more, so the others must not decide that
// nothing is left and leave), and as claiming until the claim is read
// back. A claim that is not won ends its busy count.
func (p *Pool) claim(ctx context.Context, cl *beads.Claimer) (beads.ClaimResult, error) {
	return p.claimed(ctx, cl, p.countClaim())
}

// countClaim counts a worker as busy and claiming, and returns the
// generation the claim starts in (idle.go).
func (p *Pool) countClaim() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy++
	p.claiming++
	return p.gen
}

// claimed runs the claim counted by claim or startClaim.
func (p *Pool) claimed(ctx context.Context, cl *beads.Claimer, gen int) (beads.ClaimResult, error) {
	res, err := p.claimNext(ctx, cl)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claiming--
	if err == nil && res.Outcome == beads.Won {
		p.starting++
	}
	if err != nil || res.Outcome != beads.Won {
		p.busy--
		if err == nil && res.Outcome == beads.Empty {
			p.emptyIn = max(p.emptyIn, gen) // nothing to claim since gen (idle.go)
		}
		if p.busy == 0 {
			p.wakeLocked() // the parked workers may now leave
		}
	}
	return res, err
}

// nextClaim is a claim a worker started while its last iteration was
// judged.
type nextClaim struct {
	res  beads.ClaimResult
	err  error
	done chan struct{}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (n *nextClaim) wait() (beads.ClaimResult, error) {
	<-n.done
	return n.res, n.err
}

// startClaim starts a claim in the background. It is counted before
// startClaim returns (countClaim), so that the cap and the idle check see
// it at once.
func (p *Pool) startClaim(ctx context.Context, cl *beads.Claimer) *nextClaim {
	gen := p.countClaim()
	n := &nextClaim{done: make(chan struct{})}
	go func() {
		defer close(n.done)
		n.res, n.err = p.claimed(ctx, cl, gen)
	}()
	return n
}

// dropClaim gives back an issue a worker claimed but will not work on
// (the pool drains, or stops): not an attempt.
func (p *Pool) dropClaim(ctx context.Context, actor string, n *nextClaim) {
	if n == nil {
		return
	}
	res, err := n.wait()
	if err != nil || res.Outcome != beads.Won {
		return
	}
	_ = p.giveUp(ctx, actor, res.Issue.ID, nil)
	p.mu.Lock()
	p.endedLocked(res.Issue, false)
	p.mu.Unlock()
}

// handle works on one claimed issue, which h holds: worktree, iteration,
// and the reopening of a failed attempt. Finished work is handed to the
// merge queue: handle returns it as a job to integrate (queue.go), and
// the worker is free for its next issue.
func (p *Pool) handle(ctx context.Context, worker, actor string, is beads.Issue, h *holding, agentEnded, started func()) (*job, error) {
	p.log(Event{Worker: worker, Issue: is.ID, Kind: "claimed"})
	if err := p.setPending(worker, is.ID); err != nil {
		return nil, p.giveUp(ctx, actor, is.ID, err)
	}
	defer p.clearPending(worker)
	// bd calls an issue ready once its blockers are closed; a blocker
	// another worker here closed may not be on the target yet. Work on
	// the dependent starts from a target that has it, or not at all.
	why, err := p.awaitBlockers(ctx, worker, actor, is)
	switch {
	case ctx.Err() != nil:
		return nil, p.giveUp(ctx, actor, is.ID, nil) // stopped: not an attempt
	case err != nil:
		return nil, p.giveUp(ctx, actor, is.ID, err)
	case why != "":
		p.log(Event{Worker: worker, Issue: is.ID, Kind: "released", Detail: why})
		return nil, p.giveUp(ctx, actor, is.ID, nil)
	}
	base := p.Target
	if p.Queue.Remote != "" {
		// The remote's target: another clone's integrated work (the
		// blockers it closed among it) is there before it is here.
		tip, err := p.Queue.Base(ctx)
		if err != nil {
			p.log(Event{Worker: worker, Issue: is.ID, Kind: "stale-base", Detail: fmt.Sprintf("starting from the local %s: %v", p.Target, err)})
		} else {
			base = tip
		}
	}
	p.setBusy(worker)
	tree, saved, err := p.Trees.Open(ctx, worker, base)
	if err != nil && p.history != nil && ctx.Err() == nil {
		// Another worker's agent may have deleted objects the base needs
		// since the last check: the check puts them back.
		if cerr := p.checkAfter(ctx, time.Now()); cerr == nil {
			tree, saved, err = p.Trees.Open(ctx, worker, base)
		}
	}
	if err != nil {
		return nil, p.giveUp(ctx, actor, is.ID, fmt.Errorf("worker %s: %w", worker, err))
	}
	opened := tree.Base // the window checks the branch against it
	p.mu.Lock()
	p.sum.Saved = append(p.sum.Saved, saved...)
	p.mu.Unlock()
	prior, err := p.tally.Attempts(is.ID)
	if err != nil {
		return nil, p.giveUp(ctx, actor, is.ID, fmt.Errorf("worker %s: %w", worker, err))
	}
	attempt := prior + 1
	p.setStatus(WorkerStatus{Worker: worker, Actor: actor, Worktree: tree.Dir, Issue: is.ID, Attempt: attempt})
	defer p.setStatus(WorkerStatus{Worker: worker, Actor: actor, Worktree: tree.Dir})
	client := p.Client(actor, tree.Dir)
	a := Assignment{Worker: worker, Actor: actor, Issue: is, Attempt: attempt, Dir: tree.Dir, Branch: tree.Branch, BD: client, AgentEnded: agentEnded}
	win := p.openWindow(worker, is.ID, tree, opened)
	a.win, a.started = win, started
	end := p.Iterate(ctx, a)
	tip, cerr := p.endWindow(context.WithoutCancel(ctx), win, end.Kind == Finished)
	if cerr != nil {
		return nil, p.giveUp(ctx, actor, is.ID, fmt.Errorf("worker %s: check the refs: %w", worker, cerr))
	}
	charge := p.ledger.failed(win)
	if ctx.Err() != nil {
		return nil, p.giveUp(ctx, actor, is.ID, nil) // stopped: not an attempt
	}
	switch end.Kind {
	case Skipped:
		p.log(Event{Worker: worker, Issue: is.ID, Kind: "skipped", Detail: "workers: issue skipped: " + end.Err.Error()})
		return nil, p.giveUp(ctx, actor, is.ID, nil)
	case Stopped:
		p.stop(p.giveUp(ctx, actor, is.ID, end.Err))
		return nil, nil
	case Errored:
		return nil, p.fail(ctx, a, Failure{Why: fmt.Sprintf("the iteration failed: %v", end.Err) + also(charge)})
	case Unfinished:
		return nil, p.fail(ctx, a, Failure{Why: "the iteration did not finish the issue" + also(charge)})
	}
	if charge != "" {
		return nil, p.fail(ctx, a, Failure{Why: charge, Integration: true})
	}
	// One piece of work per worker in the queue: a worker that finishes
	// faster than the queue integrates waits here for its last one. The
	// hand-over looks at the refs again only when it waited.
	waited, err := p.awaitQueued(ctx, worker)
	if err != nil {
		return nil, p.giveUp(ctx, actor, is.ID, nil) // stopped: not an attempt
	}
	p.setBusy(worker)
	commit, err := p.Queue.Hand(ctx, mergeq.Request{Worker: worker, Issue: is.ID, Dir: tree.Dir, Branch: tree.Branch, Tip: tip, Checked: !waited && tip != ""})
	p.settleRefs(context.WithoutCancel(ctx), worker, commit) // commit "" (an error): read back
	switch {
	case ctx.Err() != nil:
		return nil, p.giveUp(ctx, actor, is.ID, nil) // stopped: the work stays on the worker's branch
	case err != nil:
		return nil, p.fail(ctx, a, Failure{Why: fmt.Sprintf("could not hand the work to the merge queue: %v", err), Integration: true})
	}
	j := &job{a: a, issue: is, win: win, commit: commit, h: h, done: make(chan struct{}), free: make(chan struct{})}
	if err := p.setQueued(j); err != nil {
		return nil, p.giveUp(ctx, actor, is.ID, err)
	}
	p.Trees.Handed(worker, commit) // the queue keeps it from here on
	p.clearPending(worker)         // the queued marker names the issue from here on
	return j, nil
}

// fail has the Tally count a failed attempt, notes why on the issue,
// then reopens and releases it; the Tally marks a stuck issue.
func (p *Pool) fail(ctx context.Context, a Assignment, f Failure) error {
	worker, actor, id := a.Worker, a.Actor, a.Issue.ID
	a.BD = p.Client(actor, p.Queue.Repo)
	p.mu.Lock()
	p.sum.Failed[id] = append(p.sum.Failed[id], f.Why)
	p.mu.Unlock()
	p.log(Event{Worker: worker, Issue: id, Kind: "failed", Detail: f.Why})
	n, stuck, err := p.tally.Failed(ctx, a, f)
	if err != nil {
		return p.giveUp(ctx, actor, id, fmt.Errorf("worker %s: %w", worker, err))
	}
	note := fmt.Sprintf("ralphd %s, attempt %d: %s", worker, n, f.Why)
	if _, err := a.BD.AppendNotes(ctx, id, note); err != nil {
		return p.giveUp(ctx, actor, id, fmt.Errorf("worker %s: note on %s: %w", worker, id, err))
	}
	if stuck {
		p.mu.Lock()
		p.sum.Stuck = append(p.sum.Stuck, id)
		p.mu.Unlock()
		p.log(Event{Worker: worker, Issue: id, Kind: "stuck", Detail: fmt.Sprintf("after %d attempts", n)})
	}
	return p.giveUp(ctx, actor, id, nil)
}

// giveUp reopens id if it was closed and releases the actor's claim on
// it; err, when set, is returned after.
func (p *Pool) giveUp(ctx context.Context, actor, id string, err error) error {
	ctx = context.WithoutCancel(ctx)
	p.mu.Lock()
	if h := p.held[id]; h != nil && h.actor == actor {
		h.lettingGo = true // another worker may now claim it fairly (work)
	}
	p.mu.Unlock()
	c := p.Client(actor, p.Queue.Repo)
	is, serr := c.Show(ctx, id)
	if serr != nil {
		return errors.Join(err, fmt.Errorf("release %s: %w", id, serr))
	}
	if is.Assignee != actor && is.Assignee != "" {
		return err // someone else's now: leave it
	}
	if is.Status == beads.StatusClosed {
		if _, rerr := c.Reopen(ctx, id, "ralphd: the work could not be integrated; see the notes"); rerr != nil && !strings.Contains(rerr.Error(), "not closed") {
			return errors.Join(err, fmt.Errorf("reopen %s: %w", id, rerr))
		}
	}
	if _, rerr := c.Release(ctx, id); rerr != nil {
		return errors.Join(err, fmt.Errorf("release %s: %w", id, rerr))
	}
	return err
}

// pendingPath is the marker naming the issue a worker holds; a crash
// leaves it for the next start.
func (p *Pool) pendingPath(worker string) string {
	return filepath.Join(p.Trees.Root, ".pending-"+worker)
}

func (p *Pool) setPending(worker, id string) error {
	if err := os.MkdirAll(p.Trees.Root, 0o755); err != nil {
		return fmt.Errorf("worker %s: %w", worker, err)
	}
	// The marker is what crash recovery goes by: written atomically and
	// synced, like every state file.
	if err := atomicfile.Write(p.pendingPath(worker), []byte(id+"\n"), 0o600); err != nil {
		return fmt.Errorf("worker %s: %w", worker, err)
	}
	return nil
}

func (p *Pool) clearPending(worker string) { _ = os.Remove(p.pendingPath(worker)) }

// recoverClaims settles what workers that died (SIGKILL, power loss) left
// in the tracker, before their worktrees are recovered: an issue a dead
// worker still holds is released, not counted; an issue it closed whose
// work never reached the target is reopened with a note naming the
// branch that keeps the work. Claims by this pool's actors that no marker
// names are released too: no worker of this pool is alive yet.
func (p *Pool) recoverClaims(ctx context.Context) error {
	marks, _ := filepath.Glob(filepath.Join(p.Trees.Root, ".pending-*"))
	prefix := p.actor("")
	c := p.Client(prefix, p.Queue.Repo)
	if ents, err := os.ReadDir(p.Trees.Root); err == nil {
		for _, e := range ents {
			if atomicfile.IsTemp(e.Name()) { // a marker write a crash cut short
				_ = os.Remove(filepath.Join(p.Trees.Root, e.Name()))
			}
		}
	}
	settled, err := p.recoverQueued(ctx, c)
	if err != nil {
		return err
	}
	if p.Queue.Forge != nil {
		if p.rewatched, err = p.recoverReviews(ctx, c); err != nil {
			return err
		}
	}
	for _, m := range marks {
		if strings.HasSuffix(m, ".tmp") { // written by older versions
			_ = os.Remove(m)
			continue
		}
		worker := strings.TrimPrefix(filepath.Base(m), ".pending-")
		b, ok := p.readMarker(m, worker)
		if !ok {
			continue
		}
		id := strings.TrimSpace(string(b))
		if id == "" || settled[id] || git.CheckWorker(worker) != nil {
			_ = os.Remove(m)
			continue
		}
		is, err := c.Show(ctx, id)
		if err != nil {
			return fmt.Errorf("workers: recover %s's issue %s: %w", worker, id, err)
		}
		actor := p.actor(worker)
		switch {
		case is.Status == beads.StatusClosed:
			integrated, err := p.branchOnTarget(ctx, worker)
			if err != nil {
				return err
			}
			if !integrated {
				note := fmt.Sprintf("ralphd %s: the worker stopped after closing this issue and before its work reached %s; the work is kept on a %s%s/ branch", worker, p.Target, git.WipPrefix, worker)
				if _, err := c.AppendNotes(ctx, id, note); err != nil {
					return fmt.Errorf("workers: %w", err)
				}
				if err := p.giveUp(ctx, actor, id, nil); err != nil {
					return err
				}
			}
		case is.Assignee == actor:
			if err := p.giveUp(ctx, actor, id, nil); err != nil {
				return err
			}
		}
		p.log(Event{Worker: worker, Issue: id, Kind: "recovered"})
		_ = os.Remove(m)
	}
	held, err := c.List(ctx, beads.ListOptions{Status: beads.StatusOpen + "," + beads.StatusInProgress})
	if err != nil {
		return fmt.Errorf("workers: list claims: %w", err)
	}
	for _, is := range held {
		switch {
		case is.Status == beads.StatusOpen:
			if leftClaim(is, prefix, nil) { // claimsleft.go
				if err := freeClaim(ctx, c, is.ID); err != nil {
					return fmt.Errorf("workers: %w", err)
				}
				p.log(Event{Issue: is.ID, Kind: "recovered", Detail: "freed the claim " + is.Assignee + " left on it when it was reopened"})
			}
		// The fleet's lease and member (fleet.go) are claimed under the
		// same prefix, and are not a worker's to release.
		case strings.HasPrefix(is.Assignee, prefix) && !is.HasLabel(FleetLabel):
			if _, err := c.Release(ctx, is.ID); err != nil {
				return fmt.Errorf("workers: release %s: %w", is.ID, err)
			}
		}
	}
	return nil
}

// branchOnTarget reports whether the worker's branch has nothing the
// target lacks.
func (p *Pool) branchOnTarget(ctx context.Context, worker string) (bool, error) {
	br := "refs/heads/" + git.Branch(worker)
	if _, err := git.Output(ctx, p.Queue.Repo, "rev-parse", "--verify", "-q", br); err != nil {
		return true, nil // no branch, no work
	}
	out, err := git.Output(ctx, p.Queue.Repo, "rev-list", "--count", "refs/heads/"+p.Target+".."+br)
	if err != nil {
		return false, fmt.Errorf("workers: %w", err)
	}
	return strings.TrimSpace(string(out)) == "0", nil
}

// holding is an issue a worker of the pool holds: done is closed when
// the worker is through with it, integrated says whether its work reached
// the target.
type holding struct {
	done       chan struct{}
	integrated bool
	actor      string // the holder's
	// lettingGo: the holder is giving the issue back in bd (giveUp), so
	// a claim another worker wins from now on is a fair one, not one an
	// agent released behind the holder's back. Guarded by Pool.mu.
	lettingGo bool
}

// letsGo reports whether h's holder is giving its issue back.
func (p *Pool) letsGo(h *holding) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return h.lettingGo
}

// hold records that actor's worker holds id, or returns the holding of
// the other worker of the pool that holds it already.
func (p *Pool) hold(id, actor string) (h, other *holding) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o := p.held[id]; o != nil {
		return nil, o
	}
	h = &holding{done: make(chan struct{}), actor: actor}
	if p.held == nil {
		p.held = map[string]*holding{}
	}
	p.held[id] = h
	return h, nil
}

// takeHold holds the issue res claimed for worker, or returns nil when
// the claim does not stand. Another worker of the pool may hold it still:
// if that holder is giving it back (it released it in bd, and is letting
// go here), the claim is a fair one and the worker waits for the holder,
// then holds it; otherwise an agent released the holder's claim behind
// its back, and the claim is a lost race (giveBackHeld). Stopped while it
// waits, the claim is given back.
func (p *Pool) takeHold(ctx context.Context, worker, actor string, res beads.ClaimResult) *holding {
	id := res.Issue.ID
	for {
		h, other := p.hold(id, actor)
		switch {
		case other == nil:
			return h
		case !p.letsGo(other):
			p.giveBackHeld(ctx, worker, id, other)
			return nil
		}
		select {
		case <-ctx.Done():
			p.dropClaim(ctx, actor, &nextClaim{res: res, done: closedChan})
			return nil
		case <-other.done:
		}
	}
}

// giveBackHeld ends a claim won on an issue another worker of the pool
// holds: an agent may set status and assignee, and released that claim
// behind its holder's back. Two workers never work one issue: this claim
// is a lost race; the issue goes back to its holder's actor, and this
// worker waits until the holder is through with it (bd would give it the
// issue again at once).
func (p *Pool) giveBackHeld(ctx context.Context, worker, id string, other *holding) {
	p.log(Event{Worker: worker, Issue: id, Kind: "lost", Detail: "held by another worker of this pool, whose claim was released behind its back"})
	p.mu.Lock()
	p.busy--
	if p.busy == 0 {
		p.wakeLocked()
	}
	p.mu.Unlock()
	bctx := context.WithoutCancel(ctx)
	if _, err := p.Client(other.actor, p.Queue.Repo).Release(bctx, id); err == nil {
		_, _ = p.Client(other.actor, p.Queue.Repo).Claim(bctx, id)
	}
	select {
	case <-ctx.Done():
	case <-other.done:
	}
}

func (p *Pool) release(id string, h *holding) {
	p.mu.Lock()
	if p.held[id] == h {
		delete(p.held, id)
	}
	p.endedHoldLocked(id, h)
	p.mu.Unlock()
	close(h.done)
}

// awaitBlockers waits until no issue is depends on is held by another
// worker of the pool: one whose close bd already counts but whose work
// may not be on the target yet. It returns why the worker must let is go
// instead ("" to go on): a blocker whose work did not reach the target
// (its issue is reopened, so is is not ready after all), or one whose
// last handling here ended so, after bd called is ready (blockers.go).
// With a remote, it also waits for the work of a blocker another clone's
// ralphd closed to reach the remote (remote.go).
func (p *Pool) awaitBlockers(ctx context.Context, worker, actor string, is beads.Issue) (string, error) {
	deps := is.Dependencies
	if len(deps) < is.DependencyCount && (p.othersHold(is.ID) || p.anyUnfinished() || p.Queue.Remote != "") {
		// The claim's read-back did not carry the edges: read them.
		shown, err := p.Client(actor, p.Queue.Repo).Show(ctx, is.ID)
		if err != nil {
			return "", fmt.Errorf("worker %s: dependencies of %s: %w", worker, is.ID, err)
		}
		deps = shown.Dependencies
	}
	for _, d := range deps {
		if d.DependsOnID == is.ID {
			continue
		}
		why, err := p.awaitBlocker(ctx, worker, actor, is.ID, d)
		if why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}

// othersHold reports whether a worker of the pool holds an issue other
// than id.
func (p *Pool) othersHold(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.held {
		if k != id {
			return true
		}
	}
	return false
}

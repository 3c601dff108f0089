package modes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// runMode is the life of one run: run_start, the run timeout, body, and
// the end (history, log, summary, report).
func (l *Loop) runMode(ctx context.Context, mode string, maxIter int, body func(context.Context, *Result) error) (*Result, error) {
	res := l.begin(ctx, mode, maxIter)
	ctx, cancel := l.withRunTimeout(ctx, res)
	defer cancel()
	err := body(ctx, res)
	l.finish(res, err, refused(res, err))
	return res, err
}

// refused reports whether a run ended before it started any work, on a
// setup error: a dirty tree, no beads database or bd, or an agent that
// could not run on its first try. Such a run writes no history and no
// report, so it never becomes the "last run".
func refused(res *Result, err error) bool {
	switch {
	case errors.Is(err, ErrDirtyTree), errors.Is(err, ErrTrackerChanged), errors.Is(err, beads.ErrNotInitialized), errors.Is(err, beads.ErrNotInstalled):
		return true
	case errors.Is(err, ErrAgentUnusable):
		return res.Iterations == 0 && len(res.Closed) == 0
	}
	return false
}

// runOpts is what the daemon varies in the runs it makes; the runs of
// `ralphd build` and `ralphd plan` have the zero runOpts. It goes down a
// run as a value.
type runOpts struct {
	// batch: the run is one of the daemon's batches. A BUILD batch that
	// reaches its size is not a cap: the next batch goes on with the same
	// issue (build).
	batch bool
	// beforeIteration, when set, runs before each iteration starts (the
	// daemon applies a requested reload there, and holds while paused).
	beforeIteration func()
	// paused, when set, says the daemon was paused while an issue was
	// being picked: the loop goes round again (and holds) before starting
	// its agent.
	paused func() bool
	// hold, when set, returns once the daemon is not paused (the
	// dashboard's pause): workers ask it before each claim.
	hold func(ctx context.Context) error
	// yield, when set, reports without waiting that another daemon of the
	// fleet claimed the planner lease (fleet.go): the BUILD batch drains
	// and ends as a full batch does.
	yield func() bool
}

// yielding reports whether the batch must drain for another daemon's plan.
func (o runOpts) yielding() bool { return o.yield != nil && o.yield() }

// yieldReason is how a batch drained for another daemon's plan ends.
const yieldReason = "another daemon sharing the tracker plans: this BUILD batch drained"

// isPaused reports whether the daemon is paused now.
func (o runOpts) isPaused() bool { return o.paused != nil && o.paused() }

// mayContinue is checked before every iteration of either mode: it stops
// the run on a signal or the run timeout, applies a requested reload, and
// stops it at the cost cap. A nil error means the next iteration may run.
func (l *Loop) mayContinue(ctx context.Context, res *Result, o runOpts) (stop bool, err error) {
	if ctx.Err() != nil {
		return true, stopped(ctx, res, "stopped by a signal before the next iteration")
	}
	if o.beforeIteration != nil {
		o.beforeIteration()
	}
	if o.yielding() {
		return true, res.stop(StopMaxIterations, yieldReason, ErrCapReached)
	}
	if l.overBudget(res) {
		return true, res.stop(StopBudget, fmt.Sprintf("the run's agent cost reached the cap of $%.2f", l.Config.MaxCostUSD), ErrCapReached)
	}
	l.chooseAgent()
	return false, nil
}

// afterIteration maps how an iteration ended to the run's next step: stop
// (with the error the command line turns into an exit code), or go on,
// after waiting out the provider's quota when it was rate-limited.
func (l *Loop) afterIteration(ctx context.Context, res *Result, it iteration, err error, quota *backoff) (stop bool, _ error) {
	switch {
	case errors.Is(err, ErrAgentUnusable):
		if l.dropAgent(res, it.reason) {
			return false, nil // another agent runs the next iteration
		}
		return true, res.stop(StopAgentUnusable, it.reason, err)
	case errors.Is(err, ErrInterrupted), err != nil && ctx.Err() != nil:
		return true, stopped(ctx, res, "stopped by a signal during an iteration; its attempt was given back")
	case err != nil:
		return true, res.stop(StopError, it.reason, err)
	}
	if it.rateLimited {
		if l.limitAgent(it, quota) {
			return false, nil // another agent runs until the limit ends
		}
		if err := l.waitQuota(ctx, quota, it.resetAt, it.resetRounded, res.Iterations+1, it.reason); err != nil {
			return true, stopped(ctx, res, "stopped by a signal while waiting for the agent's quota")
		}
		return false, nil
	}
	quota.reset()
	return false, nil
}

// begin starts a run: it records run_start and returns the result to fill.
func (l *Loop) begin(ctx context.Context, mode string, maxIter int) *Result {
	res := &Result{Mode: mode, RunID: l.RunID, Started: l.now()}
	l.startReads()
	l.chooseAgent()
	l.event(logjsonl.EventRunStart, logjsonl.RunStart{
		SchemaVersion: logjsonl.SchemaVersion, RunID: l.RunID, Mode: mode, MaxIterations: maxIter, Version: l.Version,
		ProjectID: l.State.Identity().ID, Agent: l.Backend.Name(), Model: l.agentModel(), Agents: l.agentNames(), ProjectDir: l.Dir,
		Scope: l.Config.Scope, MaxAttempts: l.Config.MaxStuck, PID: os.Getpid(),
		Sandbox: l.sandboxName(mode), SandboxNote: l.sandboxNote(mode), Containment: l.Contain.Describe(),
	})
	if note := l.sandboxNote(mode); note != "" {
		l.human().Warn(note)
	}
	return res
}

// stop records why the run is stopping and passes err through.
func (r *Result) stop(why StopReason, reason string, err error) error {
	r.Stop, r.Reason = why, reason
	return err
}

// finish records the end of a run in history and the log, and prints the
// summary and writes the report. A refused run only gets its log's
// run_end: the command line says why it was refused.
func (l *Loop) finish(res *Result, err error, refused bool) {
	res.Ended = l.now()
	l.reads().settle(res) // trackread.go: what full readings found hidden
	if !l.reads().pending() {
		// The last reading was full: nothing is left for a start to
		// compare (readings of what changed since keep the files for it).
		l.reads().forgetKept()
	}
	if res.Stop == "" {
		res.Stop = StopError
	}
	if res.Reason == "" && err != nil {
		res.Reason = err.Error()
	}
	rec := state.Record{
		Kind: state.KindRunEnd, RunID: res.RunID, Mode: res.Mode, Iteration: res.Iterations,
		StartedAt: res.Started, EndedAt: res.Ended, StopReason: string(res.Stop), Outcome: string(res.Stop),
		CostUSD: res.CostUSD, Tokens: res.Usage, DurationSeconds: res.Ended.Sub(res.Started).Seconds(),
	}
	if !refused {
		if herr := l.State.AppendHistory(rec); herr != nil {
			l.human().Error("could not append to history", "err", herr)
		}
	}
	l.event(logjsonl.EventRunEnd, logjsonl.RunEnd{
		Iterations: res.Iterations, Outcome: string(res.Stop), DurationSeconds: int64(res.Ended.Sub(res.Started).Seconds()),
		Reason: res.Reason, IssuesClosed: len(res.Closed), Stuck: len(res.Stuck), Violations: res.Violations,
		CostUSD: res.CostUSD, Tokens: tokensOf(res.Usage),
	})
	if refused {
		return
	}
	w := l.out()
	fmt.Fprintf(w, "ralphd %s: %s\n", res.Mode, res.Reason)
	fmt.Fprintf(w, "  iterations: %d, closed: %d", res.Iterations, len(res.Closed))
	if res.Mode == ModeBuild {
		fmt.Fprintf(w, " of %d tried", len(res.Tried))
	}
	if len(res.Stuck) > 0 {
		fmt.Fprintf(w, ", newly stuck: %v", res.Stuck)
	}
	if res.Violations > 0 {
		fmt.Fprintf(w, ", violations reverted: %d", res.Violations)
	}
	if len(res.Created) > 0 {
		fmt.Fprintf(w, ", created by BUILD: %d", len(res.Created))
	}
	if res.CostUSD != nil {
		fmt.Fprintf(w, ", cost: $%.4f", *res.CostUSD)
	}
	fmt.Fprintln(w)
	for _, fb := range res.FailureBranches {
		id, b, _ := strings.Cut(fb, " ")
		fmt.Fprintf(w, "  work on %s kept on branch %s\n", id, b)
	}
	for _, d := range res.DroppedAgents {
		fmt.Fprintf(w, "  dropped agent %s\n", d)
	}
	if path, rep, err := l.writeReport(res); err != nil {
		l.human().Warn("could not write the end-of-run report", "err", err)
	} else {
		if len(rep.Agents) > 1 {
			var by []string
			for _, a := range rep.Agents {
				by = append(by, a.Name+" "+text.Count(a.Iterations, "iteration"))
			}
			fmt.Fprintf(w, "  agents: %s\n", strings.Join(by, ", "))
		}
		fmt.Fprintf(w, "  report: %s\n", path)
	}
	if l.Log != nil {
		fmt.Fprintf(w, "  log: %s\n", l.Log.Path())
	}
}

// overBudget reports whether the run's summed cost reached the cap.
func (l *Loop) overBudget(res *Result) bool {
	return l.Config.MaxCostUSD > 0 && res.CostUSD != nil && *res.CostUSD >= l.Config.MaxCostUSD
}

// remainingBudget is what the next agent run may spend (0: no cap).
func (l *Loop) remainingBudget(res *Result) float64 {
	if l.Config.MaxCostUSD <= 0 {
		return 0
	}
	spent := 0.0
	if res.CostUSD != nil {
		spent = *res.CostUSD
	}
	return max(l.Config.MaxCostUSD-spent, 0.01)
}

// backoff is the wait between retries when the provider is rate-limited and
// did not say until when.
type backoff struct {
	max  time.Duration
	next time.Duration
}

func (b *backoff) reset() { b.next = 0 }

func (b *backoff) step() time.Duration {
	if b.next == 0 {
		b.next = time.Minute
	} else {
		b.next *= 2
	}
	if b.max > 0 && b.next > b.max {
		b.next = b.max
	}
	return b.next
}

// waitQuota waits until the provider's quota resets: until resetAt when the
// agent said (plus a few seconds when it gave the instant exactly, a minute
// when it was read from text rounded to the minute; see agent.QuotaWait),
// or with exponential backoff otherwise.
//
// With several agents (agents.go), every one is limited by now: the run
// waits for the first limit to end instead, and that agent runs next.
func (l *Loop) waitQuota(ctx context.Context, b *backoff, resetAt time.Time, rounded bool, iter int, reason string) error {
	if wake := l.rotaWake(); !wake.IsZero() {
		err := l.sleepQuota(ctx, max(wake.Sub(l.now()), 0), wake, iter, reason+" (every agent is at a usage limit: waiting for the first to end)")
		l.Rota.Lift(wake)
		return err
	}
	return l.sleepQuota(ctx, quotaWait(l.now(), b, resetAt, rounded), resetAt, iter, reason)
}

// quotaWait is how long a usage limit lasts: until resetAt when the agent
// said (with agent.QuotaWait's slack), else the backoff's next step.
func quotaWait(now time.Time, b *backoff, resetAt time.Time, rounded bool) time.Duration {
	wait := b.step()
	if !resetAt.IsZero() {
		wait = agent.QuotaWait(now, resetAt, rounded)
	}
	// Never sleep past the cap, even for an announced reset: a reset time
	// misread, or days away, then costs one cheap retry (a rate-limited
	// run is not an attempt), never an unbounded sleep.
	if b.max > 0 && wait > b.max {
		wait = b.max
	}
	return wait
}

// sleepQuota waits out a usage limit for wait, with its events.
func (l *Loop) sleepQuota(ctx context.Context, wait time.Duration, resetAt time.Time, iter int, reason string) error {
	l.event(logjsonl.EventQuotaWaitStart, logjsonl.QuotaWaitStart{
		Agent: l.Backend.Name(), Iteration: iter, ResetAt: resetAt.UTC(), WaitSeconds: int64(wait.Seconds()), Reason: reason,
	})
	l.human().Warn("agent rate-limited; waiting", "for", wait.Round(time.Second), "reason", reason)
	l.status("waiting for the agent's quota: %s", wait.Round(time.Second))
	start := l.now()
	err := l.sleep(ctx, wait)
	l.event(logjsonl.EventQuotaWaitEnd, logjsonl.QuotaWaitEnd{WaitedSeconds: int64(l.now().Sub(start).Seconds()), Interrupted: err != nil})
	return err
}

// snapshotCache keeps the last snapshot of the tracker this Loop took
// and the content fingerprint of .beads/ it was taken at, so the next
// iteration's "before" snapshot costs no bd call when nothing changed in
// between.
type snapshotCache struct {
	snap guard.Snapshot
	fp   string
}

// cachedComments are the comments of one issue as last read, and the
// comment count and update time the list gave the issue then.
type cachedComments struct {
	count   int
	updated time.Time
	list    []beads.Comment
}

func (c *snapshotCache) invalidate() { c.snap, c.fp = nil, "" }

func (l *Loop) beadsDir() string { return filepath.Join(l.Dir, ".beads") }

// snapshot returns the tracker's state, from the cache when .beads/ has
// not changed since it was taken. In bd's server mode the tracker's data
// is on a Dolt server, where other clones write without touching this
// clone's .beads/, so the cache is never used.
func (l *Loop) snapshot(ctx context.Context) (guard.Snapshot, error) {
	if l.snap.snap != nil && !beads.ServerMode(l.beadsDir(), l.environ()) {
		if fp, err := Fingerprint(l.beadsDir()); err == nil && fp == l.snap.fp {
			return l.snap.snap, nil
		}
	}
	return l.snapshotFresh(ctx)
}

// snapshotFresh reads the tracker as it is now (trackread.go: every issue,
// or what changed since the last reading), and caches the result.
func (l *Loop) snapshotFresh(ctx context.Context) (guard.Snapshot, error) {
	return l.takeReading(ctx, readOpts{})
}

// snapshotFull reads the tracker listing every issue, whatever
// tracker_reads says: for what must see every issue (PLANNING, the sweep,
// the check before a run reports success).
func (l *Loop) snapshotFull(ctx context.Context) (guard.Snapshot, error) {
	return l.takeReading(ctx, readOpts{full: true})
}

// takeReading takes one reading through the run's tracker reads, and
// caches it.
func (l *Loop) takeReading(ctx context.Context, o readOpts) (guard.Snapshot, error) {
	fp, fpErr := Fingerprint(l.beadsDir())
	if fpErr == nil {
		o.fp = fp
	}
	snap, err := l.reads().read(ctx, l, o)
	if err != nil {
		return nil, fmt.Errorf("snapshot the tracker: %w", err)
	}
	// The fingerprint was taken before the list, so a write racing the
	// list makes the next lookup miss the cache rather than use stale data.
	if fpErr == nil {
		l.snap.snap, l.snap.fp = snap, fp
	} else {
		l.snap.invalidate()
	}
	return snap, nil
}

// commentsFromExport fills in, from one `bd export`, the comments of the
// issues stale names (indexes into issues) and returns those it could not:
// all of them when the export fails (the batches read them), and any the
// export gives with another comment count than the list (a comment added
// or removed in between: the batch reads it afresh).
func (l *Loop) commentsFromExport(ctx context.Context, issues []beads.Issue, stale []int, cache map[string]cachedComments) []int {
	exported, err := l.BD.Export(ctx)
	if err != nil {
		l.human().Warn("could not read the comments with bd export; reading them in batches", "err", err)
		return stale
	}
	byID := make(map[string][]beads.Comment, len(exported))
	for _, is := range exported {
		byID[is.ID] = is.Comments
	}
	var left []int
	for _, i := range stale {
		is := &issues[i]
		cs, ok := byID[is.ID]
		if !ok || len(cs) != is.CommentCount {
			left = append(left, i)
			continue
		}
		cache[is.ID] = cachedComments{count: is.CommentCount, updated: is.UpdatedAt, list: cs}
		is.Comments = cs
	}
	return left
}

// commentsBatch is how many issues one `bd show --include-comments`
// reads: few enough that no call holds bd's lock long (real bd 1.0.5, by
// hand on a 5,000-issue tracker: about 0.1 s plus 45 ms an issue, so about
// 1.2 s for 25), which in embedded mode every other bd call, the agents'
// included, waits for.
const commentsBatch = 25

// exportWorth reports whether one `bd export` of a tracker of size issues
// reads the comments of stale issues more cheaply than batches of `bd show
// --include-comments`: real bd 1.0.5 (by hand, same machine) spends about
// 45 ms an issue in show, and about 0.22 ms an issue of the tracker in
// export (1.24 s for 5,000 issues, 0.14 s for 50), each call about 0.1 s
// to start. So the export from about one stale issue in 200 of the
// tracker's, and never for one issue alone.
func exportWorth(stale, size int) bool {
	return stale >= 2 && stale*200 >= size
}

// readComments fills in the comments of every issue that has any, from the
// cache where the issue's comment count has not moved, nor, unless
// byCount, its update time, so a run reads each issue's comments about
// once. byCount is for the readings of what changed (trackread.go): bd
// adds comments and has no command that edits or deletes one, and a
// change around bd that keeps the count is found by the next full
// reading, which reads every comment afresh. Those it must read it
// reads from one `bd export` when that is cheaper (exportWorth, with size
// the tracker's issues), else commentsBatch at a time with `bd show
// --include-comments`; an issue the export does not give with as many
// comments as the list counts is read in a batch. A batch that fails (an
// issue deleted since the list) is read issue by issue with `bd comments`.
func (l *Loop) readComments(ctx context.Context, issues []beads.Issue, size int, cache map[string]cachedComments, byCount bool) error {
	var stale []int
	for i := range issues {
		is := &issues[i]
		if is.CommentCount == 0 {
			delete(cache, is.ID)
			continue
		}
		c, ok := cache[is.ID]
		if !ok || c.count != is.CommentCount || (!byCount && !c.updated.Equal(is.UpdatedAt)) {
			stale = append(stale, i)
			continue
		}
		is.Comments = c.list
	}
	if exportWorth(len(stale), max(size, len(issues))) {
		stale = l.commentsFromExport(ctx, issues, stale, cache)
	}
	for len(stale) > 0 {
		batch := stale[:min(len(stale), commentsBatch)]
		stale = stale[len(batch):]
		ids := make([]string, len(batch))
		for j, i := range batch {
			ids[j] = issues[i].ID
		}
		got := map[string][]beads.Comment{}
		shown, err := l.BD.ShowWithComments(ctx, ids...)
		if err == nil {
			for _, is := range shown {
				got[is.ID] = is.Comments
			}
		} else if ctx.Err() != nil {
			return fmt.Errorf("comments: %w", err)
		}
		for _, i := range batch {
			is := &issues[i]
			cs, ok := got[is.ID]
			if !ok {
				if cs, err = l.BD.Comments(ctx, is.ID); err != nil {
					return fmt.Errorf("comments of %s: %w", is.ID, err)
				}
			}
			cache[is.ID] = cachedComments{count: is.CommentCount, updated: is.UpdatedAt, list: cs}
			is.Comments = cs
		}
	}
	return nil
}

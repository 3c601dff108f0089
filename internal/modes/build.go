package modes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// Build runs BUILD iterations until no ready work is left, maxIter
// iterations have run (0: no cap), or something stops the run. It returns
// the run's result and, for stops other than success, an error the command
// line maps to an exit code (ErrCapReached, ErrAgentUnusable,
// ErrInterrupted, or a runtime error).
func (l *Loop) Build(ctx context.Context, maxIter int) (*Result, error) {
	return l.runMode(ctx, ModeBuild, maxIter, func(ctx context.Context, res *Result) error {
		return l.build(ctx, res, maxIter, runOpts{})
	})
}

func (l *Loop) build(ctx context.Context, res *Result, maxIter int, o runOpts) error {
	if err := l.checkClean(ctx, true); err != nil {
		return res.stop(StopError, "the working tree is not clean", err)
	}
	if err := l.pinTracker(ctx, res.RunID); err != nil {
		return res.stop(StopError, "could not pin the tracker", err)
	}
	if l.claimsShared() {
		if err := l.recoverLoopClaims(ctx); err != nil {
			return res.stop(StopError, "could not give back the claims a stopped run left", err)
		}
	}
	l.noteRunStart(ctx, res)
	err := l.buildLoop(ctx, res, maxIter, o)
	l.closingRead(ctx)
	// A cap that stops the run mid-issue keeps that issue's work on a
	// failure branch, as a hard stop does. A daemon's batch ending is not a
	// cap: its next batch goes on with the same issue.
	switch {
	case res.Stop == StopMaxIterations && o.batch:
	case res.Stop == StopMaxIterations, res.Stop == StopBudget, res.Stop == StopTimeout:
		if id := l.lastWorked; id != "" && !slices.Contains(res.Closed, id) {
			if b := l.keepFailedWork(ctx, id, string(res.Stop)); b != "" {
				res.FailureBranches = append(res.FailureBranches, id+" "+b)
			}
		}
	}
	return err
}

func (l *Loop) buildLoop(ctx context.Context, res *Result, maxIter int, o runOpts) error {
	skip := map[string]bool{} // issues this run has given up on
	quota := backoff{max: l.Config.QuotaBackoffMax}
	shared := l.claimsShared() // claim what it works (loopclaim.go)
	lost := map[string]bool{}  // shared: claims lost since the last iteration
	for {
		if stop, err := l.mayContinue(ctx, res, o); stop {
			return err
		}
		ready, err := l.readyWork(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return stopped(ctx, res, "stopped by a signal before the next iteration")
			}
			return res.stop(StopError, "bd ready failed", fmt.Errorf("list ready work: %w", err))
		}
		if l.goOn != nil {
			ready = l.goOnFirst(ctx, res, ready) // treework.go
		}
		if shared {
			// Someone else's, passed over: named in the success line.
			res.elsewhere = nil
			ready = slices.DeleteFunc(slices.Clone(ready), func(is beads.Issue) bool {
				if l.heldByOther(is) {
					res.elsewhere = append(res.elsewhere, is.ID+" ("+is.Assignee+")")
					return true
				}
				return lost[is.ID]
			})
		}
		if len(ready) == 0 {
			if err := l.queueEmpty(ctx, res); !errors.Is(err, errHiddenFound) {
				return err
			}
			l.lastReady = readyAnswer{}
			continue // hidden changes were reverted: work may be ready again
		}
		pick, err := l.pick(ctx, res, ready, skip)
		if err != nil {
			return res.stop(StopError, "could not update a stuck issue", err)
		}
		if pick == nil {
			if len(res.passed) > 0 {
				if err := l.epicsHeld(ctx, res); err != nil {
					return err
				}
			}
			return res.stop(StopAllSkipped, allPassedOver(res), nil)
		}
		if maxIter > 0 && res.Iterations >= maxIter {
			return res.stop(StopMaxIterations, fmt.Sprintf("reached the cap of %s with %s left (next: %s)", text.Count(maxIter, "iteration"), text.Count(len(ready)-len(skip), "ready issue"), pick.ID), ErrCapReached)
		}
		if o.isPaused() {
			continue // paused while picking: hold, then pick afresh
		}
		if shared {
			won, err := l.claimPick(ctx, *pick)
			if err != nil {
				if ctx.Err() != nil {
					return stopped(ctx, res, "stopped by a signal before the next iteration")
				}
				return res.stop(StopError, "could not claim the next issue", err)
			}
			if !won {
				lost[pick.ID] = true // another clone's: pick again
				continue
			}
		}
		if l.goOn != nil {
			l.goingOn(ctx, res, *pick) // treework.go
		}
		it, err := l.buildIteration(ctx, res, *pick)
		if shared {
			l.dropLoopClaim(ctx, pick.ID)
			clear(lost)
		}
		if stop, err := l.afterIteration(ctx, res, it, err, &quota); stop {
			if res.Stop == StopInterrupted {
				l.leftInTree(ctx, pick.ID, res.Iterations, res.RunID, l.dirtyAtStart) // treework.go
			}
			return err
		}
	}
}

// pick returns the first ready issue (in bd's order) this run can work on,
// marking issues that have used up their attempts as stuck on the way,
// and passing over the epics that wait on their children (epics.go). It
// returns nil when every ready issue is skipped or waits.
func (l *Loop) pick(ctx context.Context, res *Result, ready []beads.Issue, skip map[string]bool) (*beads.Issue, error) {
	epics := epicWaits{l: l}
	res.passed = res.passed[:0]
	for i := range ready {
		is := ready[i]
		if skip[is.ID] {
			continue
		}
		kids, err := epics.of(ctx, is)
		if err != nil {
			return nil, err
		}
		if len(kids) > 0 {
			l.passOver(res, is.ID, kids)
			res.passed = append(res.passed, is.ID)
			continue
		}
		// A stuck issue stays skipped until PLANNING or `ralphd reset`
		// clears its label.
		if is.HasLabel(StuckLabel) {
			l.skip(res, skip, is.ID, "labelled "+StuckLabel)
			continue
		}
		r, err := l.record(is.ID)
		if err != nil {
			return nil, err
		}
		if cause := stuck(r, l.Config.MaxStuck); cause != judge.NotStuck {
			if err := l.markStuck(ctx, res, r); err != nil {
				return nil, err
			}
			l.skip(res, skip, is.ID, stuckWhy(r, cause))
			continue
		}
		return &is, nil
	}
	return nil, nil
}

// allPassedOver is why a run stops when no ready issue is left to pick:
// the stuck ones skipped, the epics waiting on their children.
func allPassedOver(res *Result) string {
	var waits []string
	for _, id := range res.passed {
		waits = append(waits, id+" on "+res.waiting[id])
	}
	epics := "epics waiting on children that are not ready: " + strings.Join(waits, "; ")
	switch {
	case len(waits) == 0:
		return fmt.Sprintf("all ready work is stuck and skipped: %s; PLANNING or `ralphd reset ID` puts it back", strings.Join(res.Skipped, ", "))
	case len(res.Skipped) == 0:
		return "all ready work is " + epics
	}
	return fmt.Sprintf("all ready work is stuck and skipped (%s; PLANNING or `ralphd reset ID` puts it back), or %s", strings.Join(res.Skipped, ", "), epics)
}

func (l *Loop) skip(res *Result, skip map[string]bool, id, why string) {
	skip[id] = true
	res.Skipped = append(res.Skipped, id)
	l.event(logjsonl.EventDecision, logjsonl.Decision{IssueID: id, Decision: "skip", Reason: why})
}

// stuckWhy is the reason a stuck issue is skipped, for the log.
func stuckWhy(r state.IssueRecord, cause judge.StuckCause) string {
	if cause == judge.StuckHardStop {
		return fmt.Sprintf("stuck after %s: the escalation's hard stop (%s)", text.Count(r.Count, "attempt"), r.Judgement.Escalation.StopReason)
	}
	return "stuck after " + text.Count(r.Count, "attempt")
}

// markStuck appends the STUCK note (appending: plain --notes would erase
// the planner's notes) and the stuck label. Its attempt record stays as it
// is, so `ralphd status` shows why; `ralphd reset`, or PLANNING clearing
// the label, resets it.
func (l *Loop) markStuck(ctx context.Context, res *Result, r state.IssueRecord) error {
	id, n := r.IssueID, r.Count
	note := l.stuckNote(r)
	if _, err := l.BD.AppendNotes(ctx, id, note); err != nil {
		return fmt.Errorf("add STUCK note to %s: %w", id, err)
	}
	if p := l.pool(); p != nil {
		p.ownStuck.Store(id, true) // before the label: a judgement may read it at once
	}
	if err := l.BD.LabelAdd(ctx, id, StuckLabel); err != nil {
		return fmt.Errorf("label %s %s: %w", id, StuckLabel, err)
	}
	res.Stuck = append(res.Stuck, id)
	action := "noted and labelled " + StuckLabel
	branch := l.keepFailedWork(ctx, id, "stuck")
	if branch != "" {
		action += "; work kept on " + branch
		res.FailureBranches = append(res.FailureBranches, id+" "+branch)
	}
	l.event(logjsonl.EventStuck, logjsonl.Stuck{IssueID: id, Attempts: n, MaxAttempts: l.Config.MaxStuck, Action: action, Reason: note})
	l.human().Warn("issue is stuck; skipping it", "issue", id, "attempts", n)
	l.forgetSession(id) // its next attempt, after a reset, starts afresh
	return l.State.AppendHistory(state.Record{
		Kind: state.KindStuck, RunID: res.RunID, Mode: ModeBuild, IssueID: id, Attempt: n,
		StartedAt: l.now(), EndedAt: l.now(), Outcome: string(OutcomeStuck), Stuck: true, FailureBranch: branch,
	})
}

// emptyQueueReason says that all work is done or blocked, with counts,
// the epics that wait on their children, and the ready issues passed over
// as assigned to someone else (elsewhere: readyLeft's).
// bd's stats count only the issues blocked by dependencies; the issues
// with status blocked in now (nil: unknown) count as blocked too.
func (l *Loop) emptyQueueReason(ctx context.Context, now guard.Snapshot, elsewhere []string) string {
	msg := "all work complete or blocked"
	if l.Config.Scope != "" {
		msg = fmt.Sprintf("all work in %s complete or blocked", l.Config.Scope)
	}
	var c issueCounts
	if now != nil {
		c = countIssues(now)
	} else {
		st, err := l.BD.Stats(ctx)
		if err != nil {
			return msg
		}
		st = l.fleet.uncount(st) // the fleet's own issues are not work
		c = issueCounts{open: st.Open, blocked: st.Blocked, inProgress: st.InProgress, closed: st.Closed}
	}
	msg = fmt.Sprintf("%s: %d open, %d blocked, %d in progress, %d closed", msg, c.open, c.blocked, c.inProgress, c.closed)
	if now != nil {
		if w := familyOf(now).waitingText(); w != "" {
			msg += "; epics waiting on their children: " + w
		}
	}
	if len(elsewhere) > 0 {
		msg += "; ready but assigned to someone else: " + strings.Join(elsewhere, ", ")
	}
	return msg
}

// issueCounts are the issues of the run's last line, each counted once.
type issueCounts struct{ open, blocked, inProgress, closed int }

// countIssues counts the issues of a full reading by status, the fleet's
// own aside (they are not work). An open issue waiting on a blocker that
// is not closed (bd's rule for ready) counts as blocked, as one set
// blocked does: bd stats counts it both open and blocked.
func countIssues(now guard.Snapshot) issueCounts {
	var c issueCounts
	for _, is := range now {
		if is.HasLabel(FleetLabel) {
			continue
		}
		switch is.Status {
		case beads.StatusClosed:
			c.closed++
		case beads.StatusInProgress:
			c.inProgress++
		case beads.StatusBlocked:
			c.blocked++
		case beads.StatusOpen:
			if waitsOnBlocker(now, is) {
				c.blocked++
			} else {
				c.open++
			}
		}
	}
	return c
}

// waitsOnBlocker reports whether is depends, through a blocks edge, on an
// issue that is not closed. An edge to an issue the reading does not have
// (another repository's) does not block, as in bd.
func waitsOnBlocker(now guard.Snapshot, is beads.Issue) bool {
	for _, d := range is.Dependencies {
		if d.Type != beads.DepBlocks {
			continue
		}
		if b, ok := now[d.DependsOnID]; ok && b.Status != beads.StatusClosed {
			return true
		}
	}
	return false
}

// iteration is what one iteration did, for the loop's next decision.
type iteration struct {
	rateLimited  bool
	resetAt      time.Time
	resetRounded bool // resetAt was read from minute-rounded text
	reason       string
}

// confirmCloseReasons reads, with `bd show`, the close reason of each issue
// closed in this iteration whose list entry carries none, before a close
// without a reason is judged a violation. The list output recorded from bd
// 1.0.5 has no closed issue in it, so whether its items carry
// close_reason is not known; show's are recorded to. It costs a bd call
// only in that case.
func (l *Loop) confirmCloseReasons(ctx context.Context, before, after guard.Snapshot) {
	for id, a := range after {
		if a.Status != beads.StatusClosed || a.CloseReason != "" || before[id].Status == beads.StatusClosed {
			continue
		}
		if is, err := l.BD.Show(ctx, id); err == nil && is.CloseReason != "" {
			a.CloseReason = is.CloseReason
			after[id] = a
		}
	}
}

// revertViolations finds the forbidden changes between the snapshots and
// reverts them with PLAN powers. It returns what it reverted.
func (l *Loop) revertViolations(ctx context.Context, res *Result, it *buildIter, after guard.Snapshot) []string {
	fixed, details := l.revertAgainst(ctx, it.before, after, it.rec.Iteration, owner{it.issue.ID, res.ledger().isMade})
	for _, over := range l.accountIteration(ctx, res, it, after) {
		fixed = append(fixed, "flagged: "+over)
		details = append(details, over)
	}
	res.Violations += len(details)
	it.rec.Violations = append(it.rec.Violations, details...)
	return fixed
}

// revertAgainst reverts the forbidden changes from before to after, logs
// each as a violation of the given iteration and returns what it reverted
// and what it found.
func (l *Loop) revertAgainst(ctx context.Context, before, after guard.Snapshot, iteration int, own owner) (fixed, details []string) {
	opts := guard.Options{CitesEvidence: citesEvidence, ReservedLabels: []string{StuckLabel}, Own: own.issue, Made: own.made}
	if sh := l.pool(); sh != nil {
		opts.Beside = sh.workingOn()
	}
	vs := guard.Diff(before, after, opts)
	// The fleet's own issues: the lease and members other daemons sharing
	// the tracker claim and renew while this window is open.
	vs = slices.DeleteFunc(vs, func(v guard.Violation) bool { return l.fleet.ownsChange(v, before, after) })
	if sh := l.pool(); sh != nil {
		// The pool's own claims and unclaims of other workers' issues.
		shared := beads.ServerMode(l.beadsDir(), l.environ())
		vs = slices.DeleteFunc(vs, func(v guard.Violation) bool { return sh.poolMoved(v, after, shared) })
		// ralphd's own stuck labels, which the pool's baseline may not
		// have yet.
		vs = slices.DeleteFunc(vs, func(v guard.Violation) bool {
			_, own := sh.ownStuck.Load(v.IssueID)
			return v.Kind == guard.ReservedLabelAdded && v.Label == StuckLabel && own
		})
	} else if beads.ServerMode(l.beadsDir(), l.environ()) {
		// Other clones' claims, closes and releases (loopclaim.go).
		prefix := l.WorkerActor("")
		vs = slices.DeleteFunc(vs, func(v guard.Violation) bool { return otherRalphd(v, before, after, prefix) })
	}
	if len(vs) == 0 {
		return nil, nil
	}
	for _, r := range guard.Revert(ctx, l.BD, before, vs) {
		detail := r.Violation.String()
		if r.Err != nil {
			detail += " (revert failed: " + r.Err.Error() + ")"
		} else {
			fixed = append(fixed, "reverted: "+r.Violation.String())
		}
		details = append(details, detail)
		l.event(logjsonl.EventViolation, logjsonl.Violation{
			Iteration: iteration, IssueID: r.Violation.IssueID, Mode: ModeBuild, Kind: string(r.Violation.Kind), Detail: detail,
		})
		l.human().Warn("forbidden change reverted", "issue", r.Violation.IssueID, "change", detail)
	}
	l.snap.invalidate()
	if len(fixed) == 0 {
		fixed = append(fixed, "detected but could not revert: "+strings.Join(details, "; "))
	}
	return fixed, details
}

// reopenFailedClose reopens an issue the agent closed although a check
// fails, with a note holding the command and the verbatim tail of its
// output.
func (l *Loop) reopenFailedClose(ctx context.Context, id string, c check) error {
	tail := judge.Truncate(c.Output, 30)
	note := fmt.Sprintf("ralphd: reopened: the close did not pass the %s gate. `%s` exited %d (want %d). Output (tail, verbatim):\n%s",
		c.Gate, c.Command, c.ExitCode, c.Expect, tail)
	if _, err := l.BD.Reopen(ctx, id, "ralphd: a check failed after the close"); err != nil {
		return fmt.Errorf("reopen %s after a failed check: %w", id, err)
	}
	if _, err := l.BD.AppendNotes(ctx, id, note); err != nil {
		return fmt.Errorf("note on %s: %w", id, err)
	}
	l.snap.invalidate()
	l.human().Warn("closed, but a check fails: reopened", "issue", id, "check", c.Name, "exit", c.ExitCode)
	return nil
}

// reopenViolatingClose reopens an issue its iteration closed while making
// changes BUILD may not make, with a note naming them: the close of a
// failed attempt does not stand, whatever the checks say.
func (l *Loop) reopenViolatingClose(ctx context.Context, id string, violations []string) error {
	if _, err := l.BD.Reopen(ctx, id, "ralphd: the iteration that closed it made changes BUILD may not make"); err != nil {
		return fmt.Errorf("reopen %s after forbidden changes: %w", id, err)
	}
	note := "ralphd: reopened: the iteration that closed it made changes BUILD may not make, so its close does not count: " +
		strings.Join(violations, "; ")
	if _, err := l.BD.AppendNotes(ctx, id, note); err != nil {
		return fmt.Errorf("note on %s: %w", id, err)
	}
	l.snap.invalidate()
	l.human().Warn("closed among forbidden changes: reopened", "issue", id)
	return nil
}

// unclaim sets the issue back to open if it is in progress.
func (l *Loop) unclaim(ctx context.Context, id string) {
	if cur, err := l.BD.Show(ctx, id); err == nil && cur.Status == beads.StatusInProgress {
		l.setOpen(ctx, id)
	}
}

// setOpen sets an in_progress issue back to open. A pool's worker leaves
// it to the pool, which gives the issue back in one write, open and
// unassigned, once the iteration has ended (Pool.giveUp): open with the
// worker still its assignee is a state other workers' readings would see
// between two writes, and an agent's change to another issue's status
// looks just like it.
func (l *Loop) setOpen(ctx context.Context, id string) {
	if l.seat != nil {
		return
	}
	set := l.BD.UpdateStatus
	if l.claimsShared() {
		// Open and unassigned at once: the claim (loopclaim.go) goes too.
		set = func(ctx context.Context, id, _ string) (beads.Issue, error) {
			return l.loopClaimer().Tracker.Release(ctx, id)
		}
	}
	if _, err := set(ctx, id, beads.StatusOpen); err != nil {
		l.human().Warn("could not set the issue back to open", "issue", id, "err", err)
		return
	}
	l.snap.invalidate()
}

// endIteration records a finished iteration in history and the log.
func (l *Loop) endIteration(res *Result, rec state.Record, out agent.Outcome, closed bool) {
	rec.EndedAt = l.now()
	rec.DurationSeconds = rec.EndedAt.Sub(rec.StartedAt).Seconds()
	// An agent that cannot run on the run's first try refuses the run,
	// which then leaves no history (see refused); the log keeps the try.
	if out.Status != agent.StatusFatal || res.Iterations > 0 {
		if err := l.State.AppendHistory(rec); err != nil {
			l.human().Error("could not append to history", "err", err)
		}
	}
	// Only now is the iteration settled: a crash before this point leaves
	// the record for the next start's sweep to settle.
	if err := l.State.ClearRunning(); err != nil {
		l.human().Warn("could not clear the running-agent record", "err", err)
	}
	l.event(logjsonl.EventIterationEnd, logjsonl.IterationEnd{
		Iteration: rec.Iteration, ExitCode: rec.ExitCode, DurationSeconds: int64(rec.DurationSeconds),
		Outcome: rec.Outcome, Reason: out.Reason, IssueID: rec.IssueID, Attempt: rec.Attempt, MaxAttempts: l.Config.MaxStuck,
		IssueClosed: closed, Turns: out.Turns, ToolCalls: out.ToolCalls, CostUSD: out.CostUSD, Tokens: tokensOf(out.Usage),
		SessionID: out.SessionID, Agent: rec.Agent, Model: rec.Model,
	})
	kv := []any{"outcome", rec.Outcome, "duration", time.Duration(rec.DurationSeconds * float64(time.Second)).Round(time.Second)}
	if rec.IssueID != "" {
		kv = append([]any{"issue", rec.IssueID}, kv...)
	}
	if out.CostUSD != nil {
		kv = append(kv, "cost", fmt.Sprintf("$%.4f", *out.CostUSD))
	}
	if out.Reason != "" && rec.Outcome != string(OutcomeClosed) {
		kv = append(kv, "reason", out.Reason)
	}
	l.human().Info(fmt.Sprintf("iteration %d done", rec.Iteration), kv...)
}

package modes

import (
	"context"
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
	"github.com/ralphd/ralphd/prompts"
)

// buildIter is one BUILD iteration on one issue, from the attempt it
// counts to what was decided. Its fields fill in as the iteration goes:
// start, run the agent, judge, settle. What it decides (closed, reopened,
// stuck) is decided in outcome.go.
type buildIter struct {
	issue   beads.Issue
	n       int // the iteration's number in the run
	attempt int // the attempt's number on the issue
	started time.Time

	// Before the agent ran.
	before guard.Snapshot    // the tracker
	pre    preSignals        // git and the issue, for progress
	record state.IssueRecord // the issue's attempt record

	// The agent run.
	out   agent.Outcome
	calls []state.BDCall // bd calls the agent made through the guard

	// After it: what judging found.
	after   guard.Snapshot // the tracker, forbidden changes reverted
	fixed   []string       // forbidden changes reverted or flagged
	checks  []check        // verify and acceptance results
	verdict closeVerdict
	outcome Outcome

	// rec is the iteration's history record, filled in as it goes.
	rec state.Record
	// keepBaseline: the window could not be judged; the baseline stays on
	// disk for the next start's sweep.
	keepBaseline bool
	// foundAt is when the reading the judgement reverted from ended
	// (workers): a window opened after it cannot have made what it found.
	foundAt time.Time
	// held is .ralph/ and the git configuration as they were before the
	// agent started.
	held planningFiles
	// resume is the interrupted session the iteration resumes, if any
	// (resume.go); carried says it counted no attempt of its own. fresh
	// is the full BUILD prompt, for a resume that fails.
	resume  *state.Resume
	carried bool
	fresh   string
	// saved is the session of this iteration's run when it was cut
	// short, for the next attempt to resume.
	saved *agent.Session
	// win is the iteration's window in the pool's ledger (workers), from
	// its agent's start.
	win *window
	// readWin is its window in the run's tracker reads, which a full
	// reading that finds a hidden change charges.
	readWin *readWindow
}

// violated reports whether the iteration made forbidden changes.
func (it *buildIter) violated() bool { return len(it.fixed) > 0 }

// buildIteration runs one BUILD iteration on is: it counts the attempt,
// runs the agent, judges the result and acts on the decision.
func (l *Loop) buildIteration(ctx context.Context, res *Result, is beads.Issue) (iteration, error) {
	it, step, err := l.startIteration(ctx, res, is)
	if err != nil {
		return iteration{reason: step}, err
	}
	defer l.BD.KeepLease(ctx, is.ID)() // renews the claim where bd has leases (from bd's changelog, not verified against that version)
	// From here until the checks have run, the agent's code runs: ralphd's
	// state files are sealed, and whatever it changes in them is put back.
	it.held = l.holdPlanningFiles(ctx)
	if err := l.State.Seal(); err != nil {
		l.abandon(it)
		return iteration{reason: "could not seal the state"}, err
	}
	defer l.openWindow(it)() // workers: who may be charged with what a judgement finds
	// Who is charged with what a full reading finds hidden (trackread.go).
	it.readWin = l.reads().opened(it.n, is.ID, it.win, time.Now())
	agentEnded := l.pool().agentStarted()
	run := agentRun{mode: ModeBuild, iteration: it.n, issue: is.ID, attempt: it.attempt, prompt: step, budget: l.remainingBudget(res),
		powers: l.powersFor(res, is, it.before),
		gitDir: it.held.gitDir, gitCommonDir: it.held.gitCommonDir, carried: it.carried, saved: &it.saved}
	if it.resume != nil {
		run.resume = &it.resume.Session
	}
	it.out, it.calls, err = l.runAgent(ctx, run)
	if err == nil && it.resume != nil && resumeFailed(it.out) {
		// At most one resume per attempt: a failed one gives way to a
		// fresh session, in the same iteration and attempt.
		l.resumeFellBack(it, it.out)
		res.addCost(it.out)
		run.resume, run.prompt, run.saved = nil, it.fresh, nil
		var calls []state.BDCall
		it.out, calls, err = l.runAgent(ctx, run)
		it.calls = append(it.calls, calls...)
	}
	l.reads().agentEnded(it.readWin)
	// The judgement's reading reads its issue by id whatever its
	// updated_at: ralphd writes to it after, which would carry a change
	// that hid from the reading into the next one unjudged.
	l.reads().reread(is.ID)
	readingDue := l.pool().judgementDue()
	if l.seat != nil {
		l.seat.readingDue = readingDue
	}
	agentEnded()
	defer readingDue()
	if err == nil && l.seat != nil && l.seat.agentEnded != nil {
		l.seat.agentEnded() // the pool claims this worker's next issue beside the judgement
	}
	if err != nil {
		l.unsealState(ctx, res, it)
		l.abandon(it)
		return iteration{reason: "the agent could not be started"}, err
	}
	res.addCost(it.out)
	it.outcome = Outcome(it.out.Status)
	it.rec = state.Record{
		RunID: res.RunID, Mode: ModeBuild, Iteration: it.n, IssueID: is.ID, Attempt: it.attempt,
		StartedAt: it.started, ExitCode: it.out.ExitCode, CostUSD: it.out.CostUSD, Tokens: it.out.Usage,
		Agent: l.Backend.Name(), Model: l.agentModel(), SessionID: it.out.SessionID, Turns: it.out.Turns, ToolCalls: it.out.ToolCalls,
		Gate: GateAgent, BDCalls: it.calls, Sandbox: l.sandboxName(ModeBuild), Network: l.networkName(ModeBuild), NetworkAllow: l.networkAllowed(ModeBuild),
	}
	if !isAttempt(it.out.Status) {
		next, err := l.giveBack(ctx, res, it)
		l.keepResume(it, it.saved, false, l.interruptedWhy(it.out), foundAfter(it))
		return next, err
	}
	if err := l.judgeBuild(ctx, res, it); err != nil {
		return iteration{reason: "could not judge the iteration"}, err
	}
	next, err := l.settle(ctx, res, it)
	if err == nil && it.verdict != closed && !it.rec.Stuck {
		// A timed-out (or crashed) run stays counted: its resume is the
		// same attempt.
		l.keepResume(it, it.saved, true, l.interruptedWhy(it.out), foundAfter(it))
	}
	return next, err
}

// startIteration counts the attempt and prepares the agent's prompt. On
// error, step says what failed; otherwise it is the prompt.
func (l *Loop) startIteration(ctx context.Context, res *Result, is beads.Issue) (*buildIter, string, error) {
	res.Iterations++
	res.tried(is.ID)
	it := &buildIter{issue: is, n: res.Iterations, started: l.now()}

	// Crash safety: first a pending running-agent record naming the
	// attempt about to be counted, then the count. A crash at any point
	// after this leaves a record for the next start's sweep, which gives
	// the attempt back only if the counter still equals it.
	n, err := l.State.Attempt(is.ID)
	if err != nil {
		return nil, "could not read the attempts", fmt.Errorf("read attempts of %s: %w", is.ID, err)
	}
	// An interrupted session of this agent's on the issue is resumed, once:
	// its record goes now. A timed-out one kept its attempt counted, and
	// the resume is that attempt still.
	if it.resume = l.pendingResume(is.ID); it.resume != nil {
		if err := l.State.ClearResume(is.ID); err != nil {
			return nil, "could not clear the session to resume", err
		}
		it.carried = it.resume.Counted && it.resume.Attempt == n && n > 0
	}
	attempt := n + 1
	if it.carried {
		attempt = n
	}
	if err := l.State.WriteRunning(state.Running{
		Iteration: it.n, IssueID: is.ID, Attempt: attempt, Mode: ModeBuild, RunID: res.RunID, StartedAt: it.started,
		Resumed: it.resume != nil, Carried: it.carried, DirtyAtStart: l.dirtyAtStart,
	}); err != nil {
		return nil, "could not record the iteration", fmt.Errorf("record iteration %d: %w", it.n, err)
	}
	if it.carried {
		it.attempt = n
	} else if it.attempt, err = l.State.IncrementAttempt(is.ID); err != nil {
		return nil, "could not record the attempt", fmt.Errorf("count attempt on %s: %w", is.ID, err)
	}
	if l.seat != nil {
		l.sharedBaseline(it) // workers: the tracker as the last judgement left it
	} else if it.before, err = l.snapshot(ctx); err != nil {
		l.abandon(it)
		return nil, "could not snapshot the tracker", err
	}
	// The baseline is on disk before the agent starts: if ralphd dies in
	// the window, the next start's sweep judges the tracker against it.
	if err := l.State.WriteBaseline(state.Baseline{
		RunID: res.RunID, Iteration: it.n, IssueID: is.ID, TakenAt: it.started, Issues: it.before.Issues(),
	}); err != nil {
		l.abandon(it)
		return nil, "could not record the baseline", err
	}
	if it.record, err = l.record(is.ID); err != nil {
		l.abandon(it)
		return nil, "could not read the attempt record", err
	}
	it.pre = l.takePreSignals(ctx, it.before, is.ID)
	prompt, err := l.Prompts.Build(prompts.BuildData{
		Issue: is, Attempt: it.attempt, MaxAttempts: l.Config.MaxStuck, Scope: l.Config.Scope,
		Escalation: l.escalation(it.record.Judgement), PreviousAttempts: judge.PromptSection(is.ID, it.record.Attempts),
	})
	if err != nil {
		l.abandon(it)
		return nil, "the BUILD prompt does not render", err
	}
	start := logjsonl.IterationStart{
		Iteration: it.n, IssueID: is.ID, Mode: ModeBuild, IssueTitle: is.Title, Attempt: it.attempt, MaxAttempts: l.Config.MaxStuck,
		Sandbox: l.sandboxName(ModeBuild), Agent: l.Backend.Name(), Model: l.agentModel(),
	}
	line := fmt.Sprintf("iteration %d: %s %q (attempt %d/%d)", it.n, is.ID, is.Title, it.attempt, l.Config.MaxStuck)
	if it.resume != nil {
		it.fresh, prompt = prompt, l.resumePrompt(it)
		start.Resumed, start.SessionID = true, it.resume.Session.ID
		line = fmt.Sprintf("iteration %d: %s %q (attempt %d/%d, resuming session %s: %s)", it.n, is.ID, is.Title, it.attempt, l.Config.MaxStuck,
			it.resume.Session.ID, it.resume.Why)
	}
	l.event(logjsonl.EventIterationStart, start)
	l.human().Info(line, l.agentKV()...)
	l.status("build %s %q iteration %d, attempt %d/%d", is.ID, is.Title, it.n, it.attempt, l.Config.MaxStuck)
	return it, prompt, nil
}

// abandon undoes an iteration that never got to run its agent: the attempt
// goes back (unless an earlier iteration counted it: it.carried) and the
// pending record is cleared, in that order, so a crash in between is
// settled by the sweep like any other.
func (l *Loop) abandon(it *buildIter) {
	if !it.carried {
		_, _ = l.State.GiveBackAttempt(it.issue.ID)
	}
	_ = l.State.ClearBaseline()
	_ = l.State.ClearRunning()
}

// giveBack ends an agent run that was not an attempt at the work (see
// isAttempt): the attempt goes back, nothing stays claimed, and the run
// waits for the quota, stops as unusable, or stops as interrupted.
func (l *Loop) giveBack(ctx context.Context, res *Result, it *buildIter) (iteration, error) {
	l.unsealState(ctx, res, it)
	if !it.carried { // else the attempt is one an earlier iteration counted: it stays
		if _, err := l.State.GiveBackAttempt(it.issue.ID); err != nil {
			return iteration{reason: "could not give the attempt back"}, err
		}
	}
	it.rec.Attempt = 0
	if it.out.Status != agent.StatusInterrupted {
		// The agent never got to work: the iteration does not count
		// against the cap either.
		res.Iterations--
	}
	// Leave nothing claimed: an interrupted agent may have set
	// in_progress. Use a context that survives the cancellation.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	// An agent that ran, however it ended (and an agent can claim to be
	// rate limited), is judged for forbidden changes; if the tracker
	// cannot be read, the baseline stays for the next start's sweep.
	// Not judged against a tracker bd no longer opens: the run stops.
	pinErr := l.checkTrackerPin(cctx, res, it)
	err := pinErr
	var after guard.Snapshot
	if err == nil {
		after, err = l.snapshotAfter(cctx) // workers: before the window, to share the reading
	}
	endWindow := l.judgeWindow(it) // workers: one judgement at a time
	if err == nil {
		after, err = l.notBehindBaseline(cctx, after)
	}
	if err == nil {
		l.confirmCloseReasons(cctx, it.before, after)
		it.foundAt = l.readAt() // workers: what it finds was in the tracker then
		it.fixed = append(it.fixed, l.revertViolations(cctx, res, it, after)...)
		// A run that is not an attempt closes nothing: its closes were
		// never checked (an agent can close its issue, then say it was
		// rate-limited).
		reopened := l.reopenUncheckedCloses(cctx, it, after)
		if it.violated() || reopened {
			after, _ = l.readTracker(cctx)
		}
		l.chargeConcurrent(res, it)
		endWindow(after)
	} else {
		it.keepBaseline = true
	}
	endWindow(nil)
	if pinErr != nil {
		cancel()
		l.endBuildIteration(res, it)
		return iteration{reason: "the tracker bd opens changed"}, pinErr
	}
	l.unclaim(cctx, it.issue.ID)
	cancel()
	l.endBuildIteration(res, it)
	switch it.out.Status {
	case agent.StatusRateLimited:
		return iteration{rateLimited: true, resetAt: it.out.ResetAt, resetRounded: it.out.ResetRounded, reason: it.out.Reason}, nil
	case agent.StatusFatal:
		out := l.sandboxHint(it.out)
		return iteration{reason: out.Reason}, agentUnusable(out)
	default:
		return iteration{reason: it.out.Reason}, ErrInterrupted
	}
}

// reopenUncheckedCloses reopens, after an agent run that was not an
// attempt, the issues closed in its window that this judgement would have
// checked: its own issue and the others no other worker is on. It
// reports whether it reopened any.
func (l *Loop) reopenUncheckedCloses(ctx context.Context, it *buildIter, after guard.Snapshot) bool {
	var ids []string
	if a, ok := after[it.issue.ID]; ok && a.Status == beads.StatusClosed && it.before[it.issue.ID].Status != beads.StatusClosed {
		ids = append(ids, it.issue.ID)
	}
	for _, o := range l.ownCloses(closedOthers(it.before, after, it.issue.ID), after) {
		ids = append(ids, o.ID)
	}
	why := fmt.Sprintf("ralphd: reopened: closed during an agent run that did not count as an attempt (%s), so no check ran on the close", it.out.Status)
	for _, id := range ids {
		if l.reopenUnchecked(ctx, id, why) {
			l.human().Warn("closed during a run that was not an attempt: reopened", "issue", id, "run", string(it.out.Status))
		}
	}
	return len(ids) > 0
}

// reopenUnchecked reopens id, whose close no check ran on, with why as
// the reason and the note. It reports whether it did.
func (l *Loop) reopenUnchecked(ctx context.Context, id, why string) bool {
	l.snap.invalidate()
	if _, err := l.BD.Reopen(ctx, id, why); err != nil {
		l.human().Warn("could not reopen an unchecked close", "issue", id, "err", err)
		return false
	}
	if _, err := l.BD.AppendNotes(ctx, id, why+"."); err != nil {
		l.human().Warn("could not note the reopen", "issue", id, "err", err)
	}
	return true
}

// judgeBuild decides what the iteration achieved. Everything that can run
// the agent's code happens inside the iteration's window, before the
// tracker is compared with the baseline: the checks of the picked issue,
// then those of every other issue closed in the window, each under the
// guard. Then it reverts forbidden changes, reopens a close the checks do
// not bear out, puts claimed work back, and judges a failed attempt
// (fingerprint, progress, escalation): the last three are outcome.go's
// decide.
func (l *Loop) judgeBuild(ctx context.Context, res *Result, it *buildIter) error {
	is := it.issue
	// The gate runs after every iteration: its results are progress
	// signals even when the issue stays open. The acceptance commands are
	// the ones the iteration started with (BUILD may not change them).
	var err error
	if len(l.checksToRun(is, false)) > 0 { // no command to run, no guard to serve
		err = l.guardedChecks(ctx, it.n, func(ce checkEnv) { it.checks = l.runChecks(ctx, ce, is, nil) })
	}
	l.unsealState(ctx, res, it)
	if err != nil {
		return err
	}
	if err := l.trackerReplaced(res, it); err != nil {
		return err
	}
	if err := l.checkTrackerPin(ctx, res, it); err != nil {
		return err
	}
	// Workers: the reading is asked for before the window, so that the
	// judgements of workers that finish together share it.
	after, err := l.snapshotAfter(ctx)
	if err != nil {
		return err
	}
	endWindow := l.judgeWindow(it) // workers: one judgement at a time
	defer endWindow(nil)
	if after, err = l.notBehindBaseline(ctx, after); err != nil {
		return err
	}
	l.confirmCloseReasons(ctx, it.before, after)
	if others := l.ownCloses(closedOthers(it.before, after, is.ID), after); len(others) > 0 {
		// Every close in the window is judged, not only the picked issue's:
		// its own acceptance commands and verify, under the guard. They run
		// code too, so the tracker is read again after them.
		if err := l.judgeOtherCloses(ctx, res, it, others); err != nil {
			return err
		}
		if after, err = l.snapshotAfter(ctx); err != nil {
			return err
		}
		l.confirmCloseReasons(ctx, it.before, after)
	}
	it.foundAt = l.readAt() // workers: what it finds was in the tracker then
	it.fixed = append(it.fixed, l.revertViolations(ctx, res, it, after)...)
	if it.violated() {
		// The revert changed the tracker; judge the issue as it is now.
		if after, err = l.snapshotAfter(ctx); err != nil {
			return err
		}
	}
	l.chargeConcurrent(res, it)
	it.after = after
	endWindow(after)
	// Shell commands the agent reported that ran a forbidden bd call around
	// the guard are violations too, whatever their effect.
	for _, b := range guard.Bypasses(it.out.Commands) {
		l.violation(res, it, is.ID, "forbidden_command", b, "flagged: "+b)
		l.human().Warn("forbidden bd command ran around the guard", "issue", is.ID, "detail", b)
	}
	return l.decide(ctx, it)
}

// trackerReplaced stops the judgement when the tracker's directory was
// swapped during the window: the violation is recorded, and the baseline
// stays on disk, so that the next start's sweep judges the iteration once
// the tracker is put back.
func (l *Loop) trackerReplaced(res *Result, it *buildIter) error {
	found := it.held.trackerReplaced()
	if len(found) == 0 {
		return nil
	}
	for _, f := range found {
		l.violation(res, it, it.issue.ID, "tracker_replaced", f, "")
	}
	return fmt.Errorf("%s during iteration %d; ralphd cannot judge it against another tracker: put the original back, and the next start judges the iteration against its baseline",
		strings.Join(found, "; "), it.n)
}

// violation records one forbidden change of iteration it, on issueID:
// in its history record, the run's count and the run log, and, when
// fixed is not "", in what the iteration put right (what its summary and
// note list).
func (l *Loop) violation(res *Result, it *buildIter, issueID, kind, detail, fixed string) {
	if fixed != "" {
		it.fixed = append(it.fixed, fixed)
	}
	it.rec.Violations = append(it.rec.Violations, detail)
	res.Violations++
	l.event(logjsonl.EventViolation, logjsonl.Violation{Iteration: it.n, IssueID: issueID, Mode: ModeBuild, Kind: kind, Detail: detail})
}

// unsealState ends the seal on ralphd's state files: each file the
// agent's code changed is put back as ralphd left it, and recorded as a
// violation.
func (l *Loop) unsealState(ctx context.Context, res *Result, it *buildIter) {
	planted := l.scrubGit(res, it) // first: the git calls below would block on a FIFO
	restored, err := l.State.Unseal()
	if err != nil {
		l.human().Error("could not restore ralphd's state files", "err", err)
	}
	for _, w := range l.State.Warnings() { // what was moved aside, and where to
		l.human().Warn(w, "issue", it.issue.ID)
	}
	logTamper := l.verifyLog()
	changes, err := it.held.restore(context.WithoutCancel(ctx), l.Dir)
	if err != nil {
		l.human().Error("could not restore PLANNING's files", "err", err)
	}
	planted = append(planted, l.checkHistory(context.WithoutCancel(ctx), res, it)...) // after the restore: alternates and shallow are back
	for _, c := range changes {
		l.violation(res, it, it.issue.ID, "planning_files_changed", c, "restored: "+c)
		l.human().Warn("BUILD changed what belongs to PLANNING: restored", "change", c)
	}
	guarded, err := it.held.guarded.restore(l.now())
	if err != nil {
		l.human().Error("could not put back the agent CLIs' configuration", "err", err)
	}
	for _, c := range guarded {
		l.violation(res, it, it.issue.ID, "agent_config_changed", c, "restored: "+c)
		l.human().Warn("BUILD changed an agent CLI's configuration: put back", "change", c)
	}
	changes = append(changes, guarded...)
	var all []string
	for _, f := range restored {
		all = append(all, "ralphd's state file "+f+" was changed")
	}
	if logTamper != "" {
		all = append(all, logTamper)
	}
	all = append(all, changes...)
	all = append(all, planted...)
	if len(all) > 0 {
		note := "ralphd: restored what BUILD may not change: " + strings.Join(all, "; ") +
			". ralphd's state and .ralph/ belong to ralphd and PLANNING; leave a note instead."
		if _, err := l.BD.AppendNotes(context.WithoutCancel(ctx), it.issue.ID, note); err != nil {
			l.human().Warn("could not note the restore on the issue", "issue", it.issue.ID, "err", err)
		}
		l.snap.invalidate()
	}
	for _, f := range restored {
		detail := fmt.Sprintf("ralphd's state file %s was changed during the iteration; restored", f)
		l.violation(res, it, it.issue.ID, "state_edited", detail, "restored: "+f)
		l.human().Warn("ralphd's own state was edited: restored", "file", f)
	}
	if logTamper != "" {
		l.violation(res, it, it.issue.ID, "run_log_edited", logTamper, logTamper)
		l.human().Warn("ralphd's run log was edited", "detail", logTamper)
	}
}

// verifyLog checks the run log against what ralphd wrote to it (see
// logjsonl.Writer.Verify), puts it back when it can, and returns what was
// found, or "" when the log is untouched or off.
func (l *Loop) verifyLog() string {
	if l.Log == nil {
		return ""
	}
	t := l.Log.Verify()
	if t == nil {
		return ""
	}
	if t.Restored {
		return fmt.Sprintf("ralphd's run log %s was %s during the iteration; restored", t.Path, t.Detail)
	}
	return fmt.Sprintf("ralphd's run log %s was %s during the iteration; not restored: %v", t.Path, t.Detail, t.Err)
}

// closedOthers returns the issues, other than the picked one, that were
// closed in the window, as the baseline had them (so their acceptance
// commands are PLANNING's, not the agent's).
func closedOthers(before, after guard.Snapshot, picked string) []beads.Issue {
	var out []beads.Issue
	for id, a := range after {
		b, ok := before[id]
		if id == picked || !ok || a.Status != beads.StatusClosed || b.Status == beads.StatusClosed {
			continue
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(x, y beads.Issue) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// judgeOtherCloses runs, for each other issue closed in the window, verify
// and that issue's own acceptance commands under the guard, and reopens a
// close they do not bear out, with a violation and a note: closing work
// the iteration was not given is allowed only when it is proven done.
func (l *Loop) judgeOtherCloses(ctx context.Context, res *Result, it *buildIter, others []beads.Issue) error {
	var verify *check
	if len(it.checks) > 0 && it.checks[0].Gate == GateVerify {
		verify = &it.checks[0]
	}
	var results [][]check
	if err := l.State.Seal(); err != nil {
		return err
	}
	err := l.guardedChecks(ctx, it.n, func(ce checkEnv) {
		for _, o := range others {
			results = append(results, l.runChecks(ctx, ce, o, verify))
		}
	})
	l.unsealState(ctx, res, it)
	if err != nil {
		return err
	}
	for i, o := range others {
		f := firstFailed(results[i])
		if f == nil {
			continue
		}
		if err := l.reopenFailedClose(ctx, o.ID, *f); err != nil {
			return err
		}
		detail := fmt.Sprintf("%s was closed while working on %s, but `%s` exited %d (want %d)", o.ID, it.issue.ID, f.Command, f.ExitCode, f.Expect)
		l.violation(res, it, o.ID, "close_not_proven", detail, "reopened: "+detail)
	}
	return nil
}

// snapshotAfter reads the tracker at the end of the window. A read that
// fails (bd busy, .beads/ made unreadable for a moment) is retried; if it
// still fails, the baseline stays on disk, so the next start's sweep
// judges the iteration.
func (l *Loop) snapshotAfter(ctx context.Context) (guard.Snapshot, error) {
	return l.snapshotSince(ctx, l.readMark())
}

// readMark is the number of the pool's latest reading, for readSince: a
// reading after it starts after now. Outside workers it is 0 (unused).
func (l *Loop) readMark() uint64 {
	if p := l.pool(); p != nil && p.view != nil {
		return p.view.Mark()
	}
	return 0
}

// snapshotSince is snapshotAfter for a reading of the pool's that started
// after mark (workers); outside workers, a fresh one.
func (l *Loop) snapshotSince(ctx context.Context, mark uint64) (guard.Snapshot, error) {
	return l.retryRead(ctx, func() (guard.Snapshot, error) { return l.readSince(ctx, mark) })
}

// snapshotFullAfter is snapshotAfter listing every issue, whatever
// tracker_reads says (the sweep judges a window against its baseline).
func (l *Loop) snapshotFullAfter(ctx context.Context) (guard.Snapshot, error) {
	return l.retryRead(ctx, func() (guard.Snapshot, error) { return l.snapshotFull(ctx) })
}

// retryRead runs read up to three times, a second and then two apart.
func (l *Loop) retryRead(ctx context.Context, read func() (guard.Snapshot, error)) (guard.Snapshot, error) {
	var err error
	for try := 0; try < 3; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(try) * time.Second):
			}
		}
		var s guard.Snapshot
		if s, err = read(); err == nil {
			return s, nil
		}
		l.human().Warn("could not read the tracker after the iteration; trying again", "err", err)
	}
	return nil, err
}

// endBuildIteration records the finished iteration in history and the log.
// The iteration's window closes here: its baseline goes.
func (l *Loop) endBuildIteration(res *Result, it *buildIter) {
	if it.keepBaseline {
		l.human().Warn("the tracker could not be read after the iteration; the next start judges it against the baseline")
	} else if err := l.State.ClearBaseline(); err != nil {
		l.human().Warn("could not clear the iteration's baseline", "err", err)
	}
	it.rec.Outcome = string(it.outcome)
	if it.verdict == closed && it.readWin != nil {
		l.reads().closedBy(it.readWin)
	}
	l.endIteration(res, it.rec, it.out, it.verdict == closed)
}

// readTracker reads the tracker as it is now: a fresh snapshot, or for a
// worker, a reading of the pool's that starts after this call.
func (l *Loop) readTracker(ctx context.Context) (guard.Snapshot, error) {
	return l.readSince(ctx, l.readMark())
}

// readSince returns, for a worker, a reading of the pool's that started
// after mark, and notes its number; outside workers, a fresh snapshot.
func (l *Loop) readSince(ctx context.Context, mark uint64) (guard.Snapshot, error) {
	p := l.pool()
	if p == nil || p.view == nil {
		return l.snapshotFresh(ctx)
	}
	r, err := p.view.Since(ctx, mark)
	if err != nil {
		return nil, err
	}
	l.seat.readSeq, l.seat.readDone = r.Seq, r.Done
	if l.seat.readingDue != nil {
		l.seat.readingDue() // this worker's judgement has its reading
	}
	return r.Snap, nil
}

package modes

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/state"
)

// This file is where a BUILD iteration decides, and acts on, whether its
// issue is closed, reopened or still open, what the iteration's outcome
// is, and whether the issue is stuck. Read it top to bottom:
//
//   - decide: once judging has reverted what it must (iteration.go,
//     judgeBuild), the close verdict (decideClose), the reopen of a close
//     the checks or the policy do not bear out, and the judgement of an
//     attempt that did not close (judgeFailure, decideOutcome);
//   - settle: a verified close ends the issue's attempts; an issue that
//     is now stuck (stuck) is given up on;
//   - the pure decisions themselves, below them.
//
// An agent run that is not an attempt (isAttempt) closes nothing: it is
// given back (iteration.go, giveBack), and its outcome is the agent's.

// decide acts on the judged iteration: it decides whether its issue is
// closed, reopens a close the checks or the policy do not bear out, and
// judges an attempt that did not close. it.after is the tracker as
// judging left it, forbidden changes reverted.
func (l *Loop) decide(ctx context.Context, it *buildIter) error {
	is := it.issue
	cur, ok := it.after[is.ID]
	if !ok {
		return fmt.Errorf("issue %s is missing after the iteration", is.ID)
	}

	failed := firstFailed(it.checks)
	it.rec.Gate = decideGate(it.violated(), it.checks)
	it.verdict = decideClose(cur.Status, it.violated(), failed == nil)
	switch it.verdict {
	case closed:
		it.outcome = decideOutcome(it.out.Status, it.violated(), it.verdict, false)
		return nil
	case reopen:
		if failed == nil {
			// The checks pass, but the iteration made forbidden changes: its
			// close does not count either.
			if err := l.reopenViolatingClose(ctx, is.ID, it.rec.Violations); err != nil {
				return err
			}
		} else if err := l.reopenFailedClose(ctx, is.ID, *failed); err != nil {
			return err
		}
	}
	if cur.Status == beads.StatusInProgress {
		l.setOpen(ctx, is.ID) // no agent is alive any more: nothing stays claimed
	}
	return l.judgeFailure(ctx, it)
}

// judgeFailure judges an attempt that did not close its issue: fingerprint,
// progress and escalation (judgeFailed), then stores the issue's new
// judgement and the verbatim attempt.
func (l *Loop) judgeFailure(ctx context.Context, it *buildIter) error {
	is := it.issue
	st, _ := l.repo().Status(ctx)
	now := gitSignals{head: st.Head, diff: st.Diff, changed: st.Changed}
	policy := judge.Policy{FingerprintRepeats: l.Config.ErrorFingerprintRepeats, NoProgressRepeats: l.Config.NoProgressRepeats}
	f := judgeFailed(it, now, policy, l.lastWorked != is.ID)
	if err := l.State.RecordFailure(is.ID, f.judgement, f.attempt); err != nil {
		return err
	}
	it.record.Judgement = f.judgement
	it.rec.Fingerprint = f.attempt.Fingerprint
	progress := f.verdict.Progress
	it.rec.Progress = &progress
	it.rec.Tier = int(f.judgement.Next.Tier)
	it.outcome = decideOutcome(it.out.Status, it.violated(), it.verdict, f.verdict.NoOp)
	if !f.verdict.Progress {
		l.human().Warn("no progress", "issue", is.ID, "why", strings.Join(f.verdict.Reasons, "; "))
	}
	if d := f.judgement.Next; d.Tier != judge.TierNone && d.Tier != judge.TierHardStop {
		l.human().Warn("next attempt shifts strategy", "issue", is.ID, "tier", d.Tier.String(), "reason", d.Reason, "count", d.Count)
	}
	return nil
}

// settle acts on what judging decided: a verified close clears the issue's
// attempt record; an issue that is now stuck is given up on.
func (l *Loop) settle(ctx context.Context, res *Result, it *buildIter) (iteration, error) {
	is := it.issue
	cause := judge.NotStuck
	if it.verdict == closed {
		// A verified close ends the issue's attempts: the whole record goes
		// (a worker's once its work is integrated).
		if l.seat == nil {
			if _, err := l.State.Reset(is.ID); err != nil {
				return iteration{reason: "could not reset the attempt record"}, err
			}
			l.forgetSession(is.ID)
		}
		res.Closed = append(res.Closed, is.ID)
	} else {
		// The record as this iteration left it: the attempt it counted and
		// the judgement it stored.
		it.record.Count = it.attempt
		cause = stuck(it.record, l.Config.MaxStuck)
	}
	it.rec.Stuck = cause != judge.NotStuck
	l.lastWorked = is.ID
	l.endBuildIteration(res, it)
	if it.rec.Stuck {
		if err := l.markStuck(ctx, res, it.record); err != nil {
			return iteration{reason: "could not mark the issue stuck"}, err
		}
	}
	return iteration{}, nil
}

// Outcome is how an iteration ended, as history's "outcome" field and the
// run log's iteration_end event record it. The strings are stable: old
// records and jq queries over them rely on them.
type Outcome string

// What the agent run came to, when nothing judged it further: the
// agent.Status values.
const (
	OutcomeOK          = Outcome(agent.StatusOK)          // the agent finished (PLANNING; BUILD judges further)
	OutcomeAgentError  = Outcome(agent.StatusAgentError)  // the agent reported failure, and the issue stayed open
	OutcomeRateLimited = Outcome(agent.StatusRateLimited) // not an attempt: given back
	OutcomeFatal       = Outcome(agent.StatusFatal)       // the agent cannot run at all
	OutcomeTimeout     = Outcome(agent.StatusTimeout)     // killed at the iteration timeout, and the issue stayed open
	OutcomeCrashed     = Outcome(agent.StatusCrashed)     // died without a result, and the issue stayed open
	OutcomeInterrupted = Outcome(agent.StatusInterrupted) // ralphd was stopped: given back
)

// What judging a BUILD iteration decided.
const (
	OutcomeClosed     Outcome = "closed"      // closed, and every check passed
	OutcomeReopened   Outcome = "reopened"    // closed, but a check failed: reopened
	OutcomeNotClosed  Outcome = "not_closed"  // the agent finished, the issue stayed open
	OutcomeNoProgress Outcome = "no_progress" // ... and the attempt changed nothing at all
	OutcomeViolation  Outcome = "violation"   // a forbidden change was reverted or flagged
)

// History records that are not iterations.
const (
	OutcomeStuck      Outcome = "stuck"      // BUILD gave up on an issue
	OutcomeCheckpoint Outcome = "checkpoint" // 90% of the run timeout passed
)

// isAttempt reports whether an agent run counts as an attempt at the
// issue. A rate limit, an agent that cannot run, and an interruption do
// not: their attempt is given back.
func isAttempt(s agent.Status) bool {
	switch s {
	case agent.StatusRateLimited, agent.StatusFatal, agent.StatusInterrupted:
		return false
	}
	return true
}

// closeVerdict is what the tracker and the checks say about the issue
// after its iteration.
type closeVerdict int

const (
	stillOpen closeVerdict = iota // the issue is not closed (or the close was a violation)
	closed                        // closed, and every check passed
	reopen                        // closed, but a check failed or the iteration made forbidden changes: ralphd reopens it
)

// decideClose decides whether the iteration closed its issue: status is
// the issue's status afterwards (forbidden changes reverted), violated says
// forbidden changes were found, and checksPass says every check passed. A
// close counts only when the checks pass and the iteration made no
// forbidden change; otherwise ralphd reopens it. (A close that was itself
// the forbidden change, one without a reason, is reopened by the revert
// already: its status is no longer closed.)
func decideClose(status string, violated, checksPass bool) closeVerdict {
	switch {
	case status != beads.StatusClosed:
		return stillOpen
	case violated || !checksPass:
		return reopen
	}
	return closed
}

// decideOutcome is the outcome of a judged BUILD iteration: agent is what
// the agent run came to, violated and v what the judging found, and noOp
// that the attempt changed nothing (judge.Verdict.NoOp; only asked of an
// attempt that did not close its issue).
func decideOutcome(agentStatus agent.Status, violated bool, v closeVerdict, noOp bool) Outcome {
	switch {
	case v == closed:
		return OutcomeClosed
	case violated:
		return OutcomeViolation
	case v == reopen:
		return OutcomeReopened
	case agentStatus != agent.StatusOK:
		return Outcome(agentStatus)
	case noOp:
		return OutcomeNoProgress
	}
	return OutcomeNotClosed
}

// decideGate is how far the iteration's work got, for history's "gate":
// the policy gate when it violated, else the first failing check's gate,
// GatePassed when checks ran and all passed, GateAgent when none ran.
func decideGate(violated bool, checks []check) string {
	switch {
	case violated:
		return GatePolicy
	case len(checks) == 0:
		return GateAgent
	}
	if c := firstFailed(checks); c != nil {
		return c.Gate
	}
	return GatePassed
}

// firstFailed is the first check that failed, or nil.
func firstFailed(checks []check) *check {
	for i := range checks {
		if !checks[i].passed() {
			return &checks[i]
		}
	}
	return nil
}

// stuck is the one place BUILD decides to give up on an issue, and why:
// its attempts reached max_stuck, or the escalation decided a hard stop
// (judge.Stuck). `ralphd status` asks the same of the same record.
func stuck(r state.IssueRecord, maxAttempts int) judge.StuckCause {
	return r.Stuck(maxAttempts)
}

package modes

import (
	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/state"
)

// This file is the decision core of a BUILD iteration: from what the
// iteration saw, it decides whether the issue is closed, reopened or still
// open, what the iteration's outcome is, and whether the issue is stuck.
// Everything here is a pure function of its inputs; iteration.go runs the
// iteration and acts on these decisions.

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

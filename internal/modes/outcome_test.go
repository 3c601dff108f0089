package modes

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// The outcome strings are what history.jsonl and the run log have always
// held; jq queries over old records depend on them.
func TestOutcomeStringsAreStable(t *testing.T) {
	is := is.New(t)
	for o, want := range map[Outcome]string{
		OutcomeOK: "ok", OutcomeAgentError: "agent_error", OutcomeRateLimited: "rate_limited",
		OutcomeFatal: "fatal_config", OutcomeTimeout: "timeout", OutcomeCrashed: "crashed",
		OutcomeInterrupted: "interrupted", OutcomeClosed: "closed", OutcomeReopened: "reopened",
		OutcomeNotClosed: "not_closed", OutcomeNoProgress: "no_progress", OutcomeViolation: "violation",
		OutcomeStuck: "stuck", OutcomeCheckpoint: "checkpoint",
	} {
		is.Equal(string(o), want)
	}
	is.Equal(string(OutcomeInterrupted), state.OutcomeInterrupted) // the crash sweep writes the same
}

func TestIsAttempt(t *testing.T) {
	tests := []struct {
		status agent.Status
		want   bool
	}{
		{agent.StatusOK, true},
		{agent.StatusAgentError, true},
		{agent.StatusTimeout, true},
		{agent.StatusCrashed, true},
		{agent.StatusRateLimited, false},
		{agent.StatusFatal, false},
		{agent.StatusInterrupted, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			is.New(t).Equal(isAttempt(tt.status), tt.want)
		})
	}
}

func TestDecideClose(t *testing.T) {
	tests := []struct {
		name       string
		status     string
		violated   bool
		checksPass bool
		want       closeVerdict
	}{
		{"closed, checks pass", beads.StatusClosed, false, true, closed},
		{"closed, a check fails", beads.StatusClosed, false, false, reopen},
		{"closed among forbidden changes", beads.StatusClosed, true, true, reopen},
		{"closed among forbidden changes, a check fails", beads.StatusClosed, true, false, reopen},
		{"reopened by the revert", beads.StatusOpen, true, true, stillOpen},
		{"open, checks pass", beads.StatusOpen, false, true, stillOpen},
		{"left in progress", beads.StatusInProgress, false, true, stillOpen},
		{"blocked", beads.StatusBlocked, false, false, stillOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(decideClose(tt.status, tt.violated, tt.checksPass), tt.want)
		})
	}
}

func TestDecideOutcome(t *testing.T) {
	tests := []struct {
		name     string
		status   agent.Status
		violated bool
		verdict  closeVerdict
		noOp     bool
		want     Outcome
	}{
		{"closed", agent.StatusOK, false, closed, false, OutcomeClosed},
		{"closed although the agent reported an error", agent.StatusAgentError, false, closed, false, OutcomeClosed},
		{"reopened", agent.StatusOK, false, reopen, false, OutcomeReopened},
		{"reopened after a timeout", agent.StatusTimeout, false, reopen, true, OutcomeReopened},
		{"open", agent.StatusOK, false, stillOpen, false, OutcomeNotClosed},
		{"open, nothing changed", agent.StatusOK, false, stillOpen, true, OutcomeNoProgress},
		{"violation", agent.StatusOK, true, stillOpen, false, OutcomeViolation},
		{"violation that changed nothing else", agent.StatusOK, true, stillOpen, true, OutcomeViolation},
		{"closed among forbidden changes: reopened, a violation", agent.StatusOK, true, reopen, false, OutcomeViolation},
		{"agent error keeps its status", agent.StatusAgentError, false, stillOpen, true, OutcomeAgentError},
		{"timeout keeps its status", agent.StatusTimeout, false, stillOpen, false, OutcomeTimeout},
		{"crash keeps its status", agent.StatusCrashed, false, stillOpen, false, OutcomeCrashed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(decideOutcome(tt.status, tt.violated, tt.verdict, tt.noOp), tt.want)
		})
	}
}

func TestDecideGate(t *testing.T) {
	pass := check{Name: "verify", Gate: GateVerify}
	failVerify := check{Name: "verify", Gate: GateVerify, ExitCode: 1}
	failAcc := check{Name: "acceptance: x", Gate: GateAcceptance, Command: "false", Expect: 0, ExitCode: 1}
	timedOut := check{Name: "verify", Gate: GateVerify, TimedOut: true}
	tests := []struct {
		name     string
		violated bool
		checks   []check
		want     string
	}{
		{"no checks", false, nil, GateAgent},
		{"all pass", false, []check{pass, pass}, GatePassed},
		{"verify fails", false, []check{failVerify, failAcc}, GateVerify},
		{"acceptance fails", false, []check{pass, failAcc}, GateAcceptance},
		{"a timeout fails even at exit 0", false, []check{timedOut}, GateVerify},
		{"violation first", true, []check{failVerify}, GatePolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(decideGate(tt.violated, tt.checks), tt.want)
		})
	}
}

// failedIter is a BUILD iteration on rt-a1 whose verify check failed with
// output, after the agent ran with status and toolCalls; work says whether
// the attempt changed the working tree (against pre).
func failedIter(prev state.Judgement, attempt int, output string, status agent.Status, toolCalls int) *buildIter {
	snap := guard.NewSnapshot([]beads.Issue{{ID: "rt-a1", Status: beads.StatusOpen}})
	it := &buildIter{
		issue:   beads.Issue{ID: "rt-a1"},
		n:       attempt,
		attempt: attempt,
		record:  state.IssueRecord{IssueID: "rt-a1", Count: attempt - 1, Judgement: prev},
		out:     agent.Outcome{Status: status, ToolCalls: toolCalls, ExitCode: 0},
		pre:     preSignals{head: "h0", diff: "d0", issue: issueHash(snap, "rt-a1")},
		after:   snap,
	}
	if output != "" {
		it.checks = []check{{Name: "verify", Gate: GateVerify, Command: "go test ./...", ExitCode: 1, Output: output}}
	}
	it.rec.Gate = decideGate(false, it.checks)
	return it
}

func TestJudgeFailed(t *testing.T) {
	const goFail = "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 3, want 4\nFAIL\n"
	tests := []struct {
		name      string
		it        *buildIter
		now       gitSignals
		newStreak bool
		// want
		errLine  string // "" means no failure line
		progress bool
		noOp     bool
		tier     judge.Tier
		base     string
		exitCode int
		outputs  []string // names of the recorded outputs
	}{
		{
			name: "first failure, work done", it: failedIter(state.Judgement{}, 1, goFail, agent.StatusOK, 5),
			now: gitSignals{head: "h0", diff: "d1", changed: []string{"parse.go"}}, newStreak: true,
			errLine: "parse_test.go:12: got 3, want 4", progress: true, tier: judge.TierNone, base: "h0",
			exitCode: 1, outputs: []string{GateVerify},
		},
		{
			name: "nothing done at all", it: failedIter(state.Judgement{}, 1, "", agent.StatusOK, 0),
			now:      gitSignals{head: "h0", diff: "d0"},
			progress: false, noOp: true, tier: judge.TierNone, base: "h0",
		},
		{
			name: "a failing check without a known failure line uses its first line",
			it:   failedIter(state.Judgement{}, 1, "\n  something odd\nmore\n", agent.StatusOK, 1),
			now:  gitSignals{head: "h0", diff: "d1"}, errLine: "something odd", progress: true, base: "h0",
			exitCode: 1, outputs: []string{GateVerify},
		},
		{
			name: "the agent's own error is recorded",
			it: func() *buildIter {
				it := failedIter(state.Judgement{}, 1, "", agent.StatusAgentError, 3)
				it.out.Reason = "error: max turns"
				return it
			}(),
			now: gitSignals{head: "h1", diff: "d1"}, errLine: "error: max turns", progress: true, base: "h0",
			outputs: []string{"agent"},
		},
		{
			name: "same error again escalates, same streak keeps its base",
			it: failedIter(state.Judgement{Base: "b0", Escalation: judge.State{
				Attempts: 1, LastFingerprint: judge.NewNormalizer("rt").Fingerprint("parse_test.go:12: got 3, want 4"), FingerprintRun: 1,
			}}, 2, goFail, agent.StatusOK, 4),
			now: gitSignals{head: "h0", diff: "d2"}, errLine: "parse_test.go:12: got 3, want 4",
			progress: true, tier: judge.TierStrategyShift, base: "b0", exitCode: 1, outputs: []string{GateVerify},
		},
		{
			name: "another issue worked in between: a new base",
			it:   failedIter(state.Judgement{Base: "b0", Escalation: judge.State{Attempts: 1}}, 2, goFail, agent.StatusOK, 4),
			now:  gitSignals{head: "h0", diff: "d2"}, newStreak: true, errLine: "parse_test.go:12: got 3, want 4",
			progress: true, base: "h0", exitCode: 1, outputs: []string{GateVerify},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			before := fmt.Sprintf("%#v", tt.it.record)
			f := judgeFailed(tt.it, tt.now, judge.Policy{}, tt.newStreak)
			is.Equal(fmt.Sprintf("%#v", tt.it.record), before) // judging stores nothing, changes nothing
			is.Equal(f.judgement.LastError, tt.errLine)
			if tt.errLine == "" {
				is.Equal(f.attempt.Fingerprint, "")
			} else {
				is.Equal(f.attempt.Fingerprint, judge.NewNormalizer("rt").Fingerprint(tt.errLine))
			}
			is.Equal(f.verdict.Progress, tt.progress)
			is.Equal(f.verdict.NoOp, tt.noOp)
			is.Equal(f.judgement.Next.Tier, tt.tier)
			is.Equal(f.judgement.Base, tt.base)
			is.Equal(f.judgement.Escalation.Attempts, tt.it.record.Judgement.Escalation.Attempts+1)
			is.Equal(f.judgement.Signals.GitHead, tt.now.head)
			is.Equal(f.attempt.Iteration, tt.it.n)
			is.Equal(f.attempt.ExitCode, tt.exitCode)
			is.Equal(f.attempt.FilesModified, tt.now.changed)
			var names []string
			for _, o := range f.attempt.Outputs {
				names = append(names, o.Name)
			}
			is.Equal(names, tt.outputs)
		})
	}
}

// TestStuckDecisions runs the decision core over whole sequences of failed
// attempts, as BUILD does, and asks after each one whether the issue is
// stuck: the attempt cap and the escalation's hard stop both end up in
// stuck, and a reset record starts from nothing.
func TestStuckDecisions(t *testing.T) {
	const sameErr = "    parse_test.go:12: got 3, want 4\nFAIL\n"
	tests := []struct {
		name     string
		max      int
		start    state.Judgement // the record's judgement before attempt 1
		output   string
		work     bool // each attempt changes the tree
		want     []judge.StuckCause
		wantNote string
	}{
		{
			name: "same error, cap 3: the cap comes first", max: 3, output: sameErr, work: true,
			want:     []judge.StuckCause{judge.NotStuck, judge.NotStuck, judge.StuckAttemptCap},
			wantNote: "the same error 3 times in a row, after 2 strategy shifts (reason: repeated_fingerprint)",
		},
		{
			name: "same error, cap 9: the hard stop after 4", max: 9, output: sameErr, work: true,
			want:     []judge.StuckCause{judge.NotStuck, judge.NotStuck, judge.NotStuck, judge.StuckHardStop},
			wantNote: "the same error 4 times in a row, after 2 strategy shifts (reason: repeated_fingerprint)",
		},
		{
			name: "nothing done, cap 3", max: 3, output: "", work: false,
			want:     []judge.StuckCause{judge.NotStuck, judge.NotStuck, judge.StuckAttemptCap},
			wantNote: "no progress 3 times in a row, after 2 strategy shifts (reason: no_progress)",
		},
		{
			// What the bug of issue 16 left behind after a reset that
			// cleared only the counter: a stopped escalation. The decision
			// core, given it, stops at once; Reset clears it (state tests).
			name: "a stale hard stop stops at once", max: 3, output: sameErr, work: true,
			start: state.Judgement{Escalation: judge.State{Attempts: 4, FingerprintRun: 4, StrategyShifts: 2, Stopped: true, StopReason: judge.ReasonRepeatedFingerprint}},
			want:  []judge.StuckCause{judge.StuckHardStop},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			j := tt.start
			var r state.IssueRecord
			for i, want := range tt.want {
				attempt := i + 1
				it := failedIter(j, attempt, tt.output, agent.StatusOK, 0)
				now := gitSignals{head: "h0", diff: "d0"}
				if tt.work {
					it.out.ToolCalls = 3
					now.diff = fmt.Sprintf("d%d", attempt)
					it.pre.diff = fmt.Sprintf("d%d", attempt-1)
				}
				f := judgeFailed(it, now, judge.Policy{}, attempt == 1)
				j = f.judgement
				r = state.IssueRecord{IssueID: "rt-a1", Count: attempt, Judgement: j}
				is.Equal(stuck(r, tt.max), want) // after attempt i+1
			}
			if tt.wantNote != "" {
				l := &Loop{Deps: Deps{Now: fixedNow}}
				note := l.stuckNote(r)
				is.True(strings.HasPrefix(note, fmt.Sprintf("STUCK: Failed after %s at 2026-01-02T03:04:05Z. Moving to next issue.\nWhy: %s.\n", text.Count(len(tt.want), "attempt"), tt.wantNote)))
			}
		})
	}
}

func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

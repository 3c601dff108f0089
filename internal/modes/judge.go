package modes

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/tamper"
)

// citesEvidence is the test a close reason must pass in BUILD mode.
func citesEvidence(reason string) bool { return judge.CitesEvidence(reason) }

// judgement is what ralphd remembers about one issue's failed attempts
// between iterations, and across runs and crashes, in
// <state>/attempts/<issue>.json. The verbatim output of the last attempts
// is beside it, in <issue>.md, written by judge.WriteRecord.
type judgement struct {
	// Base is HEAD when the issue's first failed attempt began: where a
	// failure branch restores the working branch to.
	Base       string         `json:"base,omitempty"`
	LastGate   string         `json:"last_gate,omitempty"`
	Escalation judge.State    `json:"escalation"`
	Signals    judge.Signals  `json:"signals"` // after the last attempt
	Next       judge.Decision `json:"next"`    // how to run the next attempt
	LastError  string         `json:"last_error,omitempty"`
	AutoFixed  []string       `json:"auto_fixed,omitempty"` // forbidden changes reverted along the way
}

func (l *Loop) judgementPath(id string) string {
	return strings.TrimSuffix(judge.RecordPath(l.State.AttemptsDir(), id), ".md") + ".json"
}

// loadJudgement reads an issue's judgement; a missing or unreadable file
// is a fresh start (and a warning for the latter).
func (l *Loop) loadJudgement(id string) judgement {
	var j judgement
	data, err := os.ReadFile(l.judgementPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return j
	}
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	if err != nil {
		l.human().Warn("ignoring an unreadable attempt judgement; the issue's escalation starts over", "issue", id, "err", err)
		return judgement{}
	}
	return j
}

func (l *Loop) saveJudgement(id string, j judgement) error {
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.State.AttemptsDir(), 0o700); err != nil {
		return err
	}
	return state.WriteFileAtomic(l.judgementPath(id), append(data, '\n'), 0o600)
}

// clearJudgement forgets an issue's failures once it is closed for good.
func (l *Loop) clearJudgement(id string) {
	for _, p := range []string{l.judgementPath(id), judge.RecordPath(l.State.AttemptsDir(), id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.human().Warn("could not remove an attempt record", "path", p, "err", err)
		}
	}
}

// previousAttempts is the verbatim record of the issue's last attempts, for
// the next prompt.
func (l *Loop) previousAttempts(issueID string) (string, error) {
	s, err := judge.PromptSection(l.State.AttemptsDir(), issueID)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return s, err
}

// preSignals are the progress signals taken just before an attempt.
type preSignals struct {
	head, diff, issue string
}

func (l *Loop) takePreSignals(ctx context.Context, snap tamper.Snapshot, id string) preSignals {
	head, _ := l.repo().Head(ctx)
	diff, _ := l.repo().DiffHashAt(ctx, head)
	return preSignals{head: head, diff: diff, issue: issueHash(snap, id)}
}

// issueHash is the part of an issue's record whose change counts as
// progress: status (claiming aside), notes, children and blockers.
func issueHash(s tamper.Snapshot, id string) string {
	is := s[id]
	status := is.Status
	if status == beads.StatusInProgress {
		status = beads.StatusOpen // claiming is not progress
	}
	var children, blockers []string
	for _, x := range s {
		if x.Parent == id {
			children = append(children, x.ID)
			continue
		}
		for _, d := range x.Dependencies {
			if d.DependsOnID == id && d.Type == beads.DepParentChild {
				children = append(children, x.ID)
			}
		}
	}
	for _, d := range is.Dependencies {
		if d.Type == beads.DepBlocks {
			blockers = append(blockers, d.DependsOnID)
		}
	}
	return judge.IssueHash(status, is.Notes, children, blockers)
}

// idPrefix is the tracker's id prefix ("rt" of "rt-a1b"), so fingerprints
// normalise every issue id the project has.
func idPrefix(id string) string {
	if i := strings.LastIndexByte(strings.SplitN(id, ".", 2)[0], '-'); i > 0 {
		return id[:i]
	}
	return ""
}

// judgeFailure records a failed attempt: fingerprint, progress, escalation
// and the verbatim attempt record. It reports whether the issue reached
// its hard stop.
func (l *Loop) judgeFailure(ctx context.Context, rec *state.Record, is beads.Issue, after tamper.Snapshot, pre preSignals, out agent.Outcome, calls []state.BDCall, checks []check, fixed []string) (bool, error) {
	j := l.loadJudgement(is.ID)
	// The base is where this streak of attempts began: if another issue was
	// worked in between (its commits must stay), the streak starts over.
	if j.Base == "" || l.lastWorked != is.ID {
		j.Base = pre.head
	}
	j.LastGate = rec.Gate
	var failing []string
	var first *check
	for i := range checks {
		if !checks[i].passed() {
			failing = append(failing, checks[i].Name)
			if first == nil {
				first = &checks[i]
			}
		}
	}
	verifyOut, agentErr := "", ""
	if first != nil {
		verifyOut = first.Output
	}
	if out.Status != agent.StatusOK {
		agentErr = strings.TrimSpace(out.Reason + "\n" + out.ResultText)
	}
	errLine := judge.ErrorLine(verifyOut, agentErr)
	if errLine == "" && first != nil {
		// A failing check always has a failure line: its first non-blank
		// output line, else its command and exit code.
		errLine = fmt.Sprintf("`%s` exited %d", first.Command, first.ExitCode)
		for _, ln := range strings.Split(first.Output, "\n") {
			if ln = strings.TrimSpace(ln); ln != "" {
				errLine = ln
				break
			}
		}
	}
	fp := judge.NewNormalizer(idPrefix(is.ID)).Fingerprint(errLine)

	head, _ := l.repo().Head(ctx)
	diff, _ := l.repo().DiffHashAt(ctx, head)
	cur := judge.Signals{
		FailingChecks: failing, Fingerprint: fp, GitHead: head, DiffHash: diff,
		IssueHash: issueHash(after, is.ID), ToolCalls: out.ToolCalls + len(calls),
	}
	// Did this attempt change the work (against just before it), and did
	// the checks move (against the previous attempt)?
	prev := judge.Signals{
		FailingChecks: j.Signals.FailingChecks, Fingerprint: j.Signals.Fingerprint,
		GitHead: pre.head, DiffHash: pre.diff, IssueHash: pre.issue,
	}
	if j.Escalation.Attempts == 0 {
		prev.FailingChecks, prev.Fingerprint = nil, ""
	}
	v := judge.Progress(prev, cur)
	policy := judge.Policy{FingerprintRepeats: l.Config.ErrorFingerprintRepeats, NoProgressRepeats: l.Config.NoProgressRepeats}
	st, d := policy.Next(j.Escalation, judge.Outcome{Fingerprint: fp, ErrorLine: errLine, Progress: v.Progress})
	j.Escalation, j.Signals, j.Next, j.LastError = st, cur, d, errLine
	j.AutoFixed = append(j.AutoFixed, fixed...)
	if err := l.saveJudgement(is.ID, j); err != nil {
		return false, fmt.Errorf("save the judgement of %s: %w", is.ID, err)
	}

	changed, _ := l.repo().Changed(ctx)
	a := judge.Attempt{
		Iteration: rec.Iteration, LastGate: rec.Gate, ExitCode: out.ExitCode, Fingerprint: fp,
		StuckCount: st.StuckCount(), StrategyShifts: st.StrategyShifts, FilesModified: changed,
	}
	for _, c := range checks {
		a.Outputs = append(a.Outputs, judge.Output{Name: c.Gate, Command: c.Command, ExitCode: c.ExitCode, Text: c.Output})
		if c.Gate == rec.Gate && !c.passed() {
			a.ExitCode = c.ExitCode
		}
	}
	if agentErr != "" {
		a.Outputs = append(a.Outputs, judge.Output{Name: "agent", ExitCode: out.ExitCode, Text: agentErr})
	}
	if err := judge.WriteRecord(l.State.AttemptsDir(), is.ID, a); err != nil {
		return false, fmt.Errorf("write the attempt record of %s: %w", is.ID, err)
	}

	rec.Fingerprint = fp
	progress := v.Progress
	rec.Progress = &progress
	rec.Tier = int(d.Tier)
	if v.NoOp && rec.Outcome == "not_closed" {
		rec.Outcome = "no_progress"
	}
	if !v.Progress {
		l.human().Warn("no progress", "issue", is.ID, "why", strings.Join(v.Reasons, "; "))
	}
	if d.Tier != judge.TierNone && d.Tier != judge.TierHardStop {
		l.human().Warn("next attempt shifts strategy", "issue", is.ID, "tier", d.Tier.String(), "reason", d.Reason, "count", d.Count)
	}
	return d.Tier == judge.TierHardStop, nil
}

// escalation renders the prompt section for an issue whose last attempts
// escalated (tiers 1 and 2), or "" when they did not.
func (l *Loop) escalation(id string) string {
	j := l.loadJudgement(id)
	d := j.Next
	if d.Tier != judge.TierStrategyShift && d.Tier != judge.TierContextExpansion {
		return ""
	}
	var b strings.Builder
	switch d.Reason {
	case judge.ReasonRepeatedFingerprint:
		fmt.Fprintf(&b, "The previous approach failed the same way %d times in a row. The error, verbatim:\n\n    %s\n\n", d.Count, d.Error)
		fmt.Fprintf(&b, "Do not repeat that approach. Anything that leads to this failure again is forbidden:\n\n    %s\n\n", d.Forbidden)
	default:
		fmt.Fprintf(&b, "The last %d attempts made no progress: no commit, no change to the working tree, no check that started passing, no change to the issue.\n", d.Count)
		if d.Error != "" {
			fmt.Fprintf(&b, "The last error, verbatim:\n\n    %s\n\n", d.Error)
		}
	}
	b.WriteString("Step back: re-read the issue, its acceptance criteria and the code involved, then choose a different approach. ")
	fmt.Fprintf(&b, "This is strategy shift %d of %d; after that ralphd stops working on this issue and hands it to PLANNING. ", d.Shift, d.MaxShifts)
	b.WriteString("If the issue cannot be done as written, say why in a note and create the blocking issue instead of retrying.\n")
	if d.Tier == judge.TierContextExpansion {
		b.WriteString("\nThe error suggests missing information. What it points at:\n")
		b.WriteString(l.excerpts(d.Paths))
	}
	return b.String()
}

// excerpts shows the start of each file an error points at, inside the
// project only.
func (l *Loop) excerpts(paths []string) string {
	const maxFiles, maxLines = 3, 60
	var b strings.Builder
	if len(paths) == 0 {
		b.WriteString("\n(no file names in the error; list the files involved with `git ls-files` and read them)\n")
	}
	for i, p := range paths {
		if i == maxFiles {
			fmt.Fprintf(&b, "\n(and %d more)\n", len(paths)-maxFiles)
			break
		}
		full := p
		if !filepath.IsAbs(full) {
			full = filepath.Join(l.Dir, p)
		}
		rel, err := filepath.Rel(l.Dir, full)
		if err != nil || strings.HasPrefix(rel, "..") {
			fmt.Fprintf(&b, "\n- %s: outside the project, not shown\n", p)
			continue
		}
		f, err := os.Open(full)
		if err != nil {
			fmt.Fprintf(&b, "\n- %s: does not exist in the project\n", rel)
			continue
		}
		fmt.Fprintf(&b, "\n- %s (first %d lines):\n\n", rel, maxLines)
		sc := bufio.NewScanner(f)
		for n := 0; n < maxLines && sc.Scan(); n++ {
			fmt.Fprintf(&b, "    %s\n", sc.Text())
		}
		f.Close()
	}
	return b.String()
}

// stuckNote is the note for an issue BUILD gives up on: the STUCK line the
// bash loop's users grep for, then what the attempts' judgement knows
// (fingerprints per attempt, the last error, what was auto-fixed, what to
// do next).
func (l *Loop) stuckNote(id string, attempts int) string {
	note := fmt.Sprintf("STUCK: Failed after %d attempts at %s. Moving to next issue.", attempts, l.now().UTC().Format("2006-01-02T15:04:05Z"))
	j := l.loadJudgement(id)
	if j.Escalation.Attempts == 0 {
		return note
	}
	d := j.Next
	if d.Tier != judge.TierHardStop {
		// The attempt limit came first: describe the failures the way the
		// escalation would have.
		e := j.Escalation
		d = judge.Decision{
			Tier: judge.TierHardStop, Error: j.LastError, Fingerprint: e.LastFingerprint,
			Shift: e.StrategyShifts, Attempts: e.Attempts, Fingerprints: e.Fingerprints,
		}
		switch {
		case e.LastFingerprint != "" && e.FingerprintRun >= e.NoProgressRun:
			d.Reason, d.Count = judge.ReasonRepeatedFingerprint, e.FingerprintRun
		case e.NoProgressRun > 0:
			d.Reason, d.Count = judge.ReasonNoProgress, e.NoProgressRun
		default:
			d.Reason = "max_attempts"
		}
	}
	// judge.StuckNote's first line is its own STUCK line; keep its why.
	first, rest, _ := strings.Cut(judge.StuckNote(id, d, j.AutoFixed), "\n")
	if _, why, ok := strings.Cut(first, " attempts"); ok {
		if why = strings.TrimLeft(why, ":, "); why != "" {
			note += "\nWhy: " + why
		}
	}
	return note + "\n" + rest
}

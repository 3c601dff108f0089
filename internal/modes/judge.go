package modes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// citesEvidence is the test a close reason must pass in BUILD mode.
func citesEvidence(reason string) bool { return judge.CitesEvidence(reason) }

// record loads the issue's attempt record, reporting on the human log
// what of it could not be read (that part starts over).
func (l *Loop) record(id string) (state.IssueRecord, error) {
	r, err := l.State.Issue(id)
	for _, w := range l.State.Warnings() {
		l.human().Warn(w, "issue", id)
	}
	if err != nil {
		return r, fmt.Errorf("read the attempt record of %s: %w", id, err)
	}
	return r, nil
}

// preSignals are the progress signals taken just before an attempt.
type preSignals struct {
	head, diff, issue string
}

func (l *Loop) takePreSignals(ctx context.Context, snap guard.Snapshot, id string) preSignals {
	st, _ := l.repo().Status(ctx)
	return preSignals{head: st.Head, diff: st.Diff, issue: issueHash(snap, id)}
}

// issueHash is the part of an issue's record whose change counts as
// progress: status (claiming aside), notes, children and blockers.
func issueHash(s guard.Snapshot, id string) string {
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

// gitSignals are the working tree's signals after an attempt.
type gitSignals struct {
	head, diff string
	changed    []string // files with uncommitted changes
}

// failure is what judging a failed attempt decided.
type failure struct {
	// judgement is the issue's judgement after the attempt; its Next says
	// how to run the next attempt (a hard stop makes the issue stuck).
	judgement state.Judgement
	attempt   judge.Attempt // the attempt's verbatim record
	verdict   judge.Verdict // its progress
}

// judgeFailed judges an attempt that did not close its issue, from what
// the iteration saw and now, the working tree after it: its failure line
// and fingerprint, its progress against just before it (and against the
// attempt before, for the checks), and the escalation's decision for the
// next attempt. newStreak says another issue was worked since this one's
// last attempt, so the streak's base (where a failure branch restores to)
// starts over at this attempt's HEAD. It decides only: it stores nothing.
func judgeFailed(it *buildIter, now gitSignals, policy judge.Policy, newStreak bool) failure {
	is, out := it.issue, it.out
	j := it.record.Judgement
	if j.Base == "" || newStreak {
		j.Base = it.pre.head
	}
	j.LastGate = it.rec.Gate
	var failing []string
	for _, c := range it.checks {
		if !c.passed() {
			failing = append(failing, c.Name)
		}
	}
	first := firstFailed(it.checks)
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

	cur := judge.Signals{
		FailingChecks: failing, Fingerprint: fp, GitHead: now.head, DiffHash: now.diff,
		IssueHash: issueHash(it.after, is.ID), ToolCalls: out.ToolCalls + len(it.calls),
	}
	// Did this attempt change the work (against just before it), and did
	// the checks move (against the previous attempt)?
	prev := judge.Signals{
		FailingChecks: j.Signals.FailingChecks, Fingerprint: j.Signals.Fingerprint,
		GitHead: it.pre.head, DiffHash: it.pre.diff, IssueHash: it.pre.issue,
	}
	if j.Escalation.Attempts == 0 {
		prev.FailingChecks, prev.Fingerprint = nil, ""
	}
	v := judge.Progress(prev, cur)
	st, d := policy.Next(j.Escalation, judge.Outcome{Fingerprint: fp, ErrorLine: errLine, Progress: v.Progress})
	j.Escalation, j.Signals, j.Next, j.LastError = st, cur, d, errLine
	j.AutoFixed = append(slices.Clone(j.AutoFixed), it.fixed...)

	a := judge.Attempt{
		Iteration: it.n, LastGate: it.rec.Gate, ExitCode: out.ExitCode, Fingerprint: fp,
		StuckCount: st.StuckCount(), StrategyShifts: st.StrategyShifts, FilesModified: now.changed,
	}
	for _, c := range it.checks {
		a.Outputs = append(a.Outputs, judge.Output{Name: c.Gate, Command: c.Command, ExitCode: c.ExitCode, Text: c.Output})
		if c.Gate == it.rec.Gate && !c.passed() {
			a.ExitCode = c.ExitCode
		}
	}
	if agentErr != "" {
		a.Outputs = append(a.Outputs, judge.Output{Name: "agent", ExitCode: out.ExitCode, Text: agentErr})
	}
	if out.OutputTail != "" {
		// What the agent itself said and ran, last: the next attempt
		// needs it most.
		a.Outputs = append(a.Outputs, judge.Output{Name: "agent-output", ExitCode: out.ExitCode, Text: lastLines(out.OutputTail, judge.MaxOutputLines)})
	}
	return failure{judgement: j, attempt: a, verdict: v}
}

// escalation renders the prompt section for an issue whose last attempts
// escalated (tiers 1 and 2), or "" when they did not.
func (l *Loop) escalation(j state.Judgement) string {
	d := j.Next
	if d.Tier != judge.TierStrategyShift && d.Tier != judge.TierContextExpansion {
		return ""
	}
	var b strings.Builder
	switch d.Reason {
	case judge.ReasonRepeatedFingerprint:
		fmt.Fprintf(&b, "The previous approach failed the same way %s in a row. The error, verbatim:\n\n    %s\n\n", text.Count(d.Count, "time"), d.Error)
		fmt.Fprintf(&b, "Do not repeat that approach. Anything that leads to this failure again is forbidden:\n\n    %s\n\n", d.Forbidden)
	default:
		fmt.Fprintf(&b, "The last %s made no progress: no commit, no change to the working tree, no check that started passing, no change to the issue.\n", text.Count(d.Count, "attempt"))
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
		// The work tree is the agent's: a FIFO there must not block
		// ralphd, nor a device feed it.
		f, err := atomicfile.OpenFollow(full)
		if errors.Is(err, atomicfile.ErrNotRegular) {
			fmt.Fprintf(&b, "\n- %s: not a regular file, not shown\n", rel)
			continue
		}
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
func (l *Loop) stuckNote(r state.IssueRecord) string {
	note := fmt.Sprintf("STUCK: Failed after %s at %s. Moving to next issue.", text.Count(r.Count, "attempt"), l.now().UTC().Format("2006-01-02T15:04:05Z"))
	j := r.Judgement
	if j.Escalation.Attempts == 0 {
		return note
	}
	d := judge.StuckDecision(j.Escalation, j.Next, j.LastError)
	// judge.StuckNote's first line is its own STUCK line; keep its why.
	first, rest, _ := strings.Cut(judge.StuckNote(r.IssueID, d, j.AutoFixed), "\n")
	if _, why, ok := strings.Cut(first, " attempts"); ok {
		if why = strings.TrimLeft(why, ":, "); why != "" {
			note += "\nWhy: " + why
		}
	}
	return note + "\n" + rest
}

// lastLines keeps the last lines of text, at most n lines in all with a
// first line saying how many earlier ones were dropped: for the agent's own
// output, the end is what matters.
func lastLines(text string, n int) string {
	lines := strings.Split(text, "\n")
	keep := max(n-1, 1)
	if len(lines) <= n {
		return text
	}
	return fmt.Sprintf("[... %d earlier lines not kept ...]\n", len(lines)-keep) + strings.Join(lines[len(lines)-keep:], "\n")
}

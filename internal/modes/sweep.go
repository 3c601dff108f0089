package modes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/text"
)

// Sweep cleans up after a ralphd that died mid-iteration (SIGKILL, OOM,
// power loss). It must run after the project lock is taken and before the
// first iteration. From the running-agent record it:
//   - ends whatever is left of that agent's process tree, checking process
//     start times so a recycled PID or process group is never touched;
//   - records the iteration as interrupted and gives its attempt back
//     (an interrupted iteration is not a failed attempt);
//   - sets the issue back to open if it is still claimed (in_progress) by
//     nobody else; a close made in the iteration's window is reopened,
//     since no check ran on it (judgeInterrupted).
//
// It also removes temp files of interrupted atomic writes and stale
// scratch dirs. It returns a one-line summary of what it did ("" when
// there was nothing to do).
func (l *Loop) Sweep(ctx context.Context) (string, error) {
	var did []string
	if removed, err := l.State.RemoveStaleTemps(); err == nil && len(removed) > 0 {
		did = append(did, fmt.Sprintf("removed %d half-written state file(s)", len(removed)))
	}
	if n := removeScratch(scratchPrefix(l.State.Identity().ID)); n > 0 {
		did = append(did, fmt.Sprintf("removed %d stale scratch dir(s)", n))
	}
	if err := l.checkSavedPinBeforeSweep(ctx); err != nil {
		return "", err
	}
	r, err := l.State.ReadRunning()
	if err != nil {
		return "", fmt.Errorf("read the running-agent record: %w", err)
	}
	var resumeFound []string
	gaveBack := false
	if r != nil {
		left := agent.EndRecorded(agent.Started{PID: r.PID, PGID: r.PGID, StartTime: r.StartTicks, Marker: r.Marker}, l.Config.StopGrace)
		what := fmt.Sprintf("previous ralphd died during %s iteration %d", r.Mode, r.Iteration)
		if r.IssueID != "" {
			what += fmt.Sprintf(" on %s (attempt %d)", r.IssueID, r.Attempt)
		}
		if left > 0 {
			what += fmt.Sprintf(", %d of its processes could not be ended", left)
		}
		did = append(did, what)
		st, err := l.State.SettleInterrupted(*r, l.now())
		if err != nil {
			return "", fmt.Errorf("settle the interrupted iteration: %w", err)
		}
		if st.Recorded {
			did = append(did, "recorded it as interrupted")
		}
		if st.GaveBack {
			did = append(did, "gave its attempt back")
		}
		gaveBack = st.GaveBack
		if r.IssueID != "" {
			if msg := l.unclaimAfterCrash(ctx, r.IssueID); msg != "" {
				did = append(did, msg)
				resumeFound = append(resumeFound, msg)
			}
		}
	}
	if msg, err := l.judgeInterrupted(ctx); err != nil {
		return "", err
	} else if msg != "" {
		did = append(did, msg)
		resumeFound = append(resumeFound, msg)
	}
	if r != nil {
		l.sweptResume(*r, gaveBack, resumeFound)
	}
	did = append(did, l.sweepWorkers(ctx)...)
	if l.State.Worker() == "" {
		// After every interrupted session was saved: what the dead runs
		// left in the CLIs' dirs is no longer needed.
		if n := l.pruneSessions(); n > 0 {
			did = append(did, fmt.Sprintf("removed the old agent session files of %s", text.Count(n, "issue")))
		}
	}
	if len(did) == 0 {
		return "", nil
	}
	msg := "sweep: " + strings.Join(did, "; ")
	l.event(logjsonl.EventSweep, map[string]any{"summary": msg})
	l.human().Info(msg)
	return msg, nil
}

// judgeInterrupted judges an iteration whose window never closed (ralphd
// died, or could not read the tracker after it): the tracker is diffed
// against the baseline persisted before its agent started, and forbidden
// changes are reverted as for a live iteration. The iteration's processes
// are already ended. Changes a person made since are indistinguishable
// from the agent's and are judged the same way (README, "Separation of
// powers").
func (l *Loop) judgeInterrupted(ctx context.Context) (string, error) {
	b, err := l.State.ReadBaseline()
	if err != nil {
		return "", fmt.Errorf("the interrupted iteration's baseline cannot be read, so its changes cannot be judged "+
			"(check the tracker by hand, then remove %s): %w", l.State.BaselinePath(), err)
	}
	if b == nil {
		return "", nil
	}
	after, err := l.snapshotFullAfter(ctx)
	if err != nil {
		return "", fmt.Errorf("judge interrupted iteration %d against its baseline: %w", b.Iteration, err)
	}
	before := guard.NewSnapshot(b.Issues)
	if !b.ExtraFields {
		keepExtraOf(before, after)
	}
	l.confirmCloseReasons(ctx, before, after)
	_, details := l.revertAgainst(ctx, before, after, b.Iteration, owner{issue: b.IssueID})
	if len(details) > 0 {
		if after, err = l.snapshotFresh(ctx); err != nil {
			return "", fmt.Errorf("judge interrupted iteration %d against its baseline: %w", b.Iteration, err)
		}
	}
	// No check ran on a close made in the window (an agent can close its
	// issue and then kill ralphd): it does not stand. A worker's window
	// overlapped others', whose closes may have been checked and
	// integrated: only its own issue's close is its.
	closes := closedOthers(before, after, "")
	if l.State.Worker() != "" {
		closes = slices.DeleteFunc(closes, func(o beads.Issue) bool { return o.ID != b.IssueID })
	}
	reopened := 0
	why := fmt.Sprintf("ralphd: reopened: closed during iteration %d, whose ralphd died before it could check the close, so no check ran on the close", b.Iteration)
	for _, o := range closes {
		if l.reopenUnchecked(ctx, o.ID, why) {
			reopened++
		}
	}
	if err := l.State.ClearBaseline(); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("judged interrupted iteration %d: ", b.Iteration)
	if len(details) == 0 {
		msg += "no forbidden change"
	} else {
		msg += fmt.Sprintf("reverted %d forbidden change(s)", len(details))
	}
	if reopened > 0 {
		msg += fmt.Sprintf("; reopened %s no check ran on", text.Count(reopened, "close"))
	}
	return msg, nil
}

// unclaimAfterCrash sets the crashed iteration's issue back to open when it
// is still in progress and claimed by ralphd's agent (or by nobody).
func (l *Loop) unclaimAfterCrash(ctx context.Context, id string) string {
	is, err := l.BD.Show(ctx, id)
	if err != nil {
		return fmt.Sprintf("could not read %s: %v", id, err)
	}
	switch {
	case is.Status == beads.StatusClosed:
		return "" // a close the iteration made is judged with its window (judgeInterrupted)
	case is.Status != beads.StatusInProgress:
		return ""
	case is.Assignee != "" && is.Assignee != l.agentActor(ctx):
		return fmt.Sprintf("%s is claimed by %s; left as it is", id, is.Assignee)
	}
	if _, err := l.BD.UpdateStatus(ctx, id, beads.StatusOpen); err != nil {
		return fmt.Sprintf("could not set %s back to open: %v", id, err)
	}
	l.snap.invalidate()
	return fmt.Sprintf("set %s back to open", id)
}

// agentActor is the name bd records for the agent's own calls: bd takes
// $BEADS_ACTOR, then git's user.name, then $USER.
func (l *Loop) agentActor(ctx context.Context) string {
	for _, kv := range l.environ() {
		if v, ok := strings.CutPrefix(kv, "BEADS_ACTOR="); ok && v != "" {
			return v
		}
	}
	if out, err := git.Output(ctx, l.Dir, "config", "user.name"); err == nil && strings.TrimSpace(string(out)) != "" {
		return strings.TrimSpace(string(out))
	}
	return os.Getenv("USER")
}

// removeScratch deletes the scratch dirs a killed ralphd left behind.
func removeScratch(prefix string) int {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	n := 0
	for _, d := range dirs {
		if os.RemoveAll(d) == nil {
			n++
		}
	}
	return n
}

// keepExtraOf gives each issue of a baseline written before ralphd kept
// issues' other fields (beads.Issue.Extra) those fields as they are now,
// so that the judgement after an upgrade does not read them as emptied by
// the agent and "revert" them to nothing. A change the agent made to one
// of them in that one interrupted window goes unjudged: losing the
// user's data would be worse.
func keepExtraOf(before, after guard.Snapshot) {
	for id, b := range before {
		if a, ok := after[id]; ok && b.Extra == nil {
			b.Extra = a.Extra
			before[id] = b
		}
	}
}

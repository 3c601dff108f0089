package modes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
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
	msg, _, err := l.sweep(ctx)
	return msg, err
}

// sweptWindow is an interrupted window a sweep judged against its
// baseline, and how many forbidden changes it found.
type sweptWindow struct {
	runID     string
	iteration int
	found     int
}

// sweep is Sweep, which also returns the windows it judged (its workers'
// too).
func (l *Loop) sweep(ctx context.Context) (string, []sweptWindow, error) {
	var did []string
	var judged []sweptWindow
	if removed, err := l.State.RemoveStaleTemps(); err == nil && len(removed) > 0 {
		did = append(did, fmt.Sprintf("removed %d half-written state file(s)", len(removed)))
	}
	if n := removeScratch(scratchPrefix(l.State.Identity().ID)); n > 0 {
		did = append(did, fmt.Sprintf("removed %d stale scratch dir(s)", n))
	}
	if err := l.checkSavedPinBeforeSweep(ctx); err != nil {
		return "", nil, err
	}
	r, err := l.State.ReadRunning()
	if err != nil {
		return "", nil, fmt.Errorf("read the running-agent record: %w", err)
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
			return "", nil, fmt.Errorf("settle the interrupted iteration: %w", err)
		}
		if st.Recorded {
			did = append(did, "recorded it as interrupted")
		}
		if st.GaveBack {
			did = append(did, "gave its attempt back")
		}
		gaveBack = st.GaveBack
		if r.Mode == ModeBuild && l.State.Worker() == "" {
			l.leftInTree(ctx, r.IssueID, r.Iteration, r.RunID, r.DirtyAtStart) // treework.go
		}
		if r.Mode == ModeBuild {
			moved, err := sweepGuarded(r.GuardedAbsent, agent.GuardedAll(l.agentHome()).Paths, l.now())
			if err != nil {
				l.human().Error("could not move aside what the interrupted iteration made of the agent CLIs' configuration", "err", err)
			}
			for _, c := range moved {
				did = append(did, c)
				l.event(logjsonl.EventViolation, logjsonl.Violation{Iteration: r.Iteration, IssueID: r.IssueID, Mode: ModeBuild, Kind: "agent_config_changed", Detail: c})
				l.human().Warn("BUILD changed an agent CLI's configuration: put back", "change", c)
			}
		}
		if r.IssueID != "" {
			if msg := l.unclaimAfterCrash(ctx, r.IssueID); msg != "" {
				did = append(did, msg)
				resumeFound = append(resumeFound, msg)
			}
		}
	}
	if msg, sw, err := l.judgeInterrupted(ctx); err != nil {
		return "", nil, err
	} else if msg != "" {
		did = append(did, msg)
		resumeFound = append(resumeFound, msg)
		judged = append(judged, sw)
	}
	if r != nil {
		l.sweptResume(*r, gaveBack, resumeFound)
	}
	wdid, wjudged := l.sweepWorkers(ctx)
	did, judged = append(did, wdid...), append(judged, wjudged...)
	if l.State.Worker() == "" {
		if msg := l.chargeSinceFull(ctx, judged); msg != "" {
			did = append(did, msg)
		}
	}
	if l.State.Worker() == "" {
		// After every interrupted session was saved: what the dead runs
		// left in the CLIs' dirs is no longer needed.
		if n := l.pruneSessions(); n > 0 {
			did = append(did, fmt.Sprintf("removed the old agent session files of %s", text.Count(n, "issue")))
		}
	}
	if len(did) == 0 {
		return "", judged, nil
	}
	msg := "sweep: " + strings.Join(did, "; ")
	l.event(logjsonl.EventSweep, map[string]any{"summary": msg})
	l.human().Info(msg)
	return msg, judged, nil
}

// chargeSinceFull settles the windows a ralphd killed between full
// readings of the tracker left on the list (state.ReadWindowsFile): when
// the judgement of an interrupted window found forbidden changes, they
// may have been made out of sight of the readings of what changed in any
// window since the last full reading, so every window on the list is
// charged, as a full reading charges them (chargeWindows), beside the
// interrupted one the judgement charged. Killed with no window open
// (nothing judged), it compares a full reading with the reading the run
// kept (compareKept). The list and the reading kept go after.
func (l *Loop) chargeSinceFull(ctx context.Context, judged []sweptWindow) string {
	rw, err := l.State.ReadReadWindows()
	if err != nil {
		return err.Error()
	}
	issues, held, prevStart, err := l.State.ReadTrackerHeld()
	if err != nil {
		return err.Error()
	}
	if rw == nil && held == nil {
		return ""
	}
	if rw == nil {
		rw = &state.ReadWindows{}
	}
	found, seen := 0, map[int]bool{}
	for _, j := range judged {
		found += j.found
		if j.runID == rw.RunID {
			seen[j.iteration] = true
		}
	}
	var ws []readWindow
	var its []string
	for _, w := range rw.Windows {
		if !seen[w.Iteration] {
			ws = append(ws, readWindow{n: w.Iteration, issue: w.IssueID, started: w.StartedAt, done: true, closed: w.Closed})
			its = append(its, fmt.Sprintf("%d (%s)", w.Iteration, w.IssueID))
		}
	}
	msg := ""
	switch {
	case found > 0 && len(ws) > 0:
		detail := fmt.Sprintf("ralphd was killed between full reads of the tracker; the judgement of the interrupted window found %s, "+
			"which may have been made out of sight of the reads of what changed in any window since the last full read (%s): every iteration whose agent ran since is charged",
			text.Count(found, "forbidden change"), rw.LastFull.Format(time.RFC3339))
		l.chargeWindows(ctx, ws, detail)
		msg = "charged the forbidden changes it found to every iteration since the last full read of the tracker: " + strings.Join(its, ", ")
	case len(judged) == 0 && held != nil:
		var err error
		if msg, err = l.compareKept(ctx, issues, held, prevStart, rw, ws); err != nil {
			// The files stay: the next start compares again.
			return err.Error()
		}
	case len(judged) == 0 && len(rw.Windows) > 0:
		msg = "killed between full reads of the tracker with no window open and no reading of it kept: a change hidden from the reads of what changed since " +
			rw.LastFull.Format(time.RFC3339) + " cannot be told from the tracker now (docs/security.md)"
		l.human().Warn(msg)
	}
	if err := errors.Join(l.State.ClearReadWindows(), l.State.ClearTrackerHeld()); err != nil {
		return err.Error()
	}
	return msg
}

// compareKept is the start after a ralphd killed with no window open
// while reading the tracker incrementally: the run's reads are set up as
// the killed run left them (the reading held, from the state dir, when
// its last reading started, the writes of ralphd's and the agents'
// allowed ones since, the windows since the last full reading), and a
// full reading then compares itself with the reading held as it would
// have (trackerReads.read): a change hidden since the last full reading
// is found, reverted, logged and charged to every window on the list;
// ralphd's own writes since explain what they changed. The reads are
// then as a fresh start's.
func (l *Loop) compareKept(ctx context.Context, issues []beads.Issue, held *state.TrackerHeld, prevStart time.Time, rw *state.ReadWindows, ws []readWindow) (string, error) {
	r := l.reads()
	r.mu.Lock()
	decided, incremental := r.decided, r.incremental
	r.held, r.prevStart, r.lastFull, r.heldAt = guard.NewSnapshot(issues), prevStart, held.TakenAt, held.TakenAt
	r.decided, r.incremental, r.cheapSince = true, true, true
	r.mu.Unlock()
	r.wmu.Lock()
	r.windows = nil
	for i := range ws {
		r.windows = append(r.windows, &ws[i])
	}
	r.written = map[string]*rereadWhy{}
	for _, rr := range rw.Rereads {
		why := &rereadWhy{judged: rr.Judged}
		for _, w := range rr.Writes {
			bw := &beads.Write{Args: w.Args, Actor: w.Actor}
			if w.Agent {
				why.agent = append(why.agent, bw)
			} else {
				why.writes = append(why.writes, bw)
			}
		}
		r.written[rr.IssueID] = why
	}
	r.wmu.Unlock()
	before := r.hidden.Load()
	_, err := l.snapshotFull(ctx)
	found := r.hidden.Load() - before
	r.hidden.Store(before) // the sweep's, not the run's
	r.mu.Lock()
	r.held, r.decided, r.incremental, r.cheapSince = nil, decided, incremental, false
	r.mu.Unlock()
	r.wmu.Lock()
	r.windows, r.written, r.reopened = nil, nil, nil
	r.wmu.Unlock()
	if err != nil {
		return "", fmt.Errorf("compare the tracker with the reading a ralphd killed between full reads kept: %w", err)
	}
	if found == 0 {
		return "compared the tracker with the reading kept by the ralphd killed between full reads: no change hidden since " + held.TakenAt.Format(time.RFC3339), nil
	}
	var its []string
	for _, w := range ws {
		its = append(its, fmt.Sprintf("%d (%s)", w.n, w.issue))
	}
	who := "no iteration ran since"
	if len(its) > 0 {
		who = "charged to every iteration since: " + strings.Join(its, ", ")
	}
	return fmt.Sprintf("compared the tracker with the reading kept by the ralphd killed between full reads: reverted %s hidden since %s, %s",
		text.Count(int(found), "change"), held.TakenAt.Format(time.RFC3339), who), nil
}

// judgeInterrupted judges an iteration whose window never closed (ralphd
// died, or could not read the tracker after it): the tracker is diffed
// against the baseline persisted before its agent started, and forbidden
// changes are reverted as for a live iteration. The iteration's processes
// are already ended. Changes a person made since are indistinguishable
// from the agent's and are judged the same way (README, "Separation of
// powers").
func (l *Loop) judgeInterrupted(ctx context.Context) (string, sweptWindow, error) {
	b, err := l.State.ReadBaseline()
	if err != nil {
		return "", sweptWindow{}, fmt.Errorf("the interrupted iteration's baseline cannot be read, so its changes cannot be judged "+
			"(check the tracker by hand, then remove %s): %w", l.State.BaselinePath(), err)
	}
	if b == nil {
		return "", sweptWindow{}, nil
	}
	after, err := l.snapshotFullAfter(ctx)
	if err != nil {
		return "", sweptWindow{}, fmt.Errorf("judge interrupted iteration %d against its baseline: %w", b.Iteration, err)
	}
	before := guard.NewSnapshot(b.Issues)
	if !b.ExtraFields {
		keepExtraOf(before, after)
	}
	l.confirmCloseReasons(ctx, before, after)
	_, details := l.revertAgainst(ctx, before, after, b.Iteration, owner{issue: b.IssueID})
	if len(details) > 0 {
		if after, err = l.snapshotFresh(ctx); err != nil {
			return "", sweptWindow{}, fmt.Errorf("judge interrupted iteration %d against its baseline: %w", b.Iteration, err)
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
		return "", sweptWindow{}, err
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
	return msg, sweptWindow{runID: b.RunID, iteration: b.Iteration, found: len(details)}, nil
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

package modes

import (
	"context"
	"errors"
	"fmt"
	"github.com/ralphd/ralphd/internal/text"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

// ErrDirtyTree: BUILD will not start on a working tree with uncommitted
// changes it did not make (exit 2), unless allow_dirty is set.
var ErrDirtyTree = errors.New("the working tree has uncommitted changes")

// errRunTimeout is the cause of a run's context when run_timeout expires.
var errRunTimeout = errors.New("run timeout")

// withRunTimeout bounds the run by run_timeout. At 90% of it a soft
// warning is logged and a checkpoint recorded in history; at the limit the
// context is cancelled, which stops the agent the way SIGTERM does.
func (l *Loop) withRunTimeout(ctx context.Context, res *Result) (context.Context, func()) {
	d := l.Config.RunTimeout
	if d <= 0 {
		return ctx, func() {}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, d, errRunTimeout)
	// The checkpoint runs on the timer's goroutine: it only uses the
	// thread-safe log writer and history, captured now.
	logw, st, human := l.Log, l.State, l.human()
	soft := time.AfterFunc(d*9/10, func() {
		msg := fmt.Sprintf("90%% of the run timeout (%s) used; the run stops at the limit", d)
		human.Warn(msg)
		if logw != nil {
			_ = logw.Meta(logjsonl.EventDecision, logjsonl.Decision{Decision: "checkpoint", Reason: msg})
		}
		_ = st.AppendHistory(state.Record{Kind: state.KindCheckpoint, RunID: res.RunID, Mode: res.Mode, StartedAt: time.Now(), EndedAt: time.Now(), Outcome: string(OutcomeCheckpoint)})
	})
	return ctx, func() { soft.Stop(); cancel() }
}

// stopped turns a cancelled run into its stop: the run timeout is a cap
// (exit 3), anything else a signal.
func stopped(ctx context.Context, res *Result, reason string) error {
	if errors.Is(context.Cause(ctx), errRunTimeout) {
		return res.stop(StopTimeout, "the run timeout was reached; the running agent was stopped and its attempt given back", ErrCapReached)
	}
	return res.stop(StopInterrupted, reason, ErrInterrupted)
}

// checkClean refuses to start BUILD on a dirty tree unless allowed; with
// allow_dirty, failure branches are off for the run, since ralphd must
// never sweep changes it did not make into one.
//
// It checks once per Loop: later runs of the same Loop (the daemon's
// batches) find the tree as the agents left it, which is ralphd's own
// business. The single loop (goOn) also starts on a tree that holds
// exactly the work an interrupted iteration left, and works its issue
// first (treework.go).
func (l *Loop) checkClean(ctx context.Context, goOn bool) error {
	if l.treeChecked {
		return nil
	}
	changed, err := l.repo().Changed(ctx)
	if err != nil {
		return fmt.Errorf("check the working tree: %w", err)
	}
	if len(changed) == 0 {
		l.treeChecked = true
		return nil
	}
	if l.Config.AllowDirty {
		l.treeChecked = true
		l.dirtyAtStart = true
		l.human().Warn("the working tree had uncommitted changes at start; failure branches are off for this run", "files", len(changed))
		return nil
	}
	w, mismatch := l.treeWorkHolds(ctx)
	if w != nil && goOn {
		l.treeChecked, l.goOn, l.lastWorked = true, w, w.IssueID
		l.human().Info(fmt.Sprintf("the working tree holds the work of iteration %d on %s, interrupted at %s: the run goes on from it", w.Iteration, w.IssueID, w.At.Format(time.RFC3339)),
			"files", len(changed))
		return nil
	}
	shown := changed
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(changed)-5))
	}
	if w != nil {
		mismatch = fmt.Sprintf("it holds the work of iteration %d on %s, interrupted at %s, which one loop goes on from (`ralphd build` without --workers)", w.Iteration, w.IssueID, w.At.Format(time.RFC3339))
	}
	if mismatch != "" {
		mismatch = "; " + mismatch
	}
	return fmt.Errorf("%w (%s)%s: ralphd keeps a failed issue's work on a branch and restores the tree, so it starts BUILD only on a clean tree; commit or stash them, or pass --allow-dirty (failure branches are then off for the run)",
		ErrDirtyTree, strings.Join(shown, ", "), mismatch)
}

// branchSafe makes an issue id usable in a branch name.
var branchUnsafe = text.LazyRegexp(`[^A-Za-z0-9._-]+`)

// keepFailedWork commits the work done on an issue ralphd gave up on (or
// that the cap interrupted) to wip/ralph-fail-<issue>-<YYYYMMDD-HHMMSS>,
// and restores the working branch to where the issue's attempts began.
// It returns the branch name, or "" when there was no work to keep or
// failure branches are off.
func (l *Loop) keepFailedWork(ctx context.Context, id, why string) string {
	// Only the issue the last iteration worked on owns the tree's changes
	// and a current base; anything else could rewind other issues' work.
	if !l.Config.FailureBranches || l.dirtyAtStart || l.lastWorked != id {
		return ""
	}
	// Git work must finish even when the run is being stopped.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	r, err := l.record(id)
	if err != nil {
		l.human().Error("could not keep the failed work on a branch; the working tree is left as it is", "issue", id, "err", err)
		return ""
	}
	j := r.Judgement
	name := fmt.Sprintf("wip/ralph-fail-%s-%s", branchUnsafe.ReplaceAllString(id, "_"), l.now().Format("20060102-150405"))
	msg := fmt.Sprintf("ralphd: failed work on %s (%s)\n\nAttempts: %d\nLast gate: %s\nFingerprint: %s\nLast error: %s\nAttempt record: %s\n",
		id, why, j.Escalation.Attempts, j.LastGate, orNone(j.Escalation.LastFingerprint), orNone(j.LastError),
		l.State.AttemptRecordPath(id))
	name, err = l.repo().FreeBranchName(ctx, name)
	var sha string
	if err == nil {
		sha, err = l.repo().FailureBranch(ctx, name, msg, j.Base)
	}
	if err != nil {
		l.human().Error("could not keep the failed work on a branch; the working tree is left as it is", "issue", id, "err", err)
		return ""
	}
	if sha == "" {
		return ""
	}
	l.human().Warn("kept the failed work on a branch and restored the working tree", "issue", id, "branch", name)
	if l.Config.PushFailureBranches {
		// gitsafe: no pre-push or reference-transaction hook runs.
		if out, err := git.Output(ctx, l.Dir, "push", "-q", "origin", name); err != nil {
			l.human().Warn("could not push the failure branch", "branch", name, "err", err, "output", strings.TrimSpace(string(out)))
		}
	}
	return name
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

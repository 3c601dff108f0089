package modes

import (
	"context"
	"errors"
	"fmt"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// DaemonOptions tunes the daemon cycle. The batch sizes and the poll come
// from the Loop's Config.
type DaemonOptions struct {
	// NewLog, when set, opens the run log for one batch (a BUILD batch or a
	// PLANNING iteration), so a daemon that runs for weeks writes one file
	// per batch and retention applies.
	NewLog func(runID string) (*logjsonl.Writer, error)
	// Reload, when it receives, asks the daemon to re-read its
	// configuration and prompts before the next iteration (SIGHUP).
	Reload <-chan struct{}
	// ReloadFunc does the re-reading; an error keeps the old settings.
	ReloadFunc func(l *Loop) error
	// OnIdle, when set, is called each time the daemon goes idle (tests and
	// benchmarks use it).
	OnIdle func()
	// Hold, when set, is called before each pass and before each
	// iteration, and returns once the daemon may go on (the dashboard's
	// pause); an error before a pass stops the daemon.
	Hold func(ctx context.Context) error
	// Paused, when set, reports without waiting whether the daemon is
	// paused: a pause that came while the next issue was being picked
	// holds the daemon before that agent starts, not after it.
	Paused func() bool
	// Wake, when it receives, ends an idle wait at once (the dashboard
	// reset an issue).
	Wake <-chan struct{}
}

// Daemon alternates PLANNING and BUILD until ctx ends, and sleeps on
// .beads/ changes while there is nothing to do. A signal (ctx cancelled)
// stops it cleanly: the running iteration's agent is stopped and the
// iteration recorded as interrupted; Daemon then returns nil.
//
// Each pass decides one thing, in this order, and logs why:
//   - plan, when an issue became stuck since the last plan, when plan_every
//     BUILD iterations ran since the last plan, or when nothing is ready
//     while open issues remain and the graph changed since the last plan;
//   - build, at most build_batch iterations, while ready work is not stuck;
//   - otherwise idle until bd's data really changes (or the poll fires).
//
// A setup error that no waiting can fix (no beads database, bd missing, a
// dirty tree, a missing or mistyped agent command) ends Daemon with that
// error, as it ends build and plan. What can clear by itself is waited
// out: bd trouble of another kind after a poll interval, and an agent that
// is logged out or out of credit with exponential backoff, up to
// quota_backoff_max, saying why in its status.
func (l *Loop) Daemon(ctx context.Context, opts DaemonOptions) error {
	d := &daemon{Loop: l, opts: opts, unusable: backoff{max: l.Config.QuotaBackoffMax}}
	d.runs = runOpts{
		batch: true,
		beforeIteration: func() {
			d.applyReload()
			if opts.Hold != nil {
				_ = opts.Hold(ctx) // a cancelled ctx stops the iteration anyway
			}
		},
		paused: opts.Paused,
		hold:   opts.Hold,
	}
	l.fleet = newFleet(l)
	l.daemonReads = true
	defer func() { l.fleet.close(); l.fleet, l.daemonReads = nil, false }()
	return d.run(ctx)
}

type daemon struct {
	*Loop
	opts DaemonOptions
	runs runOpts // what its batches run with

	planFP          string // .beads/ fingerprint after the last plan
	stuckSincePlan  int
	heldSincePlan   int // issues BUILD held back since the last plan (ErrHeldBack)
	buildsSincePlan int
	unusable        backoff
	reloadRequested bool
	spent           float64 // agent cost since the daemon started (or since a reload)
	idleSaid        string  // the reason last printed for idling, so a server-mode poll does not repeat it
}

func (d *daemon) run(ctx context.Context) error {
	for ctx.Err() == nil {
		if d.opts.Hold != nil && d.opts.Hold(ctx) != nil {
			break
		}
		d.applyReload()
		if d.Config.MaxCostUSD > 0 && d.spent >= d.Config.MaxCostUSD {
			// The cost cap pauses the daemon until a reload (SIGHUP) or a
			// restart; it never spends past it.
			msg := fmt.Sprintf("paused: the agent cost reached the cap of $%.2f ($%.4f spent); raise max_cost_usd and send SIGHUP, or restart", d.Config.MaxCostUSD, d.spent)
			d.human().Warn(msg)
			d.status("%s", msg)
			if err := d.waitReload(ctx); err != nil {
				break
			}
			continue
		}
		if d.fleet != nil {
			if err := d.fleet.setup(ctx); err != nil {
				if ctx.Err() != nil {
					break
				}
				d.human().Error("cannot set up fleet planning; retrying", "err", err, "in", d.Config.Poll)
				d.status("error: %v", err)
				if d.sleep(ctx, d.Config.Poll) != nil {
					break
				}
				continue
			}
		}
		act, why, fp, err := d.decide(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if setupError(err) {
				return err
			}
			// bd trouble is not fatal for a daemon: say so and look again
			// after a poll interval.
			d.human().Error("cannot read the tracker; retrying", "err", err, "in", d.Config.Poll)
			d.status("error: %v", err)
			if d.sleep(ctx, d.Config.Poll) != nil {
				break
			}
			continue
		}
		d.event(logjsonl.EventDecision, logjsonl.Decision{Decision: act, Reason: why})
		if act != "idle" {
			d.idleSaid = ""
		}
		switch act {
		case "plan":
			var waited bool
			if waited, err = d.plan(ctx, why); waited {
				continue
			}
			d.stuckSincePlan, d.heldSincePlan, d.buildsSincePlan = 0, 0, 0
			d.planFP, _ = Fingerprint(d.beadsDir())
		case "build":
			var waited bool
			if waited, err = d.build(ctx, why); waited {
				continue
			}
		default:
			if why != d.idleSaid {
				d.human().Info("idle: " + why)
			}
			d.idleSaid = why
			d.status("idle: %s", why)
			err = d.idle(ctx, fp)
		}
		if err != nil && ctx.Err() == nil {
			if setupError(err) {
				return err
			}
			if errors.Is(err, ErrAgentUnusable) {
				if werr := d.waitUnusable(ctx, err); werr != nil {
					break
				}
				if d.Rota != nil {
					d.Rota.Readmit() // the fix may have been to any of them
				}
				continue
			}
			d.human().Error("batch failed; looking again", "err", err)
			if d.sleep(ctx, d.Config.Poll) != nil {
				break
			}
		}
	}
	return nil
}

// plan runs one PLANNING iteration. In a fleet it first takes the planner
// lease and waits for the other daemons' BUILD windows to close; waited
// says another daemon held the lease and this one waited it out instead,
// so the daemon decides afresh.
func (d *daemon) plan(ctx context.Context, why string) (waited bool, err error) {
	run := func(ctx context.Context) (*Result, error) { return d.planRun(ctx, 1, d.runs) }
	f := d.fleet
	if f == nil {
		d.human().Info("planning: " + why)
		return false, d.batch(ctx, run)
	}
	ran := false
	other, err := f.plan(ctx, func(ctx context.Context) error {
		ran = true
		d.human().Info("planning: "+why, "lease", f.lease)
		d.status("fleet: planning (lease %s)", f.lease)
		return d.batch(ctx, run)
	})
	if !ran {
		return true, d.fleetWait(ctx, other, err)
	}
	return false, err
}

// build runs one BUILD batch. In a fleet it first raises this clone's
// member flag; waited says another daemon plans and this one waited it out
// instead. The batch drains when another daemon claims the lease.
func (d *daemon) build(ctx context.Context, why string) (waited bool, err error) {
	runs := d.runs
	f := d.fleet
	if f != nil {
		planner, err := f.startBuilding(ctx)
		if err != nil || planner != "" {
			return true, d.fleetWait(ctx, planner, err)
		}
		defer f.stopBuilding(ctx)
		yield, stop := f.watchBuilding(ctx)
		defer stop()
		runs.yield = yield
	}
	d.human().Info("building: " + why)
	return false, d.batch(ctx, func(ctx context.Context) (*Result, error) {
		return d.buildRun(ctx, d.Config.BuildBatch, d.Config.Workers, runs)
	})
}

// fleetWait waits for the other planner to release the lease, or a poll
// after bd trouble with the fleet's issues.
func (d *daemon) fleetWait(ctx context.Context, planner string, err error) error {
	if err == nil {
		return d.fleet.waitLease(ctx, planner)
	}
	d.human().Error("fleet planning: cannot read or claim the fleet's issues; retrying", "err", err, "in", d.Config.Poll)
	d.status("error: %v", err)
	return d.sleep(ctx, d.Config.Poll)
}

// remaining says how many issues remain: "1 issue remains", "2 issues
// remain".
func remaining(n int) string {
	if n == 1 {
		return "1 issue remains"
	}
	return text.Count(n, "issue") + " remain"
}

// setupError reports whether err is one that no amount of waiting can fix,
// so the daemon ends with it (exit 2 or 5) rather than retry forever.
func setupError(err error) bool {
	switch {
	case errors.Is(err, ErrAgentUnusable):
		return !errors.Is(err, ErrAgentRecoverable)
	case errors.Is(err, beads.ErrNotInitialized), errors.Is(err, beads.ErrNotInstalled), errors.Is(err, ErrDirtyTree), errors.Is(err, ErrTrackerChanged):
		return true
	}
	return false
}

// decide returns what to do next and why, and the .beads/ fingerprint it
// decided on. It costs two bd calls, and a reading of the tracker when an
// epic is ready (whether it waits on its children, epics.go).
func (d *daemon) decide(ctx context.Context) (act, why, fp string, err error) {
	// The fingerprint comes first: a change made while bd is read then
	// differs from it, and wakes idle at once.
	fp, _ = Fingerprint(d.beadsDir())
	ready, err := d.BD.Ready(ctx, beads.ReadyOptions{Parent: d.Config.Scope})
	if err != nil {
		return "", "", "", fmt.Errorf("list ready work: %w", err)
	}
	workable, others := 0, 0
	epics := epicWaits{l: d.Loop}
	for _, is := range ready {
		if is.HasLabel(StuckLabel) {
			continue
		}
		if d.passedOver(is, d.Config.Workers) { // someone else's (claimsleft.go)
			others++
			continue
		}
		// An epic waiting on its children is not work a BUILD run takes:
		// counted, it would start zero-iteration batches without end.
		kids, err := epics.of(ctx, is)
		if err != nil {
			return "", "", "", err
		}
		if len(kids) == 0 {
			workable++
		}
	}
	st, err := d.BD.Stats(ctx)
	if err != nil {
		return "", "", "", fmt.Errorf("read stats: %w", err)
	}
	st = d.fleet.uncount(st) // the fleet's own issues are not work
	switch {
	case d.stuckSincePlan > 0:
		return "plan", fmt.Sprintf("%s stuck since the last plan", text.Count(d.stuckSincePlan, "issue")), fp, nil
	case d.heldSincePlan > 0:
		return "plan", fmt.Sprintf("%s held back by BUILD since the last plan", text.Count(d.heldSincePlan, "issue")), fp, nil
	case d.Config.PlanEvery > 0 && d.buildsSincePlan >= d.Config.PlanEvery:
		return "plan", fmt.Sprintf("%s since the last plan (plan_every %d)", text.Count(d.buildsSincePlan, "BUILD iteration"), d.Config.PlanEvery), fp, nil
	case workable == 0 && st.Open+st.InProgress > 0 && fp != d.planFP:
		return "plan", fmt.Sprintf("nothing ready while %s open and the graph changed since the last plan", remaining(st.Open+st.InProgress)), fp, nil
	case workable > 0:
		return "build", text.Count(workable, "ready issue"), fp, nil
	}
	why = fmt.Sprintf("%d ready, %d blocked, %d open", workable, st.Blocked, st.Open)
	if others > 0 {
		why += fmt.Sprintf("; %d ready but assigned to someone else", others)
	}
	return "idle", why, fp, nil
}

// batch runs one BUILD batch or PLANNING iteration with its own log and
// run id (so each batch has its own report).
func (d *daemon) batch(ctx context.Context, run func(context.Context) (*Result, error)) error {
	d.RunID = state.NewRunID(d.now())
	if d.opts.NewLog != nil {
		w, err := d.opts.NewLog(d.RunID)
		if err != nil {
			d.human().Warn("cannot open a run log; going on without", "err", err)
		} else {
			d.Log = w
			defer func() { _ = w.Close(); d.Log = nil }()
		}
	}
	res, err := run(ctx)
	if res != nil {
		if res.CostUSD != nil {
			d.spent += *res.CostUSD
		}
		d.stuckSincePlan += len(res.Stuck)
		d.heldSincePlan += len(res.Held)
		if res.Mode == ModeBuild {
			d.buildsSincePlan += res.Iterations
		}
	}
	switch {
	case err == nil, errors.Is(err, ErrCapReached), errors.Is(err, ErrHeldBack):
		// A full batch is the normal end of a BUILD batch.
		if errors.Is(err, ErrCapReached) && res != nil && res.Stop == StopBudget {
			return err
		}
		d.unusable.reset()
		return nil
	case errors.Is(err, ErrInterrupted):
		return nil
	}
	return err
}

// idle waits until bd's data differs from fp, the fingerprint decide saw:
// a change made since then wakes it at once. It makes no bd call. In bd's
// server mode it waits one poll at most, since .beads/ does not show what
// other clones write.
func (d *daemon) idle(ctx context.Context, fp string) error {
	if d.opts.OnIdle != nil {
		d.opts.OnIdle()
	}
	wctx := ctx
	if beads.ServerMode(d.beadsDir(), d.environ()) {
		// Other clones write to the Dolt server without touching this
		// clone's .beads/: look at the tracker again every poll.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, d.Config.Poll)
		defer cancel()
	}
	if d.opts.Reload != nil || d.opts.Wake != nil {
		var cancel context.CancelFunc
		wctx, cancel = context.WithCancel(wctx)
		defer cancel()
		go func() {
			select {
			case <-d.opts.Reload:
				d.reloadRequested = true
				cancel()
			case <-d.opts.Wake:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	w := &Waiter{Dir: d.beadsDir(), Poll: d.Config.Poll}
	_, err := w.Wait(wctx, fp)
	if ctx.Err() == nil && wctx.Err() != nil {
		return nil // woken to reload, or a server-mode poll is up
	}
	return err
}

// waitUnusable waits before trying an unusable agent again.
func (d *daemon) waitUnusable(ctx context.Context, cause error) error {
	wait := d.unusable.step()
	d.human().Error("agent unusable; waiting before trying again", "err", cause, "for", wait)
	d.status("waiting %s: %v", wait, cause)
	return d.sleep(ctx, wait)
}

// applyReload re-reads configuration and prompts when asked to.
func (d *daemon) applyReload() {
	if !d.reloadRequested {
		select {
		case <-d.opts.Reload:
		default:
			return
		}
	}
	d.reloadRequested = false
	d.spent = 0 // a reload is how a person raises the cap
	if d.opts.ReloadFunc == nil {
		return
	}
	if err := d.opts.ReloadFunc(d.Loop); err != nil {
		d.human().Error("reload failed; keeping the old configuration", "err", err)
		return
	}
	d.human().Info("reloaded configuration and prompts")
}

// waitReload blocks until a reload is requested or ctx ends.
func (d *daemon) waitReload(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-d.opts.Reload:
		d.reloadRequested = true
		return nil
	}
}

package modes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
	"github.com/ralphd/ralphd/prompts"
)

// Plan runs up to maxIter PLANNING iterations with full powers over bd. It
// ends early when the agent's final result ends with PlanPromise. On a
// tracker daemons share (fleet planning, fleet.go) it plans as they do:
// it takes the planner lease, waits for their BUILD windows to drain,
// renews the lease while it plans and gives it back; while another
// ralphd holds the lease it plans nothing and returns ErrFleetPlanning.
func (l *Loop) Plan(ctx context.Context, maxIter int) (*Result, error) {
	f := newFleet(l)
	if f == nil {
		return l.planRun(ctx, maxIter, runOpts{})
	}
	if err := f.setup(ctx); err != nil {
		return nil, err
	}
	l.fleet = f
	defer func() { f.close(); l.fleet = nil }()
	var res *Result
	other, err := f.plan(ctx, func(ctx context.Context) error {
		l.human().Info("fleet: planning under the planner lease", "lease", f.lease)
		var err error
		res, err = l.planRun(ctx, maxIter, runOpts{})
		return err
	})
	if other != "" {
		return nil, fmt.Errorf("%w: %s holds the planner lease %s", ErrFleetPlanning, describeActor(other), f.lease)
	}
	return res, err
}

// ErrFleetPlanning is `ralphd plan` on a tracker daemons share while
// another ralphd holds the planner lease: it plans nothing.
var ErrFleetPlanning = errors.New("another ralphd sharing this tracker is planning")

// describeActor names a ralphd actor's host and clone,
// ralphd/<host>/<clone>/<role>; any other actor as it is.
func describeActor(actor string) string {
	parts := strings.Split(actor, "/")
	if len(parts) != 4 || parts[0] != "ralphd" {
		return fmt.Sprintf("%q", actor)
	}
	return fmt.Sprintf("the ralphd of clone %s on host %s (%s)", parts[2], parts[1], actor)
}

// planRun is a PLANNING run, as o says.
func (l *Loop) planRun(ctx context.Context, maxIter int, o runOpts) (*Result, error) {
	return l.runMode(ctx, ModePlan, maxIter, func(ctx context.Context, res *Result) error {
		return l.plan(ctx, res, maxIter, o)
	})
}

func (l *Loop) plan(ctx context.Context, res *Result, maxIter int, o runOpts) error {
	quota := backoff{max: l.Config.QuotaBackoffMax}
	for maxIter <= 0 || res.Iterations < maxIter {
		if stop, err := l.mayContinue(ctx, res, o); stop {
			return err
		}
		it, done, err := l.planIteration(ctx, res)
		if stop, err := l.afterIteration(ctx, res, it, err, &quota); stop {
			return err
		}
		if it.rateLimited {
			continue
		}
		if done {
			return res.stop(StopSuccess, "planning complete: the planner ended with "+PlanPromise, nil)
		}
	}
	return res.stop(StopMaxIterations, "ran "+text.Count(res.Iterations, "planning iteration"), nil)
}

// planIteration runs the planner once and records what it changed. done
// reports the completion promise.
func (l *Loop) planIteration(ctx context.Context, res *Result) (it iteration, done bool, err error) {
	before, err := l.snapshotFull(ctx)
	if err != nil {
		return iteration{reason: "could not snapshot the tracker"}, false, err
	}
	res.Iterations++
	iter := res.Iterations
	started := l.now()
	prompt, err := l.Prompts.Plan(prompts.PlanData{Scope: l.Config.Scope, Stuck: stuckIDs(before)})
	if err != nil {
		return iteration{reason: "the PLANNING prompt does not render"}, false, err
	}
	l.event(logjsonl.EventIterationStart, logjsonl.IterationStart{Iteration: iter, Mode: ModePlan, Agent: l.Backend.Name(), Model: l.agentModel()})
	l.human().Info(fmt.Sprintf("planning iteration %d", iter), l.agentKV()...)
	l.status("plan iteration %d", iter)

	out, calls, err := l.runAgent(ctx, agentRun{mode: ModePlan, iteration: iter, prompt: prompt, budget: l.remainingBudget(res)})
	if err != nil {
		_ = l.State.ClearRunning()
		return iteration{reason: "the agent could not be started"}, false, err
	}
	res.addCost(out)
	rec := state.Record{
		RunID: res.RunID, Mode: ModePlan, Iteration: iter, StartedAt: started, ExitCode: out.ExitCode,
		CostUSD: out.CostUSD, Tokens: out.Usage, Agent: l.Backend.Name(), Model: l.agentModel(),
		SessionID: out.SessionID, Turns: out.Turns, ToolCalls: out.ToolCalls, Outcome: string(out.Status),
		BDCalls: calls,
	}
	switch out.Status {
	case agent.StatusRateLimited:
		res.Iterations--
		l.endIteration(res, rec, out, false)
		return iteration{rateLimited: true, resetAt: out.ResetAt, resetRounded: out.ResetRounded, reason: out.Reason}, false, nil
	case agent.StatusFatal:
		res.Iterations-- // the agent never got to work
		l.endIteration(res, rec, out, false)
		return iteration{reason: out.Reason}, false, agentUnusable(out)
	case agent.StatusInterrupted:
		l.endIteration(res, rec, out, false)
		return iteration{reason: out.Reason}, false, ErrInterrupted
	}

	after, err := l.snapshotFull(ctx)
	if err != nil {
		return iteration{reason: "could not snapshot the tracker"}, false, err
	}
	ch := DiffPlan(before, after)
	l.event(logjsonl.EventPlanChanges, ch)
	if len(ch.StuckCleared) > 0 {
		// The planner reviewed these: they start over with fresh attempts.
		if _, err := l.State.Reset(ch.StuckCleared...); err != nil {
			return iteration{reason: "could not reset the attempt records"}, false, err
		}
	}
	if s := ch.Summary(); s != "" {
		l.human().Info("planner changed the graph: " + s)
	}
	l.endIteration(res, rec, out, false)
	return iteration{}, out.Status == agent.StatusOK && EndsWithPromise(out.ResultText, PlanPromise), nil
}

// EndsWithPromise reports whether the agent's final result text ends with
// the promise (surrounding white space aside). Matching only the end of
// the final result keeps a promise quoted from the prompt, or echoed in the
// middle of a message, from ending the loop.
func EndsWithPromise(result, promise string) bool {
	return strings.HasSuffix(strings.TrimSpace(result), promise)
}

func stuckIDs(s guard.Snapshot) []string {
	var ids []string
	for id, is := range s {
		if is.HasLabel(StuckLabel) && is.Status != beads.StatusClosed {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// PlanChanges is what a PLANNING iteration changed in the graph.
type PlanChanges struct {
	Created       []string `json:"created,omitempty"`
	Closed        []string `json:"closed,omitempty"`
	Deleted       []string `json:"deleted,omitempty"`
	Reprioritised []string `json:"reprioritised,omitempty"`
	DepsAdded     []string `json:"deps_added,omitempty"`   // "a->b"
	DepsRemoved   []string `json:"deps_removed,omitempty"` // "a->b"
	StuckCleared  []string `json:"stuck_cleared,omitempty"`
}

// DiffPlan compares two snapshots taken around a PLANNING iteration.
func DiffPlan(before, after guard.Snapshot) PlanChanges {
	var c PlanChanges
	for id, a := range after {
		b, ok := before[id]
		if !ok {
			c.Created = append(c.Created, id)
			for _, d := range a.Dependencies {
				c.DepsAdded = append(c.DepsAdded, id+"->"+d.DependsOnID)
			}
			continue
		}
		if a.Status == beads.StatusClosed && b.Status != beads.StatusClosed {
			c.Closed = append(c.Closed, id)
		}
		if a.Priority != b.Priority {
			c.Reprioritised = append(c.Reprioritised, fmt.Sprintf("%s:P%d->P%d", id, b.Priority, a.Priority))
		}
		if b.HasLabel(StuckLabel) && !a.HasLabel(StuckLabel) {
			c.StuckCleared = append(c.StuckCleared, id)
		}
		for _, d := range a.Dependencies {
			if !b.DependsOn(d) {
				c.DepsAdded = append(c.DepsAdded, id+"->"+d.DependsOnID)
			}
		}
		for _, d := range b.Dependencies {
			if !a.DependsOn(d) {
				c.DepsRemoved = append(c.DepsRemoved, id+"->"+d.DependsOnID)
			}
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			c.Deleted = append(c.Deleted, id)
		}
	}
	for _, s := range []*[]string{&c.Created, &c.Closed, &c.Deleted, &c.Reprioritised, &c.DepsAdded, &c.DepsRemoved, &c.StuckCleared} {
		sort.Strings(*s)
	}
	return c
}

// Summary is a one-line description of the changes ("" when none).
func (c PlanChanges) Summary() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(len(c.Created), "created")
	add(len(c.Closed), "closed")
	add(len(c.Deleted), "deleted")
	add(len(c.Reprioritised), "re-prioritised")
	add(len(c.DepsAdded), "dependencies added")
	add(len(c.DepsRemoved), "dependencies removed")
	add(len(c.StuckCleared), "stuck labels cleared")
	return strings.Join(parts, ", ")
}

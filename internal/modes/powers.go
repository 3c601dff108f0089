package modes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/text"
)

// BUILD's powers over other issues, and the run's account of them (issue
// 30). The guard and the tamper diff keep a BUILD iteration's status,
// assignee and claim changes to its own issue and the issues BUILD made
// in this run (guard.Powers, guard.Options.Own). What BUILD may do, it
// may still do to hold work back: make ready issues depend on a blocker it
// made and never finishes, or set its own issue blocked. So a run
// remembers what was ready when it began and what each iteration changed,
// and when the queue runs dry it does not call the work complete while an
// issue that was ready is unworked because of such a change: it names
// them and the change, notes it on each for PLANNING, and stops with
// ErrHeldBack (exit 6; the daemon plans next). And every issue BUILD
// creates is counted, marked with MadeByBuildLabel and a note, and capped
// per iteration (max_creates).

// MadeByBuildLabel marks an issue a BUILD iteration created; ralphd adds
// it, with a note naming the iteration and the run.
const MadeByBuildLabel = "ralph:made-by-build"

// StopHeldBack: the queue ran dry, but issues ready when the run began
// are unworked because of changes BUILD made.
const StopHeldBack StopReason = "held_back"

// ErrHeldBack is the run's error for StopHeldBack.
var ErrHeldBack = errors.New("ready work held back by BUILD's changes")

// maxMarks bounds the creations one judgement marks one by one (two bd
// calls each): a flood made around the guard is counted in full, and
// marked only this far.
const maxMarks = 100

// buildLedger is one run's account of BUILD's creations and changes. It
// is shared by the run's workers.
type buildLedger struct {
	mu      sync.Mutex
	made    map[string]int // issue → the iteration that created it
	changes []heldChange   // in the order judgements found them
	// start is the tracker when the run began, and startReady what was
	// ready then (nil: unknown, no account is kept).
	start      guard.Snapshot
	startReady []string
}

// heldChange is one change an iteration made that can keep an issue out
// of `bd ready`: a status it set, or a dependency it added.
type heldChange struct {
	iteration int
	issue     string
	status    string // the status set, or "" for a dependency
	dep       string // the issue depended on
}

// ledger returns the run's build ledger, making it on first use. A
// worker's iteration gets its run's when it starts (workerIteration).
func (r *Result) ledger() *buildLedger {
	r.ledgerOnce.Do(func() {
		if r.built == nil { // a worker's iteration shares its run's
			r.built = &buildLedger{made: map[string]int{}}
		}
	})
	return r.built
}

// made reports whether BUILD created id in this run.
func (b *buildLedger) isMade(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.made[id]
	return ok
}

// noteRunStart records what was ready when the run began, for heldBack.
// Without it (bd failed) the run keeps no account, and says so.
func (l *Loop) noteRunStart(ctx context.Context, res *Result) {
	// The reading the ready answer is read at is the run's start when the
	// run took it (this Loop had none); a reading a daemon's earlier batch
	// left is read afresh.
	first := l.snap.snap == nil
	ready, err := l.readyWork(ctx) // the first iteration's pick reuses it
	var snap guard.Snapshot
	switch {
	case err != nil:
	case first && l.lastReady.at != nil:
		snap = l.lastReady.at
	default:
		snap, err = l.snapshotFresh(ctx)
	}
	if err != nil {
		l.human().Warn("could not read the tracker at the start; this run cannot tell work BUILD held back", "err", err)
		return
	}
	b := res.ledger()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.start = snap
	for _, is := range ready {
		if !is.HasLabel(StuckLabel) {
			b.startReady = append(b.startReady, is.ID)
		}
	}
}

// powersFor is the guard's powers for a BUILD iteration on is, against
// the baseline before.
func (l *Loop) powersFor(res *Result, is beads.Issue, before guard.Snapshot) *guard.Powers {
	return &guard.Powers{Own: is.ID, OwnPriority: is.Priority, Before: before, Made: res.ledger().isMade,
		MaxCreates: l.Config.MaxCreates}
}

// owner is whose changes a judgement judges: the iteration's issue, and
// the issues BUILD made in this run ("" and nil: no iteration's).
type owner struct {
	issue string
	made  func(string) bool
}

// workingOn returns the issues the pool's workers are on now.
func (p *Pool) workingOn() []string {
	p.workingMu.Lock()
	defer p.workingMu.Unlock()
	ids := make([]string, 0, len(p.working))
	for id := range p.working {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// poolMoved reports whether the pool's own work explains a status or
// assignee change of another issue that a worker's judgement found: a
// worker's claim (in progress, with a worker's actor), one being worked
// (its own worker's judgement judges it), or an unclaim after an
// iteration (open and unassigned, no worker on it). On a tracker other
// clones share (server mode), another ralphd's worker's claim or close
// (its actor) is that ralphd's to judge. Anything else is an agent's.
func (p *Pool) poolMoved(v guard.Violation, after guard.Snapshot, shared bool) bool {
	if p == nil || (v.Kind != guard.OtherStatus && v.Kind != guard.OtherAssignee) {
		return false
	}
	a := after[v.IssueID]
	p.workingMu.Lock()
	worker, working := p.working[v.IssueID]
	p.workingMu.Unlock()
	switch {
	case working:
		return a.Assignee == worker
	case shared && strings.HasPrefix(a.Assignee, workerActorPrefix) && !strings.HasPrefix(a.Assignee, p.actorPrefix):
		return a.Status == beads.StatusInProgress || a.Status == beads.StatusClosed
	case a.Status == beads.StatusInProgress:
		return strings.HasPrefix(a.Assignee, p.actorPrefix)
	default:
		return a.Status == beads.StatusOpen && a.Assignee == ""
	}
}

// workerActorPrefix starts every ralphd worker's bd actor (WorkerActor).
const workerActorPrefix = "ralphd/"

// accountIteration records what a judged iteration made and changed: the
// issues created in its window are counted, marked and logged (over the
// cap, made around the guard, they are a violation), and the statuses it
// set and dependencies it added go into the run's ledger. after is the
// tracker with the forbidden changes reverted. It returns the violations
// it found.
func (l *Loop) accountIteration(ctx context.Context, res *Result, it *buildIter, after guard.Snapshot) []string {
	b := res.ledger()
	own := credit{n: it.n, issue: it.issue.ID}
	made := map[credit][]string{} // by the iteration each is charged to
	b.mu.Lock()
	for _, id := range guard.Created(it.before, after) {
		if l.fleet.owns(id, it.before, after) {
			continue // a daemon joining the fleet
		}
		if _, seen := b.made[id]; !seen { // workers: a shared baseline may show it twice
			c := l.creditFor(after[id].CreatedBy, it)
			b.made[id] = c.n
			made[c] = append(made[c], id)
		}
	}
	for _, a := range after.Issues() {
		id, bf := a.ID, it.before[a.ID]
		if l.fleet.owns(id, it.before, after) {
			continue
		}
		// Another issue's status change is reverted (or the pool's own).
		mine := id == it.issue.ID || b.made[id] > 0
		if mine && a.Status != bf.Status && a.Status != beads.StatusOpen && a.Status != beads.StatusClosed {
			b.changes = append(b.changes, heldChange{iteration: it.n, issue: id, status: a.Status})
		}
		for _, d := range a.Dependencies {
			if !bf.DependsOn(d) {
				b.changes = append(b.changes, heldChange{iteration: l.creditFor(d.CreatedBy, it).n, issue: id, dep: d.DependsOnID})
			}
		}
	}
	b.mu.Unlock()
	if len(made) == 0 {
		return nil
	}
	for _, c := range slices.SortedFunc(maps.Keys(made), func(x, y credit) int { return x.n - y.n }) {
		l.markMade(ctx, res, c, made[c])
	}
	created := made[own]
	it.rec.Created = created
	if c := l.Config.MaxCreates; c > 0 && len(created) > c {
		detail := fmt.Sprintf("%s created %s in one iteration, over the cap of %d (max_creates); the guard refuses more, so they were made around it",
			it.issue.ID, text.Count(len(created), "issue"), c)
		l.event(logjsonl.EventViolation, logjsonl.Violation{Iteration: it.n, IssueID: it.issue.ID, Mode: ModeBuild, Kind: "create_cap_exceeded", Detail: detail})
		l.human().Warn("BUILD created more issues than max_creates", "issue", it.issue.ID, "count", len(created))
		return []string{detail}
	}
	return nil
}

// markMade counts, labels, notes and logs the issues iteration c created.
func (l *Loop) markMade(ctx context.Context, res *Result, c credit, created []string) {
	res.Created = append(res.Created, created...)
	for i, id := range created {
		if i == maxMarks {
			l.human().Warn("too many issues to mark one by one", "marked", maxMarks, "unmarked", len(created)-maxMarks)
			break
		}
		if err := l.BD.LabelAdd(ctx, id, MadeByBuildLabel); err != nil {
			l.human().Warn("could not label an issue BUILD made", "issue", id, "err", err)
		}
		note := fmt.Sprintf("ralphd: created by BUILD iteration %d of run %s, while working on %s", c.n, res.RunID, c.issue)
		if _, err := l.BD.AppendNotes(ctx, id, note); err != nil {
			l.human().Warn("could not note an issue BUILD made", "issue", id, "err", err)
		}
	}
	l.snap.invalidate()
	l.event(logjsonl.EventCreated, logjsonl.Created{Iteration: c.n, IssueID: c.issue, Count: len(created),
		Cap: l.Config.MaxCreates, IDs: firstN(created, 20)})
	l.human().Info("BUILD created issues", "issue", c.issue, "count", len(created), "ids", strings.Join(firstN(created, 5), ","))
}

// firstN returns at most n of ids.
func firstN(ids []string, n int) []string {
	if len(ids) > n {
		return ids[:n]
	}
	return ids
}

// queueEmpty ends a BUILD run whose queue ran dry: with success, or, when
// issues ready at the start are unworked because of BUILD's changes, with
// ErrHeldBack, naming them and the changes and noting each for PLANNING.
//
// "All work complete or blocked" is decided on a full reading of the
// tracker (trackread.go): when it finds changes the readings of what
// changed missed, it reverts them and returns errHiddenFound, and the
// run goes on. Before that reading bd confirms which tracker it opens
// (confirmPin): the windows' ends ask it only boundedly.
func (l *Loop) queueEmpty(ctx context.Context, res *Result) error {
	if err := l.confirmPin(ctx); err != nil {
		return res.stop(StopError, "the tracker bd opens changed", err)
	}
	incremental := l.reads().pending()
	seen := l.reads().hidden.Load()
	now, err := l.snapshotFull(ctx)
	if err != nil {
		if incremental {
			return res.stop(StopError, "could not make the full reading of the tracker that decides the run is done", err)
		}
		return res.stop(StopSuccess, l.emptyQueueReason(ctx, nil, res.elsewhere), nil)
	}
	if l.reads().hidden.Load() > seen {
		return errHiddenFound
	}
	held := res.ledger().heldBack(now, res.Skipped)
	if len(held) == 0 {
		return res.stop(StopSuccess, l.emptyQueueReason(ctx, now, res.elsewhere), nil)
	}
	return l.stopHeld(ctx, res, held)
}

// stopHeld ends a run whose ready work BUILD held back: each issue gets a
// note for PLANNING, and the run exit 6.
func (l *Loop) stopHeld(ctx context.Context, res *Result, held []heldIssue) error {
	var ids, whys []string
	for _, h := range held {
		ids = append(ids, h.id)
		whys = append(whys, h.why)
		note := fmt.Sprintf("ralphd: ready when run %s started, but held back by BUILD: %s. PLANNING will review it.", res.RunID, h.why)
		if _, err := l.BD.AppendNotes(ctx, h.id, note); err != nil {
			l.human().Warn("could not note held-back work", "issue", h.id, "err", err)
		}
	}
	l.snap.invalidate()
	res.Held = ids
	return res.stop(StopHeldBack, fmt.Sprintf("no ready work left, but %s held back by BUILD: %s; %s. PLANNING reviews them",
		text.Count(len(ids), "issue"), strings.Join(ids, ", "), strings.Join(whys, "; ")), ErrHeldBack)
}

// heldIssue is one issue BUILD held back, and why.
type heldIssue struct{ id, why string }

// heldBack returns the issues that were ready when the run began and are
// now neither closed, nor ready, nor given up on (stuck, skipped), with
// the changes of this run's iterations that keep them out of `bd ready`:
// a status an iteration set that they still have, or a dependency one
// added on an issue still not closed; or out of the work ralphd takes: an
// epic waiting on a child one created (epics.go). An issue some other change holds
// back (a person's, PLANNING's) is not BUILD's to answer for.
func (b *buildLedger) heldBack(now guard.Snapshot, skipped []string) []heldIssue {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []heldIssue
	fam := familyOf(now)
	for _, id := range b.startReady {
		is, ok := now[id]
		if !ok || is.Status == beads.StatusClosed || is.HasLabel(StuckLabel) || slices.Contains(skipped, id) {
			continue
		}
		var whys []string
		for _, c := range b.changes {
			if c.issue != id {
				continue
			}
			switch {
			case c.status != "" && is.Status == c.status:
				whys = append(whys, fmt.Sprintf("%s: status set to %s in iteration %d", id, c.status, c.iteration))
			case c.dep != "" && dependsOn(is, c.dep) && now[c.dep].Status != beads.StatusClosed:
				st := now[c.dep].Status
				if st == "" {
					st = "missing"
				}
				whys = append(whys, fmt.Sprintf("%s depends on %s (added in iteration %d), which is %s", id, c.dep, c.iteration, st))
			}
		}
		for _, c := range fam.waitsOn(id, nil) {
			if it, ok := b.made[c]; ok {
				whys = append(whys, fmt.Sprintf("%s waits on its child %s, which iteration %d created and is %s", id, c, it, now[c].Status))
			}
		}
		if len(whys) > 0 {
			out = append(out, heldIssue{id: id, why: strings.Join(slices.Compact(whys), "; ")})
		}
	}
	// By id: `bd ready` orders issues of one priority by age, and issues
	// made in the same second tie.
	slices.SortFunc(out, func(a, b heldIssue) int { return strings.Compare(a.id, b.id) })
	return out
}

// dependsOn reports whether is depends on id, by any edge type.
func dependsOn(is beads.Issue, id string) bool {
	return slices.ContainsFunc(is.Dependencies, func(d beads.Dependency) bool { return d.DependsOnID == id })
}

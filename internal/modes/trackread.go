package modes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

// Tracker reads (tracker_reads; docs/security.md, "Tracker reads on a big
// tracker"). Every judgement compares the tracker before and after a
// window, so every reading must hold every change a window made. With
// tracker_reads = full each reading lists every issue. With incremental,
// after one full reading, a reading lists only the issues whose updated_at
// moved since the last one started (less a margin for updated_at's second
// precision and the writer's clock), plus the issues ralphd itself wrote
// since (a label moves no updated_at), re-read by id, and patches them
// into the reading it holds.
//
// What that misses (a change made around bd that keeps or back-dates
// updated_at, a deleted issue, a label an agent added around the guard)
// is found by the next full reading, which comes at a bounded interval
// and whenever something lists every issue anyway (PLANNING, the sweep,
// the check before a run reports success, the end of a BUILD run). A full
// reading compares itself with the reading held: an issue whose updated_at
// did not move past the last cut but differs is a change that hid. It is
// judged with the guard's diff under a window that owns nothing,
// reverted against the reading held, charged to every window opened since
// the last full reading, logged, and patched out of the reading returned:
// it never becomes the next window's baseline.
//
// While readings are incremental the reading held (every issue at a full
// reading, what readings of what changed patched in at each of them), the
// writes of ralphd's and the agents' since a reading took them, and the
// windows since the last full reading are kept in the state dir (keep,
// persist): a ralphd killed with no window open leaves no baseline, and
// the next start's sweep compares a full reading with them as this run's
// next one would have (compareKept, sweep.go).
//
// An agent's bd writes that the guard allowed are told here too
// (agentWrote): they explain what they set on an issue ralphd re-reads,
// so with workers another agent's allowed change is not taken for a
// hidden one.
//
// One trackerReads serves a run: every Loop of it (workers, the pool's
// readings) reads through it, one reading at a time; the workers' claims
// take the claimed issue from its last reading (claimedIssue).
//
// The daemon's runs share one, and a run may start from the reading the
// one before it ended with (carry): when that reading listed every issue
// and .beads/ is, at the new run's first reading, as it was when that
// reading started (Fingerprint: bd wrote nothing since, ralphd's own
// writes included), the tracker is that reading, and the first reading
// is it, with no bd call. Anything else (a write, an idle wait that a
// write ended, bd's server mode, where .beads/ does not show what other
// clones write) starts the run with a full reading, as every run did.

// Tracker read strategies, the values of tracker_reads.
const (
	TrackerReadsAuto        = "auto"
	TrackerReadsFull        = "full"
	TrackerReadsIncremental = "incremental"
)

// Defaults of the incremental reads.
const (
	// autoIncrementalAt is the tracker size at which tracker_reads = auto
	// reads incrementally.
	autoIncrementalAt = 1000
	// updatedMargin is how far before the last reading's start a reading
	// of what changed looks: updated_at is second-precision and set by
	// the writer's clock (another machine's, in server mode).
	updatedMargin = time.Minute
)

// noOwner is the owner of a window that owns nothing: every issue is
// another's, so any status or assignee change counts (guard.Options.Own).
const noOwner = "\x00no window"

// trackerReads holds a run's readings of the tracker and decides how the
// next one is read.
type trackerReads struct {
	mode     string        // tracker_reads as configured
	every    int           // cheap readings between full ones
	interval time.Duration // longest time between full readings
	margin   time.Duration // see updatedMargin

	mu          sync.Mutex // one reading at a time; guards what follows
	decided     bool       // the first full reading decided incremental
	incremental bool
	held        guard.Snapshot // the last reading, patched; never handed out
	prevStart   time.Time      // when the last reading started
	lastFull    time.Time      // when the last full reading started
	sinceFull   int            // cheap readings since the last full one
	cheapSince  bool           // held was patched since the last full reading
	comments    map[string]cachedComments
	// patched are the issues readings of what changed patched into held
	// since the last full reading, which started at heldAt: what the
	// state dir's delta keeps (keep).
	patched map[string]bool
	heldAt  time.Time

	wmu     sync.Mutex
	written map[string]*rereadWhy // issues to re-read by id, and why
	// inReading are the re-reads the reading under way took, kept on
	// disk with written until the reading held is (persist).
	inReading map[string]*rereadWhy
	// claiming are the `bd ready --claim` calls in flight, which claim an
	// issue their argv does not name.
	claiming []*beads.Write
	windows  []*readWindow // windows opened since the last full reading
	// lastFullAt is when the last full reading that pruned windows started.
	lastFullAt time.Time
	// reopened are the issues whose close a charge reopened; the run
	// takes them out of its closed issues when it ends.
	reopened []string

	// store keeps the windows since the last full reading on disk while
	// readings are incremental (persistOn), for a ralphd killed before
	// the next full one (state.ReadWindowsFile); nil keeps none. warn
	// says what could not be kept.
	store     *state.Store
	runID     string
	persistOn atomic.Bool
	warn      func(msg string, err error)

	// last is the last reading this run took, held (claimedIssue reads
	// it without waiting for the reading under way).
	last atomic.Pointer[guard.Snapshot]

	// hidden counts the hidden changes found; the run adds them to its
	// violations when it ends.
	hidden atomic.Int64
	// full counts the full readings, cheap the others (tests, logs);
	// reused the runs whose first reading was the last run's (carry).
	full, cheap, reused atomic.Int64

	// fullFP is .beads/'s fingerprint taken just before the last full
	// reading started ("" when a reading of what changed followed it);
	// carrying: the run started from that reading, pending its first
	// reading's check (carry).
	fullFP   string
	carrying bool
}

// rereadWhy is why the next reading re-reads an issue by id.
type rereadWhy struct {
	// judged: it is a judgement's own issue, whose window judges the
	// reading's difference there (and ralphd writes to it inside that
	// window): it is taken as it is.
	judged bool
	// writes are ralphd's writes to it since a reading took it: only
	// what they explain may differ from the reading held (explain).
	writes []*beads.Write
	// agent are the writes agents made to it through the guard, which
	// allowed them: what they set explains a difference too, and alone
	// they do not have the issue checked (its update shows it to a
	// reading of what changed anyway).
	agent []*beads.Write
}

// effects returns what the writes change, on any issue.
func (w *rereadWhy) effects() []beads.Effect {
	var out []beads.Effect
	for _, x := range slices.Concat(w.writes, w.agent) {
		out = append(out, x.Effects()...)
	}
	return out
}

// readWindow is a window a hidden change may be charged to: an iteration
// whose agent ran since the last full reading.
type readWindow struct {
	n       int
	issue   string
	win     *window // workers: its window in the pool's ledger
	started time.Time
	done    bool // its agent has ended
	closed  bool // its iteration closed its issue
}

// newTrackerReads is the strategy of a run with configuration mode
// ("" is auto), a full reading at least every `every` readings and every
// interval.
func newTrackerReads(mode string, every int, interval time.Duration) *trackerReads {
	if mode == "" {
		mode = TrackerReadsAuto
	}
	return &trackerReads{mode: mode, every: max(every, 1), interval: interval, margin: updatedMargin}
}

// reads returns the run's tracker reads, made on first use.
func (l *Loop) reads() *trackerReads {
	if l.tracker == nil {
		mode, every, interval := TrackerReadsFull, 1, time.Duration(0)
		if l.Config != nil {
			mode, every, interval = l.Config.TrackerReads, l.Config.TrackerFullEvery, l.Config.TrackerFullInterval
		}
		l.tracker = newTrackerReads(mode, every, interval)
	}
	return l.tracker
}

// startReads starts a run's readings (startRun) with l's bd. The windows
// since the last full reading are kept in l's state (the run's own, not
// a worker's view).
func (l *Loop) startReads() {
	r := l.reads()
	r.startRun(l.BD, l.daemonReads && !beads.ServerMode(l.beadsDir(), l.environ()))
	if l.State != nil && l.State.Worker() == "" {
		r.store, r.runID = l.State, l.RunID
		r.warn = func(msg string, err error) { l.human().Warn(msg, "err", err) }
	}
}

// startRun starts a run's readings: the first lists every issue, or with
// mayCarry may be the last run's last reading (carry), and ralphd's
// writes through bd are re-read by id.
func (r *trackerReads) startRun(bd *beads.Client, mayCarry bool) {
	r.mu.Lock()
	r.carrying = mayCarry && r.held != nil && !r.cheapSince && r.fullFP != ""
	if !r.carrying {
		r.held, r.cheapSince, r.sinceFull, r.fullFP = nil, false, 0, ""
	}
	r.last.Store(nil)
	r.mu.Unlock()
	r.wmu.Lock()
	r.windows, r.reopened = nil, nil
	clear(r.written)
	r.wmu.Unlock()
	r.hidden.Store(0)
	if bd != nil {
		bd.OnWrite = r.wrote
	}
}

// wrote records that ralphd wrote (or is about to write: the bd client
// tells the same *Write before and after the call) to the issues w
// names: the next reading re-reads them by id and checks that they
// differ from the reading held only by what w explains. It is the bd
// client's OnWrite.
func (r *trackerReads) wrote(w *beads.Write) { r.record(w, false) }

// agentWroteTo records an agent's write the guard allowed, told like
// ralphd's (wrote): the next reading re-reads its issues by id and takes
// them as they are (the windows whose diffs hold the reading judge
// them), and what it sets explains the same difference on an issue
// ralphd wrote too.
func (r *trackerReads) agentWroteTo(w *beads.Write) { r.record(w, true) }

// record is wrote and agentWroteTo.
func (r *trackerReads) record(w *beads.Write, agent bool) {
	ids := beads.WriteTargets(w.Args)
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if w.AnyClaim() { // told before the call and after
		if i := slices.Index(r.claiming, w); i >= 0 {
			r.claiming = slices.Delete(r.claiming, i, i+1)
		} else {
			r.claiming = append(r.claiming, w)
		}
	}
	for _, id := range ids {
		why := r.why(id)
		list := &why.writes
		if agent {
			list = &why.agent
		}
		if !slices.Contains(*list, w) {
			*list = append(*list, w)
		}
	}
	if len(ids) > 0 {
		r.persist() // before bd makes the write: a kill then cannot lose it
	}
}

// agentWrote returns what the guard tells of an agent's allowed writes
// (guard.Setup.OnWrite) to the tracker reads (agentWroteTo), or nil when
// l has no bd client. What such a write sets explains the same
// difference on an issue ralphd wrote meanwhile, so another worker's
// allowed change is not taken for a hidden one; the windows whose diffs
// hold the reading judge it. A change the guard did not allow is never
// told, so it explains nothing.
func (l *Loop) agentWrote() func(*beads.Write) {
	if l.BD == nil {
		return nil
	}
	return l.reads().agentWroteTo
}

// why returns id's entry in r.written, made on first use. The caller
// holds r.wmu.
func (r *trackerReads) why(id string) *rereadWhy {
	if r.written == nil {
		r.written = map[string]*rereadWhy{}
	}
	w := r.written[id]
	if w == nil {
		w = &rereadWhy{}
		r.written[id] = w
	}
	return w
}

// reread asks the next reading to read id by id whatever its updated_at,
// and to take it as it is: a judgement's own issue, whose window judges
// it, and which ralphd writes to after it.
func (r *trackerReads) reread(id string) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.why(id).judged = true
}

// inFlight returns the effects of ralphd's writes told since a reading
// took its re-reads and not yet taken, and of the claims in flight: a
// write is told before bd makes it, so what a reading's bd calls saw of
// ralphd's writes is among these and the ones it took. Called once the
// reading's bd calls have ended. The issues those writes name are
// checked like the ones the reading took (explain).
func (r *trackerReads) inFlight() written {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	out := written{ids: map[string]bool{}}
	for id, w := range r.written {
		if !w.judged && len(w.writes) > 0 {
			out.ids[id] = true
		}
		out.effects = append(out.effects, w.effects()...)
	}
	for _, w := range r.claiming {
		out.effects = append(out.effects, w.Effects()...)
	}
	return out
}

// written are writes of ralphd's in flight during a reading: the issues
// to check, and what the writes change.
type written struct {
	ids     map[string]bool
	effects []beads.Effect
}

// takeWritten returns the issues to re-read since the last reading, and
// forgets them.
func (r *trackerReads) takeWritten() map[string]*rereadWhy {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	out := r.written
	r.written, r.inReading = nil, out
	return out
}

// opened registers iteration n's window on issue (win: its window in the
// pool's ledger, for workers); its agent starts now. The returned func
// says its agent has ended, and closed whether the iteration closed the
// issue (set later with closedBy).
func (r *trackerReads) opened(n int, issue string, win *window, at time.Time) *readWindow {
	w := &readWindow{n: n, issue: issue, win: win, started: at}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.windows = append(r.windows, w)
	r.persist()
	return w
}

// persist writes the windows since the last full reading, and the
// issues to re-read and why (ralphd's writes since a reading took them),
// to the state dir, atomically, or removes the file when there are none.
// The caller holds r.wmu.
func (r *trackerReads) persist() {
	if r.store == nil || !r.persistOn.Load() {
		return
	}
	rw := state.ReadWindows{RunID: r.runID, LastFull: r.lastFullAt}
	for _, w := range r.windows {
		rw.Windows = append(rw.Windows, state.ReadWindow{Iteration: w.n, IssueID: w.issue, StartedAt: w.started, Closed: w.closed})
	}
	rw.Rereads = rereadsOf(r.inReading, r.written)
	var err error
	if len(rw.Windows)+len(rw.Rereads) == 0 {
		err = r.store.ClearReadWindows()
	} else {
		err = r.store.WriteReadWindows(rw)
	}
	if err != nil && r.warn != nil {
		r.warn("could not keep the windows since the last full reading of the tracker; a ralphd killed before the next one charges what it finds to fewer of them", err)
	}
}

// rereadsOf returns the re-reads of the maps, merged, as the state dir
// keeps them.
func rereadsOf(ms ...map[string]*rereadWhy) []state.Reread {
	byID := map[string]*state.Reread{}
	for _, m := range ms {
		for id, why := range m {
			rr := byID[id]
			if rr == nil {
				rr = &state.Reread{IssueID: id}
				byID[id] = rr
			}
			rr.Judged = rr.Judged || why.judged
			for _, w := range why.writes {
				rr.Writes = append(rr.Writes, state.PendingWrite{Args: w.Args, Actor: w.Actor})
			}
			for _, w := range why.agent {
				rr.Writes = append(rr.Writes, state.PendingWrite{Args: w.Args, Actor: w.Actor, Agent: true})
			}
		}
	}
	out := make([]state.Reread, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, *byID[id])
	}
	return out
}

// keep writes the reading held to the state dir while readings are
// incremental: every issue after a full reading, the issues patched in
// since (touched, added to r.patched) after a reading of what changed.
// Then the re-reads the reading took are no longer needed on disk. The
// caller holds r.mu.
func (r *trackerReads) keep(full bool, start time.Time, touched []string) {
	defer func() {
		r.wmu.Lock()
		defer r.wmu.Unlock()
		r.inReading = nil
		r.persist()
	}()
	if r.store == nil || !r.persistOn.Load() {
		return
	}
	var err error
	if full {
		r.patched, r.heldAt = nil, start
		err = r.store.WriteTrackerHeld(state.TrackerHeld{RunID: r.runID, TakenAt: start, Issues: r.held.Issues()})
	} else {
		if r.patched == nil {
			r.patched = map[string]bool{}
		}
		for _, id := range touched {
			r.patched[id] = true
		}
		d := state.TrackerHeldDelta{TakenAt: r.heldAt, PrevStart: r.prevStart}
		for _, id := range slices.Sorted(maps.Keys(r.patched)) {
			if is, ok := r.held[id]; ok {
				d.Issues = append(d.Issues, is)
			} else {
				d.Deleted = append(d.Deleted, id)
			}
		}
		err = r.store.WriteTrackerHeldDelta(d)
	}
	if err != nil && r.warn != nil {
		r.warn("could not keep the reading of the tracker in the state dir; a ralphd killed with no window open cannot find a change hidden since the last full reading", err)
	}
}

// forgetKept removes the reading kept and the windows' list from the
// state dir: the run ends after a full reading judged every window, and
// the next start must not compare the tracker, which people may change
// meanwhile, with a reading of this run's.
func (r *trackerReads) forgetKept() {
	if r.store == nil {
		return
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if err := errors.Join(r.store.ClearTrackerHeld(), r.store.ClearReadWindows()); err != nil && r.warn != nil {
		r.warn("could not remove the reading of the tracker kept; the next start compares the tracker with it", err)
	}
}

// agentEnded marks w's agent as ended.
func (r *trackerReads) agentEnded(w *readWindow) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	w.done = true
}

// closedBy records that w's iteration closed its issue.
func (r *trackerReads) closedBy(w *readWindow) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	w.closed = true
	r.persist()
}

// settle takes into res what the run's readings found: the hidden
// changes, as violations, and the closes a charge reopened, which are
// not the run's closes any more (one for each reopen: an issue closed
// again later stays).
func (r *trackerReads) settle(res *Result) {
	res.Violations += int(r.hidden.Swap(0))
	r.wmu.Lock()
	defer r.wmu.Unlock()
	for _, id := range r.reopened {
		if i := slices.Index(res.Closed, id); i >= 0 {
			res.Closed = slices.Delete(res.Closed, i, i+1)
		}
	}
	r.reopened = nil
}

// openSinceFull returns the windows opened since the last full reading,
// which a hidden change found by a reading of what changed charges.
func (r *trackerReads) openSinceFull() []readWindow {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	out := make([]readWindow, 0, len(r.windows))
	for _, w := range r.windows {
		out = append(out, *w)
	}
	return out
}

// chargeable returns the windows a full reading that started at start
// charges, and keeps for the next period only those whose agent may still
// change the tracker.
func (r *trackerReads) chargeable(start time.Time) []readWindow {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	var out []readWindow
	for _, w := range r.windows {
		if w.started.Before(start) || w.started.Equal(start) {
			out = append(out, *w)
		}
	}
	r.windows = slices.DeleteFunc(r.windows, func(w *readWindow) bool { return w.done && !w.started.After(start) })
	r.lastFullAt = start
	r.persist()
	return out
}

// hiddenChange is what a full reading found that the cheap readings
// missed: the violations, judged against the reading held, and the
// windows they are charged to.
type hiddenChange struct {
	held    guard.Snapshot // the reading held: what the revert restores
	vs      []guard.Violation
	windows []readWindow
	// byWrite are the issues of vs found riding in with a write of
	// ralphd's (explain), not by a full reading.
	byWrite map[string]bool
}

// readOpts says what a reading is for.
type readOpts struct {
	// full: the reading must list every issue (PLANNING, the sweep, the
	// check before a run reports success).
	full bool
	// fp is .beads/'s fingerprint taken before the reading ("" when it
	// could not be taken).
	fp string
}

// read takes one reading of the tracker with l's bd. A full reading that
// finds hidden changes hands them to l.hiddenFound before it returns.
func (r *trackerReads) read(ctx context.Context, l *Loop, o readOpts) (guard.Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.carrying {
		if snap, ok := r.carry(o.fp); ok {
			return snap, nil
		}
	}
	start := time.Now()
	rereads := r.takeWritten()
	due := r.held == nil || !r.incremental || o.full || r.sinceFull >= r.every ||
		(r.interval > 0 && start.Sub(r.lastFull) >= r.interval)
	if !due {
		next, touched, err := r.readCheap(ctx, l, start, rereads)
		if err != nil {
			r.giveBack(rereads)
			return nil, err
		}
		r.cheap.Add(1)
		var h hiddenChange
		if next, h = r.explain(l, next, rereads, r.inFlight()); len(h.vs) > 0 {
			h.windows = r.openSinceFull()
			next = r.found(ctx, l, next, h)
		}
		r.held, r.prevStart, r.cheapSince, r.fullFP = next, start, true, ""
		r.last.Store(&next)
		r.sinceFull++
		r.keep(false, start, touched)
		return maps.Clone(next), nil
	}
	r.fullFP = ""
	issues, fresh, err := l.listEverything(ctx)
	if err == nil {
		r.comments = fresh
	}
	if err != nil {
		r.giveBack(rereads)
		return nil, err
	}
	inFlight := r.inFlight()
	r.full.Add(1)
	full := guard.NewSnapshot(issues)
	if !r.decided {
		r.decide(l, len(full))
	}
	if r.incremental && r.cheapSince && r.held != nil {
		var h, w hiddenChange
		full, h = r.compare(l, full, rereads)
		full, w = r.explain(l, full, rereads, inFlight)
		h.vs, h.byWrite = append(h.vs, w.vs...), w.byWrite
		if len(h.vs) > 0 {
			h.held = r.held
			h.windows = r.chargeable(start)
			full = r.found(ctx, l, full, h)
		} else {
			r.chargeable(start)
		}
	} else {
		r.chargeable(start)
	}
	r.held, r.prevStart, r.lastFull, r.sinceFull, r.cheapSince = full, start, start, 0, false
	r.fullFP = o.fp
	r.last.Store(&full)
	r.keep(true, start, nil)
	return maps.Clone(full), nil
}

// carry is a run's first reading when the run may start from the last
// run's (startRun): the reading held, when .beads/'s fingerprint fp,
// taken before this reading, is the one taken before that full reading
// started, and no write of ralphd's or an agent's is waiting to be
// re-read. Then bd wrote nothing since that reading started, and the
// reading held, which nothing patched since, is the tracker. Otherwise
// the run starts as any run does, with a full reading. The caller holds
// r.mu.
func (r *trackerReads) carry(fp string) (guard.Snapshot, bool) {
	r.carrying = false
	r.wmu.Lock()
	quiet := len(r.written) == 0 && len(r.claiming) == 0
	r.wmu.Unlock()
	if fp == "" || fp != r.fullFP || !quiet {
		r.held, r.cheapSince, r.sinceFull, r.fullFP = nil, false, 0, ""
		return nil, false
	}
	r.reused.Add(1)
	held := r.held
	r.last.Store(&held)
	r.keep(true, r.lastFull, nil) // the last run's end forgot it on disk
	return maps.Clone(held), true
}

// listEverything lists every issue with every comment read afresh, in
// one `bd export` (beads.Client.ListAllWithComments), and returns the
// comments as the cache the readings of what changed go on from. Every
// full reading, in either mode, reads so: the readings of what changed
// go by the comment count, which a comment rewritten around bd keeps
// (compare), and with tracker_reads = full every reading is a full one,
// so such a rewrite shows in the very next reading, in the window that
// made it. An issue whose comments the export gives in another number
// than its comment count (a comment added between the two queries of a
// server-mode export) is read again with `bd show`; when the export
// fails, the tracker is listed and the comments read apart.
func (l *Loop) listEverything(ctx context.Context) ([]beads.Issue, map[string]cachedComments, error) {
	fresh := map[string]cachedComments{}
	issues, err := l.BD.ListAllWithComments(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		l.human().Warn("could not read the tracker with bd export; listing it and reading the comments apart", "err", err)
		if issues, err = l.BD.List(ctx, beads.ListOptions{All: true}); err != nil {
			return nil, nil, err
		}
		return issues, fresh, l.readComments(ctx, issues, len(issues), fresh, false)
	}
	for _, is := range issues {
		if is.CommentCount > 0 && len(is.Comments) == is.CommentCount {
			fresh[is.ID] = cachedComments{count: is.CommentCount, updated: is.UpdatedAt, list: is.Comments}
		}
	}
	// Those left out of fresh are read again (readComments' stale ones).
	return issues, fresh, l.readComments(ctx, issues, len(issues), fresh, false)
}

// claimedIssue is the issue a worker claimed, claimed being bd's answer
// to the claim: as the run's last reading holds it, with what the claim
// set taken from bd's answer (status, assignee, started_at, updated_at)
// and the count of its dependencies, so that a dependency added since
// that reading is read by whoever needs the edges (Pool.awaitBlockers).
// It reports false when no reading of the run holds the issue, or holds
// it closed (reopened since: its close's fields are stale).
func claimedIssue(r *trackerReads, claimed beads.Issue) (beads.Issue, bool) {
	s := r.last.Load()
	if s == nil {
		return beads.Issue{}, false
	}
	is, ok := (*s)[claimed.ID]
	if !ok || is.Status == beads.StatusClosed {
		return beads.Issue{}, false
	}
	is.Status, is.Assignee, is.StartedAt, is.UpdatedAt = claimed.Status, claimed.Assignee, claimed.StartedAt, claimed.UpdatedAt
	is.DependencyCount = claimed.DependencyCount
	return is, true
}

// pending reports whether readings of what changed were patched in since
// the last full reading: a full reading may find what they missed.
func (r *trackerReads) pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.incremental && r.cheapSince
}

// errHiddenFound ends the check before a run reports success when the
// full reading it makes found hidden changes: they were reverted, which
// may have put work back, so the run goes on.
var errHiddenFound = errors.New("the full reading of the tracker found changes hidden from the readings of what changed")

// closingRead makes the full reading that ends a BUILD run that stops
// with readings of what changed since the last full one (a cap, a
// daemon's batch, a signal): what they missed is found, reverted and
// charged before the run's windows are forgotten.
func (l *Loop) closingRead(ctx context.Context) {
	if !l.reads().pending() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if _, err := l.snapshotFull(ctx); err != nil {
		l.human().Warn("could not make the full reading of the tracker that ends the run; what the readings of what changed missed since the last full reading is not judged", "err", err)
	}
}

// giveBack puts back the re-reads of a reading that failed.
func (r *trackerReads) giveBack(took map[string]*rereadWhy) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.inReading = nil
	for id, w := range took {
		why := r.why(id)
		why.judged = why.judged || w.judged
		for _, x := range w.writes {
			if !slices.Contains(why.writes, x) {
				why.writes = append(why.writes, x)
			}
		}
		for _, x := range w.agent {
			if !slices.Contains(why.agent, x) {
				why.agent = append(why.agent, x)
			}
		}
	}
}

// cache is the comments cache. The caller holds r.mu.
func (r *trackerReads) cache() map[string]cachedComments {
	if r.comments == nil {
		r.comments = map[string]cachedComments{}
	}
	return r.comments
}

// decide settles tracker_reads = auto on the first full reading, of n
// issues, and says so on the log.
func (r *trackerReads) decide(l *Loop, n int) {
	r.decided = true
	switch r.mode {
	case TrackerReadsIncremental:
		r.incremental = true
	case TrackerReadsAuto:
		r.incremental = n >= autoIncrementalAt
	}
	r.persistOn.Store(r.incremental)
	if r.mode == TrackerReadsFull || (!r.incremental && n < autoIncrementalAt/2) {
		return
	}
	how := "every reading lists every issue"
	if r.incremental {
		how = fmt.Sprintf("readings list what changed since the last one, with a full reading every %d readings", r.every)
		if r.interval > 0 {
			how += " or " + r.interval.String()
		}
	}
	l.human().Info("tracker_reads = "+r.mode+": "+how, "issues", n)
}

// readCheap reads what changed since the last reading and patches it into
// the reading held; it returns the issues it read or asked for (keep).
// The caller holds r.mu.
func (r *trackerReads) readCheap(ctx context.Context, l *Loop, start time.Time, took map[string]*rereadWhy) (guard.Snapshot, []string, error) {
	changed, err := l.BD.List(ctx, beads.ListOptions{All: true, UpdatedAfter: r.prevStart.Add(-r.margin)})
	if err != nil {
		return nil, nil, fmt.Errorf("read what changed in the tracker: %w", err)
	}
	next := maps.Clone(r.held)
	listed := map[string]bool{}
	for _, is := range changed {
		listed[is.ID] = true
	}
	// An issue to re-read that the list above already holds is not read
	// again: its row there is of a call that started after every write
	// taken here was told, and a write whose call was still under way is
	// told again when it ends, so the next reading re-reads it.
	asked := map[string]bool{}
	var rereads, ask []string
	for id := range took {
		rereads = append(rereads, id)
		if !listed[id] {
			asked[id] = true
			ask = append(ask, id)
		}
	}
	slices.Sort(ask)
	if len(ask) > 0 {
		got, err := l.BD.List(ctx, beads.ListOptions{All: true, IDs: ask})
		if err != nil {
			return nil, nil, fmt.Errorf("re-read the issues ralphd wrote: %w", err)
		}
		// Only the issues asked for: bd ignores an id it does not know,
		// and may list every issue when it knows none. One asked for and
		// gone was deleted.
		var keep []beads.Issue
		for _, is := range got {
			if asked[is.ID] {
				keep = append(keep, is)
				delete(asked, is.ID)
			}
		}
		changed = append(changed, keep...)
		for id := range asked {
			delete(next, id)
		}
	}
	if err := l.readComments(ctx, changed, len(next), r.cache(), true); err != nil {
		return nil, nil, err
	}
	for _, is := range changed {
		next[is.ID] = is
		rereads = append(rereads, is.ID)
	}
	return next, rereads, nil
}

// compare checks a full reading against the reading held: an issue that
// differs although its updated_at did not move past the cut a reading of
// what changed would use now, and that ralphd did not write, changed out
// of sight of the cheap readings. Such a change to what the guard
// protects, judged under a window that owns nothing, is a hidden change:
// the reading returned holds the issue as held (the revert puts it back).
// Any other difference is taken as it is. The caller holds r.mu.
func (r *trackerReads) compare(l *Loop, full guard.Snapshot, took map[string]*rereadWhy) (guard.Snapshot, hiddenChange) {
	cut := r.prevStart.Add(-r.margin)
	wrote := map[string]bool{}
	for id := range took {
		wrote[id] = true // explain's, or a judgement's
	}
	visible := func(is beads.Issue) bool { return wrote[is.ID] || is.UpdatedAt.After(cut) }
	before, after := guard.Snapshot{}, guard.Snapshot{}
	for id, h := range r.held {
		f, ok := full[id]
		switch {
		case !ok && !wrote[id]:
			before[id] = h // deleted: no reading of what changed sees it
		case ok && !visible(f) && !sameIssue(h, f):
			before[id], after[id] = h, f
		case ok && !sameComments(h.Comments, f.Comments):
			// Between full readings an issue's comments are read again
			// only when their count moves, whatever its update time: a
			// comment rewritten in place is seen here. Only the comments
			// are judged: the rest the readings of what changed saw.
			b := f
			b.Comments = h.Comments
			before[id], after[id] = b, f
		}
	}
	for id, f := range full {
		if _, ok := r.held[id]; !ok && !visible(f) {
			after[id] = f // created with an updated_at from before the cut
		}
	}
	if len(before)+len(after) == 0 {
		return full, hiddenChange{}
	}
	vs := guard.Diff(before, after, guard.Options{CitesEvidence: citesEvidence, Own: noOwner})
	vs = slices.DeleteFunc(vs, func(v guard.Violation) bool { return l.fleet.ownsChange(v, before, after) })
	if len(vs) == 0 {
		return full, hiddenChange{}
	}
	out := maps.Clone(full)
	for _, v := range vs {
		if h, ok := r.held[v.IssueID]; ok {
			out[v.IssueID] = h // a deleted one too: the revert re-creates it
		} else {
			delete(out, v.IssueID)
		}
	}
	return out, hiddenChange{held: r.held, vs: vs}
}

// explain checks each issue a reading re-read because ralphd wrote it,
// other than a judgement's own (its window judges it), against the
// reading held: ralphd's write moves its updated_at, so whatever changed
// there out of sight of the readings of what changed rides in with it.
// The guard's diff under a window that owns nothing finds what differs;
// what the writes' effects account for exactly (beads.Write.Effects,
// guard.Explained; with inFlight, the writes told while the reading's bd
// calls ran), or the fleet owns, is taken; anything else is a
// hidden change, and the reading returned holds the issue as held. The
// caller holds r.mu.
func (r *trackerReads) explain(l *Loop, got guard.Snapshot, took map[string]*rereadWhy, inFlight written) (guard.Snapshot, hiddenChange) {
	before, after := guard.Snapshot{}, guard.Snapshot{}
	effects := slices.Clone(inFlight.effects)
	check := maps.Clone(inFlight.ids)
	for id, why := range took {
		effects = append(effects, why.effects()...)
		if why.judged {
			delete(check, id) // its window judges it
		} else if len(why.writes) > 0 {
			if check == nil {
				check = map[string]bool{}
			}
			check[id] = true
		}
	}
	for id := range check {
		h, held := r.held[id]
		g, read := got[id]
		if read && held && reflect.DeepEqual(h, g) {
			continue
		}
		if held && (read || took[id] != nil) { // not read and not asked for: as held
			before[id] = h
		}
		if read {
			after[id] = g
		}
	}
	if len(before)+len(after) == 0 {
		return got, hiddenChange{}
	}
	vs := guard.Diff(before, after, guard.Options{CitesEvidence: citesEvidence, Own: noOwner})
	vs = slices.DeleteFunc(vs, func(v guard.Violation) bool {
		return guard.Explained(v, effects) || l.fleet.ownsChange(v, before, after)
	})
	if len(vs) == 0 {
		return got, hiddenChange{}
	}
	out := maps.Clone(got)
	for _, v := range vs {
		if h, ok := r.held[v.IssueID]; ok {
			out[v.IssueID] = h
		} else {
			delete(out, v.IssueID)
		}
	}
	by := map[string]bool{}
	for _, v := range vs {
		by[v.IssueID] = true
	}
	return out, hiddenChange{held: r.held, vs: vs, byWrite: by}
}

// found handles the hidden changes h a reading found: counted, reverted,
// logged and charged (hiddenFound), and each issue whose every revert
// went through re-read by id into snap, which then holds it as the
// revert left it (with ralphd's own writes to it, which the reading held
// may lack); an issue not reverted, or not read, stays as held. The
// caller holds r.mu.
func (r *trackerReads) found(ctx context.Context, l *Loop, snap guard.Snapshot, h hiddenChange) guard.Snapshot {
	r.hidden.Add(int64(len(h.vs)))
	failed := l.hiddenFound(ctx, h)
	var ids []string
	for _, v := range h.vs {
		if !failed[v.IssueID] && !slices.Contains(ids, v.IssueID) {
			ids = append(ids, v.IssueID)
		}
	}
	if len(ids) == 0 {
		return snap
	}
	slices.Sort(ids)
	got, err := l.BD.List(context.WithoutCancel(ctx), beads.ListOptions{All: true, IDs: ids})
	if err == nil {
		got = slices.DeleteFunc(got, func(is beads.Issue) bool { return !slices.Contains(ids, is.ID) })
		err = l.readComments(ctx, got, len(snap), r.cache(), false)
	}
	if err != nil {
		l.human().Warn("could not read again the issues whose hidden changes were reverted; the reading holds them as before", "err", err)
		return snap
	}
	for _, is := range got {
		snap[is.ID] = is
	}
	return snap
}

// sameIssue reports whether two readings of an issue agree.
func sameIssue(a, b beads.Issue) bool {
	ac, bc := a.Comments, b.Comments
	a.Comments, b.Comments = nil, nil
	return sameComments(ac, bc) && reflect.DeepEqual(a, b)
}

// sameComments reports whether two readings of an issue's comments hold
// the same texts (and ids, where both have them), whichever of bd's
// commands each came from.
func sameComments(a, b []beads.Comment) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		if !slices.ContainsFunc(b, func(x beads.Comment) bool {
			return x.Text == c.Text && (c.ID == "" || x.ID == "" || x.ID == c.ID)
		}) {
			return false
		}
	}
	return true
}

// hiddenFound reverts the hidden changes a reading found against the
// reading held, logs each as a violation, and charges it to every window
// opened since the last full reading: a worker's window not yet judged
// fails its attempt with it; every other is logged as charged, noted on
// its issue, and a close it made is reopened (a close does not stand in
// a window charged with a forbidden change). It runs inside the reading.
// It returns the issues whose revert failed.
func (l *Loop) hiddenFound(ctx context.Context, h hiddenChange) (failed map[string]bool) {
	ctx = context.WithoutCancel(ctx)
	failed = map[string]bool{}
	var found []string
	for _, rv := range guard.Revert(ctx, l.BD, h.held, h.vs) {
		d := rv.Violation.String()
		if rv.Err != nil {
			d += " (revert failed: " + rv.Err.Error() + ")"
			failed[rv.Violation.IssueID] = true
		}
		found = append(found, d)
	}
	var its []string
	for _, w := range h.windows {
		its = append(its, fmt.Sprintf("%d (%s)", w.n, w.issue))
	}
	who := "no iteration ran since the last full read"
	if len(its) > 0 {
		who = "charged to every iteration whose agent ran since the last full read: " + strings.Join(its, ", ")
	}
	for i, v := range h.vs {
		how := "found by a full read of the tracker; the reads of what changed missed it (its updated_at did not move)"
		if h.byWrite[v.IssueID] {
			how = "found when a write of ralphd's to the issue moved its updated_at; that write does not account for it, and the reads of what changed had missed it"
		}
		detail := found[i] + " — " + how + "; reverted, " + who
		l.event(logjsonl.EventViolation, logjsonl.Violation{IssueID: v.IssueID, Mode: ModeBuild, Kind: "hidden_change", Detail: detail})
		l.human().Warn("a change hidden from the reads of what changed: reverted", "issue", v.IssueID, "change", found[i], "charged", strings.Join(its, ", "))
	}
	detail := "a change made out of sight of the reads of what changed (" + strings.Join(found, "; ") +
		") was found by a read of the tracker and reverted; ralphd cannot tell which agent made it, so every iteration whose agent ran since the last full read is charged"
	l.chargeWindows(ctx, h.windows, detail)
	return failed
}

// chargeWindows charges a hidden change, described by detail, to each of
// windows: a worker's window not yet judged fails its attempt with it;
// every other is logged as charged, noted on its issue, and a close it
// made is reopened (a close does not stand in a window charged with a
// forbidden change).
func (l *Loop) chargeWindows(ctx context.Context, windows []readWindow, detail string) {
	p := l.pool()
	for _, w := range windows {
		if w.win != nil && p != nil && p.ledger.chargeHidden(w.win, detail) {
			continue // its judgement fails its attempt with it
		}
		l.event(logjsonl.EventViolation, logjsonl.Violation{Iteration: w.n, IssueID: w.issue, Mode: ModeBuild, Kind: "hidden_change_charged", Detail: detail})
		note := "ralphd: charged with a forbidden change: " + detail + "."
		if w.closed {
			why := "ralphd: reopened: the iteration that closed it is charged with a forbidden change found later, so its close does not count"
			if is, err := l.BD.Reopen(ctx, w.issue, why); err != nil {
				l.human().Warn("could not reopen the close of a charged iteration", "issue", w.issue, "err", err)
			} else {
				// bd keeps the worker's assignee, and no claim takes an
				// assigned issue: free it (claimsleft.go). A worker that
				// still holds it (its work in the merge queue) keeps it
				// all the same: the pool's claims pass over what it holds.
				if leftClaim(is, l.WorkerActor(""), nil) {
					if err := freeClaim(ctx, l.BD, is.ID); err != nil {
						l.human().Warn("could not free the claim on a reopened issue", "issue", is.ID, "err", err)
					}
				}
				note = why + ". " + note
				l.reads().wmu.Lock()
				l.reads().reopened = append(l.reads().reopened, w.issue)
				l.reads().wmu.Unlock()
			}
		}
		// The note says why, a reopened close's too.
		if _, err := l.BD.AppendNotes(ctx, w.issue, note); err != nil {
			l.human().Warn("could not note a charge on the issue", "issue", w.issue, "err", err)
		}
	}
	l.snap.invalidate()
}

package modes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// Fleet planning (issue 33): daemons in clones that share one tracker (bd's
// server mode) plan one at a time, and never while any of them has a BUILD
// window open. There is no coordinator of ralphd's own: the tracker holds
// the state, in three kinds of issue labelled FleetLabel:
//
//   - the anchor, created deferred and then set blocked: never ready, never
//     claimable, never closed. The others depend on it, so bd never offers
//     them as work (a claim of a dependency-blocked issue still works).
//   - the lease: the planner claims it (`bd update <lease> --claim`, bd's
//     atomic claim) as <clone prefix>planner and renews it by writing its
//     notes every quarter of fleet_lease. A lease whose updated_at is older
//     than fleet_lease is expired (its planner crashed): another daemon
//     releases it and claims it.
//   - one member issue per clone: the daemon claims its own, as <clone
//     prefix>fleet, before it opens any BUILD window, renews it the same
//     way while it builds, and releases it once its batch has drained.
//
// The protocol is a pair of flags read after they are written: a builder
// raises its member and then reads the lease (held by another: it lowers
// the member and waits); a planner claims the lease and then waits until
// no other member is raised (or expired). bd's server serialises the
// writes, so at least one of the two sees the other, and a planner never
// plans while a BUILD window of another clone is open. A building daemon
// watches the lease every tick and drains its batch when another claims
// it. So no planner edit falls inside another clone's BUILD window, and
// those windows judge everything else as they always did: nothing is
// exempted for the planner. The only tracker changes a BUILD window
// ignores are the fleet's own issues' (fleetOwns).
//
// What a BUILD agent can do through this (it may reach the Dolt server
// directly, see docs/workers.md): claim the lease or raise a member, which
// makes the other daemons wait (until the lease expires, or until its
// iteration ends); release them, which can let a planner start while a
// window is open, and then the planner's edit is reverted in that window
// as a forbidden change. Neither gets a forbidden change of its own
// accepted: its window judges it. Clocks must agree to well within
// fleet_lease, since expiry compares bd's updated_at with this machine's.

// FleetLabel marks the fleet's own issues: the anchor, the planner lease
// and the members. It is the guard's: BUILD may neither add nor remove it.
const FleetLabel = guard.FleetLabel

// The fleet issues' titles tell their kinds apart.
const (
	fleetAnchorTitle = "ralphd fleet: anchor (keeps the fleet's issues out of bd ready; do not close)"
	fleetLeaseTitle  = "ralphd fleet: planner lease"
	fleetMemberTitle = "ralphd fleet: member "
)

// fleet is one daemon's place among the daemons sharing its tracker.
type fleet struct {
	l       *Loop
	prefix  string // this clone's actor prefix, "ralphd/<host>/<clone>/"
	ttl     time.Duration
	planner *beads.Client // actor prefix+"planner"
	builder *beads.Client // actor prefix+"fleet"

	mu     sync.Mutex
	anchor string
	lease  string
	member string
	known  map[string]bool // the fleet issues read at the last setup
	seen   atomic.Value    // string: the planner last seen ("" none)

	// shownMu guards what the status file (state.FleetFile) last said.
	shownMu sync.Mutex
	shown   string
	wrote   bool
	warned  bool
}

// newFleet returns the fleet of l's daemon, or nil when there is none:
// fleet_lease is 0, or the tracker is not shared (embedded mode).
func newFleet(l *Loop) *fleet {
	if l.Config.FleetLease <= 0 || !beads.ServerMode(l.beadsDir(), l.environ()) {
		return nil
	}
	prefix := l.WorkerActor("")
	f := &fleet{l: l, prefix: prefix, ttl: l.Config.FleetLease,
		planner: l.workerClient(prefix+"planner", l.Dir), builder: l.workerClient(prefix+"fleet", l.Dir)}
	f.seen.Store("")
	return f
}

// plannerActor is the actor this clone's planner claims the lease as.
func (f *fleet) plannerActor() string { return f.prefix + "planner" }

// tick is how often a lease or a member is renewed and watched.
func (f *fleet) tick() time.Duration {
	return min(max(f.ttl/4, 50*time.Millisecond), 30*time.Second)
}

// Planner is the planner last seen holding the lease ("" none).
func (f *fleet) Planner() string { return f.seen.Load().(string) }

// see records h ("" nobody) as the planner last seen holding the lease,
// and, when that changed, writes it to the daemon's status file
// (state.FleetFile) with the time, for `ralphd status` and the dashboard.
// A failed write is warned about once; the planning goes on.
func (f *fleet) see(h string) {
	f.seen.Store(h)
	if f.l.State == nil {
		return
	}
	f.shownMu.Lock()
	defer f.shownMu.Unlock()
	if f.wrote && f.shown == h {
		return
	}
	if err := f.l.State.WriteFleet(f.plannerActor(), f.lease, h, f.l.now()); err != nil {
		if !f.warned {
			f.l.human().Warn("fleet: cannot record who plans for `ralphd status`", "err", err)
			f.warned = true
		}
		return
	}
	f.shown, f.wrote = h, true
}

// close removes the status file: the daemon stops.
func (f *fleet) close() {
	if f == nil || f.l.State == nil {
		return
	}
	if err := f.l.State.ClearFleet(); err != nil {
		f.l.human().Warn("fleet: cannot remove the fleet status file", "err", err)
	}
}

// setup finds the fleet's issues, creating what is missing. Daemons that
// set up at once may each create one; every daemon then takes the oldest
// of each (bd's created_at, then the id), so they agree.
func (f *fleet) setup(ctx context.Context) error {
	f.mu.Lock()
	done := f.member != ""
	f.mu.Unlock()
	if done {
		return nil
	}
	memberTitle := fleetMemberTitle + strings.TrimSuffix(f.prefix, "/")
	for range 2 { // the second pass only reads what the first created
		list, err := f.l.BD.List(ctx, beads.ListOptions{})
		if err != nil {
			return fmt.Errorf("fleet: list the tracker: %w", err)
		}
		anchor, lease, member := f.pick(list, fleetAnchorTitle, ""), "", ""
		if anchor != "" {
			lease, member = f.pick(list, fleetLeaseTitle, anchor), f.pick(list, memberTitle, anchor)
		}
		if anchor != "" && lease != "" && member != "" {
			f.mu.Lock()
			f.anchor, f.lease, f.member = anchor, lease, member
			f.known = map[string]bool{}
			for _, is := range list {
				if f.shaped(is, anchor) {
					f.known[is.ID] = true
				}
			}
			f.mu.Unlock()
			return nil
		}
		if anchor == "" {
			// Created deferred, so it is never ready, not even for the
			// moment until it is set blocked (a deferral ends).
			a, err := f.l.BD.Create(ctx, beads.CreateOptions{Title: fleetAnchorTitle, Labels: []string{FleetLabel}, Defer: "+2d",
				Description: "ralphd's fleet planning keeps its lease and members as issues that depend on this one (docs/workers.md)."})
			if err != nil {
				return fmt.Errorf("fleet: create the anchor issue: %w", err)
			}
			if _, err := f.l.BD.UpdateStatus(ctx, a.ID, beads.StatusBlocked); err != nil {
				return fmt.Errorf("fleet: block the anchor issue %s: %w", a.ID, err)
			}
			anchor = a.ID
		}
		for _, want := range []struct{ title, id string }{{fleetLeaseTitle, lease}, {memberTitle, member}} {
			if want.id != "" {
				continue
			}
			if _, err := f.l.BD.Create(ctx, beads.CreateOptions{Title: want.title, Labels: []string{FleetLabel}, Deps: []string{anchor}}); err != nil {
				return fmt.Errorf("fleet: create %q: %w", want.title, err)
			}
		}
	}
	return errors.New("fleet: the fleet's issues are not in the tracker after creating them")
}

// pick returns the oldest open issue of list with the fleet's label and
// title, depending on anchor (any, for the anchor itself).
func (f *fleet) pick(list []beads.Issue, title, anchor string) string {
	var best *beads.Issue
	for i := range list {
		is := &list[i]
		if is.Title != title || !is.HasLabel(FleetLabel) || is.Status == beads.StatusClosed {
			continue
		}
		if anchor != "" && !dependsOnID(*is, anchor) {
			continue
		}
		if best == nil || is.CreatedAt.Before(best.CreatedAt) || is.CreatedAt.Equal(best.CreatedAt) && is.ID < best.ID {
			best = is
		}
	}
	if best == nil {
		return ""
	}
	return best.ID
}

// shaped reports whether is looks like one of the fleet's issues: its
// label and the anchor itself, or a dependency on it.
func (f *fleet) shaped(is beads.Issue, anchor string) bool {
	return is.HasLabel(FleetLabel) && (is.ID == anchor || dependsOnID(is, anchor))
}

func dependsOnID(is beads.Issue, id string) bool {
	return slices.ContainsFunc(is.Dependencies, func(d beads.Dependency) bool { return d.DependsOnID == id })
}

// owns reports whether a change to issue id that a BUILD window found is
// the fleet's own: a fleet issue known before the window, or one created
// in it (a daemon joining the fleet) that is fleet-shaped. Such an issue
// depends on the never-closed anchor, so it is never worked.
func (f *fleet) owns(id string, before, after guard.Snapshot) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	known, anchor := f.known[id], f.anchor
	f.mu.Unlock()
	if known {
		return true
	}
	_, existed := before[id]
	a, ok := after[id]
	return !existed && ok && anchor != "" && a.Title != fleetAnchorTitle && f.shaped(a, anchor)
}

// ownsChange reports whether v, a forbidden change a BUILD window found,
// is the fleet's own: a claim, release or renewal of a fleet issue known
// before the window (status and assignee), or anything about a
// fleet-shaped issue created in it (a daemon joining the fleet). Any
// other change to a known fleet issue, its label or its dependency on
// the anchor removed, is judged like any other issue's, and reverted.
func (f *fleet) ownsChange(v guard.Violation, before, after guard.Snapshot) bool {
	if !f.owns(v.IssueID, before, after) {
		return false
	}
	if _, existed := before[v.IssueID]; !existed {
		return true
	}
	switch v.Kind {
	case guard.OtherStatus, guard.OtherAssignee, guard.Status:
		return true
	}
	return false
}

// uncount takes the fleet's own issues out of bd's stats, so that the
// daemon's decisions and its idle and summary counts see only real work:
// the lease and the members are never closed and depend on the anchor,
// so each counts once as blocked and once as open or in progress (the
// anchor, status blocked without blockers, counts in neither). They are
// the ones known at the last setup; a clone that joined since counts
// until the next setup. The split between open and in progress is not
// known without a bd call: open goes down first.
func (f *fleet) uncount(st beads.Stats) beads.Stats {
	if f == nil {
		return st
	}
	f.mu.Lock()
	n := 0
	for id := range f.known {
		if id != f.anchor {
			n++
		}
	}
	f.mu.Unlock()
	st.Blocked = max(0, st.Blocked-n)
	fromOpen := min(n, st.Open)
	st.Open -= fromOpen
	st.InProgress = max(0, st.InProgress-(n-fromOpen))
	return st
}

// holder reads the lease and returns who holds it ("" nobody, or an
// expired holding) and whether it is this clone's planner.
func (f *fleet) holder(ctx context.Context) (string, error) {
	is, err := f.l.BD.Show(ctx, f.lease)
	if err != nil {
		return "", fmt.Errorf("fleet: read the planner lease %s: %w", f.lease, err)
	}
	h := ""
	if f.live(is) {
		h = is.Assignee
	}
	f.see(h)
	return h, nil
}

// live reports whether a lease or member issue is held and renewed within
// fleet_lease.
func (f *fleet) live(is beads.Issue) bool {
	return is.Status == beads.StatusInProgress && is.Assignee != "" && f.l.now().Sub(is.UpdatedAt) < f.ttl
}

// renew writes the issue's notes as c's actor, which moves its updated_at.
func (f *fleet) renew(ctx context.Context, c *beads.Client, id, what string) error {
	_, err := c.SetNotes(ctx, id, fmt.Sprintf("%s: %s, renewed %s", what, c.Actor, f.l.now().UTC().Format(time.RFC3339Nano)))
	return err
}

// take claims issue id for c's actor and renews it. A holding that expired
// is released and claimed again. It returns the live holder when that is
// another actor.
func (f *fleet) take(ctx context.Context, c *beads.Client, id, what string) (other string, err error) {
	for try := 0; try < 2; try++ {
		_, err = c.Claim(ctx, id)
		if err == nil {
			return "", f.renew(ctx, c, id, what)
		}
		r, ok := beads.RefusalOf(err)
		if !ok {
			return "", fmt.Errorf("fleet: claim %s: %w", id, err)
		}
		if r.Kind == beads.Serialization {
			continue // a racer won the write; look again
		}
		is, serr := f.l.BD.Show(ctx, id)
		if serr != nil {
			return "", fmt.Errorf("fleet: read %s: %w", id, serr)
		}
		if f.live(is) && is.Assignee != c.Actor {
			return is.Assignee, nil
		}
		// Expired (its holder crashed), or not claimable (someone closed
		// it or set it blocked): free it, then claim it again.
		if _, err := c.Release(ctx, id); err != nil {
			return "", fmt.Errorf("fleet: free the expired %s: %w", id, err)
		}
	}
	return "", fmt.Errorf("fleet: could not claim %s: %w", id, err)
}

// startBuilding raises this clone's member flag, then reads the lease. When
// another daemon holds it, it lowers the flag again and returns that
// planner.
func (f *fleet) startBuilding(ctx context.Context) (planner string, err error) {
	if other, err := f.take(ctx, f.builder, f.member, "building"); err != nil {
		return "", err
	} else if other != "" {
		// Not ralphd's: someone holds this clone's member. Treat it as
		// raised and go on; the planner waits for it to expire.
		f.l.human().Warn("fleet: this clone's member issue is held by another actor", "issue", f.member, "holder", other)
	}
	h, err := f.holder(ctx)
	if err != nil {
		f.stopBuilding(ctx)
		return "", err
	}
	if h != "" && h != f.plannerActor() {
		f.stopBuilding(ctx)
		return h, nil
	}
	return "", nil
}

// watchBuilding renews the member flag every tick while a BUILD batch runs
// and reads the lease; yield reports, without waiting, whether another
// daemon claimed it (the batch then drains). stop ends the watch.
func (f *fleet) watchBuilding(ctx context.Context) (yield func() bool, stop func()) {
	var other atomic.Bool
	stop = f.everyTick(ctx, func(ctx context.Context) bool {
		if err := f.renew(ctx, f.builder, f.member, "building"); err != nil && ctx.Err() == nil {
			f.l.human().Warn("fleet: could not renew this clone's member issue", "issue", f.member, "err", err)
		}
		if h, err := f.holder(ctx); err == nil && h != "" && h != f.plannerActor() {
			other.Store(true)
		}
		return true
	})
	return other.Load, stop
}

// everyTick runs step every tick in a goroutine of its own until step
// returns false or stop is called; stop cancels step's context and waits
// for the goroutine to end. The fleet's renewals (watchBuilding,
// keepLease) run on it.
func (f *fleet) everyTick(ctx context.Context, step func(context.Context) bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(f.tick())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !step(ctx) {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// stopBuilding lowers this clone's member flag.
func (f *fleet) stopBuilding(ctx context.Context) {
	if _, err := f.builder.Release(context.WithoutCancel(ctx), f.member); err != nil {
		f.l.human().Warn("fleet: could not release this clone's member issue; the others wait for it to expire", "issue", f.member, "err", err)
	}
}

// acquire claims the lease for this clone's planner, taking it over when
// it expired, and then waits until no other daemon builds. It returns the
// other planner when one holds the lease.
func (f *fleet) acquire(ctx context.Context) (other string, err error) {
	if other, err := f.take(ctx, f.planner, f.lease, "planning"); err != nil || other != "" {
		if other != "" {
			f.see(other)
		}
		return other, err
	}
	f.see(f.plannerActor())
	said := false
	for {
		raised, err := f.raised(ctx)
		if err != nil {
			f.release(ctx)
			return "", err
		}
		// Renewing confirms the lease is still ours: a daemon that read it
		// as expired just before we took it may have freed and taken it.
		if other, err := f.take(ctx, f.planner, f.lease, "planning"); err != nil || other != "" {
			return other, err
		}
		if len(raised) == 0 {
			return "", nil
		}
		if !said {
			f.l.human().Info("fleet: waiting for the other daemons' BUILD windows to close before planning", "building", strings.Join(raised, ", "))
			f.l.status("fleet: waiting for %s to drain before planning", strings.Join(raised, ", "))
			said = true
		}
		if err := f.l.sleep(ctx, f.tick()); err != nil {
			f.release(ctx)
			return "", err
		}
	}
}

// plan runs run under the planner lease: it takes the lease (acquire:
// waiting for the other daemons' BUILD windows to drain), renews it while
// run runs, cancels run's context when another daemon is found holding
// it, and gives it back. other is the live holder when another daemon
// holds the lease; run is then not called, nor when err comes from taking
// the lease.
func (f *fleet) plan(ctx context.Context, run func(context.Context) error) (other string, err error) {
	if other, err := f.acquire(ctx); err != nil || other != "" {
		return other, err
	}
	defer f.release(ctx)
	lost, stop := f.keepLease(ctx)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lost:
			cancel() // another daemon holds the lease: stop planning now
		case <-pctx.Done():
		}
	}()
	err = run(pctx)
	stop()
	return "", err
}

// raised lists the other clones' live member flags, from one `bd list
// --status in_progress` (members hold no other status while raised).
func (f *fleet) raised(ctx context.Context) ([]string, error) {
	list, err := f.l.BD.List(ctx, beads.ListOptions{Status: beads.StatusInProgress})
	if err != nil {
		return nil, fmt.Errorf("fleet: list the raised members: %w", err)
	}
	f.mu.Lock()
	anchor := f.anchor
	f.mu.Unlock()
	var out []string
	for _, is := range list {
		if is.ID == f.member || !strings.HasPrefix(is.Title, fleetMemberTitle) || !f.shaped(is, anchor) || !f.live(is) {
			continue
		}
		out = append(out, is.Assignee)
	}
	return out, nil
}

// keepLease renews the lease every tick while this clone plans; lost is
// closed when the lease is found held by another (the planning then
// stops). stop ends the renewal.
func (f *fleet) keepLease(ctx context.Context) (lost <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	stop = f.everyTick(ctx, func(ctx context.Context) bool {
		other, err := f.take(ctx, f.planner, f.lease, "planning")
		if other != "" {
			f.see(other)
			f.l.human().Error("fleet: another daemon took the planner lease; stopping this plan", "holder", other)
			close(ch)
			return false
		}
		if err != nil && ctx.Err() == nil {
			f.l.human().Warn("fleet: could not renew the planner lease", "err", err)
		}
		return true
	})
	return ch, stop
}

// release gives the lease up.
func (f *fleet) release(ctx context.Context) {
	if _, err := f.planner.Release(context.WithoutCancel(ctx), f.lease); err != nil {
		f.l.human().Warn("fleet: could not release the planner lease; the others wait for it to expire", "issue", f.lease, "err", err)
	}
	f.see("")
}

// waitLease waits, a tick at a time, until nobody else holds the lease.
func (f *fleet) waitLease(ctx context.Context, holder string) error {
	f.l.human().Info("fleet: another daemon plans; waiting", "planner", holder)
	f.l.status("fleet: %s plans; waiting", holder)
	for {
		if err := f.l.sleep(ctx, f.tick()); err != nil {
			return err
		}
		h, err := f.holder(ctx)
		if err != nil {
			return err
		}
		if h == "" || h == f.plannerActor() {
			return nil
		}
	}
}

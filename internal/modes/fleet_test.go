package modes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/state"
)

// fleetLoops returns n Loops in n clones of one tracker in the stand-in's
// server mode, each with its fleet set up, and the seed's bd.
func fleetLoops(t *testing.T, n int, ttl time.Duration, now func() time.Time) ([]*Loop, *beads.Client) {
	t.Helper()
	bin, root, seed, remote := sharedTracker(t, "fl")
	seedBD := &beads.Client{Bin: bin, Dir: seed, Timeout: time.Minute}
	var loops []*Loop
	for i := range n {
		dir := filepath.Join(root, "clone-"+string(rune('a'+i)))
		sh(t, root, "git", "clone", "-q", remote, dir)
		st, err := state.Open(context.Background(), filepath.Join(root, "state-"+string(rune('a'+i))), state.Identity{ID: "0123456789ab", TopLevel: dir}, "")
		if err != nil {
			t.Fatal(err)
		}
		l := &Loop{Deps: Deps{Dir: dir, Config: &config.Config{FleetLease: ttl, Poll: time.Second}, State: st, Now: now,
			BD: &beads.Client{Bin: bin, Dir: dir, Timeout: time.Minute}}}
		l.fleet = newFleet(l)
		if l.fleet == nil {
			t.Fatal("no fleet in server mode")
		}
		if err := l.fleet.setup(context.Background()); err != nil {
			t.Fatal(err)
		}
		loops = append(loops, l)
	}
	return loops, seedBD
}

// TestFleetOnePlannerAndTakeover: the fleet's clones agree on one lease;
// while one plans, another can neither plan nor build; a builder makes the
// planner wait; a lease left unrenewed past fleet_lease is taken over.
func TestFleetOnePlannerAndTakeover(t *testing.T) {
	ctx := context.Background()
	clock := time.Now()
	now := func() time.Time { return clock }
	loops, seed := fleetLoops(t, 2, time.Minute, now)
	a, b := loops[0].fleet, loops[1].fleet
	// Each daemon holds its project's lock, so `ralphd status` shows its
	// fleet file (fleetSays).
	for _, l := range loops {
		lock, err := l.State.Lock("daemon")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = lock.Release() })
	}
	clock = time.Now()
	if a.lease != b.lease || a.anchor != b.anchor || a.member == b.member {
		t.Fatalf("clones disagree: a %s/%s/%s b %s/%s/%s", a.anchor, a.lease, a.member, b.anchor, b.lease, b.member)
	}
	// The fleet's issues are never offered as work.
	ready, err := seed.Ready(ctx, beads.ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, is := range ready {
		if is.HasLabel(FleetLabel) {
			t.Fatalf("bd ready offers the fleet's %s", is.ID)
		}
	}

	// b builds: a, about to plan, takes the lease but must wait for b.
	if p, err := b.startBuilding(ctx); err != nil || p != "" {
		t.Fatalf("b start building: %q %v", p, err)
	}
	raised, err := a.raised(ctx)
	if err != nil || len(raised) != 1 {
		t.Fatalf("a sees raised members %v (%v), want b's", raised, err)
	}
	b.stopBuilding(ctx)
	fleetSays(t, loops[1], "", false) // b read the lease free
	if other, err := a.acquire(ctx); err != nil || other != "" {
		t.Fatalf("a acquire: %q %v", other, err)
	}
	fleetSays(t, loops[0], a.plannerActor(), true)
	// a plans: b may neither plan nor build.
	if other, err := b.acquire(ctx); err != nil || other != a.plannerActor() {
		t.Fatalf("b acquire while a plans: %q %v", other, err)
	}
	fleetSays(t, loops[1], a.plannerActor(), false)
	if p, err := b.startBuilding(ctx); err != nil || p != a.plannerActor() {
		t.Fatalf("b start building while a plans: %q %v", p, err)
	}
	if raised, _ := a.raised(ctx); len(raised) != 0 {
		t.Fatalf("b left its member raised after backing off: %v", raised)
	}
	// a dies mid-plan: once the lease is older than fleet_lease, b takes it.
	clock = clock.Add(2 * time.Minute)
	if other, err := b.acquire(ctx); err != nil || other != "" {
		t.Fatalf("b takeover after expiry: %q %v", other, err)
	}
	clock = time.Now() // the stand-in stamps updated_at with the real clock
	if h, _ := a.holder(ctx); h != b.plannerActor() {
		t.Fatalf("holder after takeover %q", h)
	}
	fleetSays(t, loops[0], b.plannerActor(), false)
	fleetSays(t, loops[1], b.plannerActor(), true)
	b.release(ctx)
	fleetSays(t, loops[1], "", false)
	if h, _ := a.holder(ctx); h != "" {
		t.Fatalf("holder after release %q", h)
	}
	fleetSays(t, loops[0], "", false)
	// The daemon stops: the file goes, and status shows no fleet.
	a.close()
	if f, note := loops[0].State.Fleet(); f != nil || note != "" {
		t.Fatalf("fleet status after close: %+v %q", f, note)
	}
}

// fleetSays checks what l's daemon recorded for `ralphd status` and the
// dashboard: planner holds l's fleet's lease (this daemon or not).
func fleetSays(t *testing.T, l *Loop, planner string, this bool) {
	t.Helper()
	f, note := l.State.Fleet()
	if f == nil {
		t.Fatalf("no fleet status (%s)", note)
	}
	if f.Planner != planner || f.ThisClone != this || f.Lease != l.fleet.lease || f.Since.IsZero() {
		t.Fatalf("fleet status %+v, want planner %q (this clone %v) on lease %s", *f, planner, this, l.fleet.lease)
	}
	if planner != "" && (f.PlannerHost == "" || !strings.Contains(planner, "/"+f.PlannerClone+"/")) {
		t.Fatalf("fleet status %+v does not name the planner's host and clone", *f)
	}
}

// TestFleetOwns: a BUILD window leaves alone only the fleet's own issues:
// not a real issue an agent labelled or hung on the anchor, not an issue
// it created without the fleet's shape.
func TestFleetOwns(t *testing.T) {
	f := &fleet{anchor: "x-a", known: map[string]bool{"x-a": true, "x-l": true, "x-m": true}}
	dep := []beads.Dependency{{DependsOnID: "x-a", Type: "blocks"}}
	before := guard.Snapshot{
		"x-a": {ID: "x-a", Labels: []string{FleetLabel}},
		"x-l": {ID: "x-l", Labels: []string{FleetLabel}, Dependencies: dep},
		"x-1": {ID: "x-1", Title: "real"},
	}
	for _, tc := range []struct {
		name  string
		id    string
		after beads.Issue
		want  bool
	}{
		{"the lease, claimed", "x-l", beads.Issue{ID: "x-l", Status: beads.StatusInProgress, Labels: []string{FleetLabel}, Dependencies: dep}, true},
		{"a member created in the window", "x-n", beads.Issue{ID: "x-n", Title: fleetMemberTitle + "z", Labels: []string{FleetLabel}, Dependencies: dep}, true},
		{"a real issue labelled and hung on the anchor", "x-1", beads.Issue{ID: "x-1", Status: beads.StatusClosed, Labels: []string{FleetLabel}, Dependencies: dep}, false},
		{"a created issue with the label only", "x-o", beads.Issue{ID: "x-o", Labels: []string{FleetLabel}}, false},
		{"a created issue on the anchor without the label", "x-p", beads.Issue{ID: "x-p", Dependencies: dep}, false},
		{"a second anchor", "x-q", beads.Issue{ID: "x-q", Title: fleetAnchorTitle, Labels: []string{FleetLabel}, Dependencies: dep}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := guard.Snapshot{tc.id: tc.after}
			if got := f.owns(tc.id, before, after); got != tc.want {
				t.Fatalf("owns(%s) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
	// What a BUILD window may find on the fleet's issues: their claims
	// and releases are the fleet's; their label or their hold on the
	// anchor taken away is an agent's, and reverted.
	lease := before["x-l"]
	for _, tc := range []struct {
		name  string
		v     guard.Violation
		after beads.Issue
		want  bool
	}{
		{"the lease claimed", guard.Violation{Kind: guard.OtherStatus, IssueID: "x-l"}, beads.Issue{ID: "x-l", Status: beads.StatusInProgress, Labels: lease.Labels, Dependencies: dep}, true},
		{"the lease's assignee", guard.Violation{Kind: guard.OtherAssignee, IssueID: "x-l"}, beads.Issue{ID: "x-l", Assignee: "ralphd/h/c/planner", Labels: lease.Labels, Dependencies: dep}, true},
		{"the lease's label removed", guard.Violation{Kind: guard.LabelRemoved, IssueID: "x-l", Label: FleetLabel}, beads.Issue{ID: "x-l", Dependencies: dep}, false},
		{"the lease off the anchor", guard.Violation{Kind: guard.DepRemoved, IssueID: "x-l"}, beads.Issue{ID: "x-l", Labels: lease.Labels}, false},
		{"the lease retitled", guard.Violation{Kind: guard.Title, IssueID: "x-l"}, beads.Issue{ID: "x-l", Title: "mine now", Labels: lease.Labels, Dependencies: dep}, false},
		{"a member created in the window", guard.Violation{Kind: guard.ReservedLabelAdded, IssueID: "x-n", Label: FleetLabel}, beads.Issue{ID: "x-n", Title: fleetMemberTitle + "z", Labels: []string{FleetLabel}, Dependencies: dep}, true},
		{"a real issue labelled", guard.Violation{Kind: guard.ReservedLabelAdded, IssueID: "x-1", Label: FleetLabel}, beads.Issue{ID: "x-1", Title: "real", Labels: []string{FleetLabel}, Dependencies: dep}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := guard.Snapshot{tc.v.IssueID: tc.after}
			if got := f.ownsChange(tc.v, before, after); got != tc.want {
				t.Fatalf("ownsChange(%s %s) = %v, want %v", tc.v.Kind, tc.v.IssueID, got, tc.want)
			}
		})
	}
	if (*fleet)(nil).owns("x-l", before, before) {
		t.Fatal("no fleet owns nothing")
	}
}

// TestFleetUncount: bd's stats on a fleet tracker count the lease and the
// members as blocked and open (or in progress); the daemon's counts leave
// them out, and never go below zero.
func TestFleetUncount(t *testing.T) {
	ctx := context.Background()
	loops, seed := fleetLoops(t, 2, time.Minute, time.Now)
	a := loops[0].fleet
	if err := loops[1].fleet.setup(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.member = "" // set up again: read the other clone's member too
	a.mu.Unlock()
	if err := a.setup(ctx); err != nil {
		t.Fatal(err)
	}
	empty, err := seed.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.uncount(empty); got.Open+got.InProgress != 0 || got.Blocked != 0 {
		t.Fatalf("a tracker with only the fleet's issues: bd says %+v, uncounted %+v; want nothing open or blocked", empty, got)
	}
	// A builder raised: in progress, still left out.
	if _, err := a.startBuilding(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Create(ctx, beads.CreateOptions{Title: "real work"}); err != nil {
		t.Fatal(err)
	}
	st, err := seed.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.uncount(st); got.Open+got.InProgress != 1 || got.Blocked != 0 {
		t.Fatalf("one real issue beside a raised member: bd says %+v, uncounted %+v", st, got)
	}
	if got := (*fleet)(nil).uncount(st); got != st {
		t.Fatal("no fleet changed the stats")
	}
}

// TestPlanByHandRefusedWhileAnotherPlans: `ralphd plan` on a fleet
// tracker while another ralphd holds the planner lease plans nothing and
// says who plans; the holder keeps its lease, and this clone leaves no
// member raised and no fleet status behind. (Taking the lease is in the
// fleet_plan_by_hand scenario, which runs a planner.)
func TestPlanByHandRefusedWhileAnotherPlans(t *testing.T) {
	ctx := context.Background()
	loops, _ := fleetLoops(t, 2, time.Minute, time.Now)
	a, b := loops[0].fleet, loops[1]
	if other, err := a.acquire(ctx); err != nil || other != "" {
		t.Fatalf("a acquire: %q %v", other, err)
	}
	b.fleet = nil // as `ralphd plan` starts: no daemon's fleet
	res, err := b.Plan(ctx, 1)
	if !errors.Is(err, ErrFleetPlanning) || res != nil {
		t.Fatalf("plan while a plans: %v, %v; want ErrFleetPlanning", res, err)
	}
	for _, want := range []string{a.plannerActor(), a.lease, "on host "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if b.fleet != nil {
		t.Fatal("Plan left its fleet on the Loop")
	}
	if h, err := a.holder(ctx); err != nil || h != a.plannerActor() {
		t.Fatalf("lease holder after the refusal: %q %v", h, err)
	}
	if raised, _ := a.raised(ctx); len(raised) != 0 {
		t.Fatalf("the refused plan left members raised: %v", raised)
	}
	if _, err := os.Stat(filepath.Join(b.State.Dir(), state.FleetFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused plan left %s: %v", state.FleetFile, err)
	}
}

// TestFleetEveryTick checks the runner both renewals share: it steps on
// every tick until the step says stop, and stop cancels the step's
// context and waits for the goroutine.
func TestFleetEveryTick(t *testing.T) {
	f := &fleet{ttl: time.Millisecond} // the shortest tick, 50ms
	t.Run("the step ends it", func(t *testing.T) {
		var n atomic.Int32
		ended := make(chan struct{})
		stop := f.everyTick(context.Background(), func(context.Context) bool {
			if n.Add(1) == 3 {
				close(ended)
				return false
			}
			return true
		})
		<-ended
		stop() // returns although the goroutine already ended
		if got := n.Load(); got != 3 {
			t.Fatalf("steps = %d, want 3", got)
		}
	})
	t.Run("stop cancels a step in progress", func(t *testing.T) {
		in := make(chan struct{})
		var sawCancel atomic.Bool
		stop := f.everyTick(context.Background(), func(ctx context.Context) bool {
			close(in)
			<-ctx.Done() // a renewal blocked in bd until stop
			sawCancel.Store(true)
			return true
		})
		<-in
		stop()
		if !sawCancel.Load() {
			t.Fatal("stop returned before the step saw its context cancelled")
		}
	})
	t.Run("the parent's cancel ends it", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var n atomic.Int32
		stop := f.everyTick(ctx, func(context.Context) bool { n.Add(1); return true })
		cancel()
		stop()
		before := n.Load()
		time.Sleep(2 * f.tick())
		if after := n.Load(); after != before {
			t.Fatalf("stepped %d times after stop", after-before)
		}
	})
}

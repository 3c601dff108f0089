package modes

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// epicSnap is a reading: e (an epic) with children e.1 and e.2, f (an
// epic) with child f.1, g (an epic without children), t (a task) with
// child t.1, and c (a closed epic) with child c.1; statuses as given.
func epicSnap(status map[string]string) guard.Snapshot {
	s := guard.Snapshot{}
	add := func(id, typ, parent string) {
		st := status[id]
		if st == "" {
			st = beads.StatusOpen
		}
		s[id] = beads.Issue{ID: id, IssueType: typ, Parent: parent, Status: st}
	}
	add("e", beads.TypeEpic, "")
	add("e.1", "task", "e")
	add("e.2", "task", "e")
	add("f", beads.TypeEpic, "")
	add("f.1", "task", "f")
	add("g", beads.TypeEpic, "")
	add("t", "task", "")
	add("t.1", "task", "t")
	s["c"] = beads.Issue{ID: "c", IssueType: beads.TypeEpic, Status: beads.StatusClosed}
	add("c.1", "task", "c")
	return s
}

func TestEpicFamily(t *testing.T) {
	closed := beads.StatusClosed
	for _, tc := range []struct {
		name      string
		status    map[string]string
		held      map[string]bool
		waits     map[string][]string // issue → children it waits on (others: none)
		some, all bool
		text      string
	}{
		{
			name:  "children open",
			waits: map[string][]string{"e": {"e.1", "e.2"}, "f": {"f.1"}},
			some:  true,
			text:  "e on e.1, e.2; f on f.1",
		},
		{
			name:   "one child closed",
			status: map[string]string{"e.1": closed},
			waits:  map[string][]string{"e": {"e.2"}, "f": {"f.1"}},
			some:   true,
			text:   "e on e.2; f on f.1",
		},
		{
			name:   "every child closed",
			status: map[string]string{"e.1": closed, "e.2": closed, "f.1": closed},
		},
		{
			name:   "a closed child a worker still holds",
			status: map[string]string{"e.1": closed, "e.2": closed, "f.1": closed},
			held:   map[string]bool{"e.2": true},
			waits:  map[string][]string{"e": {"e.2"}},
			some:   true,
			text:   "e on e.2",
		},
		{
			name:   "a child in progress; an epic in progress is not listed",
			status: map[string]string{"e.1": beads.StatusInProgress, "f": beads.StatusInProgress},
			waits:  map[string][]string{"e": {"e.1", "e.2"}, "f": {"f.1"}},
			some:   true,
			text:   "e on e.1, e.2",
		},
		{
			name:   "every epic with children waits, the childless one does not",
			status: map[string]string{"g": closed},
			waits:  map[string][]string{"e": {"e.1", "e.2"}, "f": {"f.1"}},
			some:   true, all: true,
			text: "e on e.1, e.2; f on f.1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := familyOf(epicSnap(tc.status))
			for _, id := range []string{"e", "f", "g", "t", "t.1", "c", "c.1", "e.1", "nope"} {
				got := f.waitsOn(id, tc.held)
				if !slices.Equal(got, tc.waits[id]) {
					t.Errorf("waitsOn(%s) = %v, want %v", id, got, tc.waits[id])
				}
			}
			some, all := f.waiting(tc.held)
			is.Equal(some, tc.some)
			is.Equal(all, tc.all)
			if tc.held == nil {
				is.Equal(f.waitingText(), tc.text)
			}
		})
	}
}

// claimFake is bd for claimNext: it lists ready, claims, and logs each
// call as its argv would read.
type claimFake struct {
	ready  []beads.Issue
	actor  string
	log    []string
	claims map[string]bool
}

func (f *claimFake) Ready(_ context.Context, opts beads.ReadyOptions) ([]beads.Issue, error) {
	f.log = append(f.log, strings.TrimSpace("ready "+opts.Parent))
	var out []beads.Issue
	for _, is := range f.ready {
		if !f.claims[is.ID] {
			out = append(out, is)
		}
	}
	return out, nil
}

func (f *claimFake) ReadyClaim(_ context.Context, flt beads.ClaimFilter) (beads.Issue, bool, error) {
	call := "ready --claim"
	for _, t := range flt.ExcludeTypes {
		call += " --exclude-type " + t
	}
	f.log = append(f.log, call)
	for _, is := range f.ready {
		if f.claims[is.ID] || slices.Contains(flt.ExcludeTypes, is.IssueType) {
			continue
		}
		f.claims[is.ID] = true
		return is, true, nil
	}
	return beads.Issue{}, false, nil
}

func (f *claimFake) Claim(_ context.Context, id string) (beads.Issue, error) {
	f.log = append(f.log, "update --claim "+id)
	f.claims[id] = true
	return beads.Issue{ID: id}, nil
}

func (f *claimFake) Show(_ context.Context, id string) (beads.Issue, error) {
	return beads.Issue{ID: id, Status: beads.StatusInProgress, Assignee: f.actor}, nil
}

func (f *claimFake) Release(_ context.Context, id string) (beads.Issue, error) {
	return beads.Issue{ID: id, Status: beads.StatusOpen}, nil
}

// TestClaimNextPassesOverWaitingEpics: a worker's claim is one `bd ready
// --claim` while no epic waits, and when every epic does (bd passes over
// the epics, and the whole list is asked only when that finds nothing);
// the list and a claim by id when only some wait. A waiting epic is never
// claimed, a workable one is.
func TestClaimNextPassesOverWaitingEpics(t *testing.T) {
	epic := func(id string) beads.Issue {
		return beads.Issue{ID: id, IssueType: beads.TypeEpic, Status: beads.StatusOpen}
	}
	task := func(id string) beads.Issue { return beads.Issue{ID: id, IssueType: "task", Status: beads.StatusOpen} }
	closed := beads.StatusClosed
	for _, tc := range []struct {
		name   string
		status map[string]string
		held   []string
		ready  []beads.Issue // bd's ready, in its order
		scope  string
		want   string // the issue won ("" none)
		calls  []string
	}{
		{
			name:   "no epic waits: one call",
			status: map[string]string{"e.1": closed, "e.2": closed, "f.1": closed},
			ready:  []beads.Issue{epic("e"), task("x")},
			want:   "e",
			calls:  []string{"ready --claim"},
		},
		{
			name:   "every epic waits: bd passes over the epics",
			status: map[string]string{"g": closed},
			ready:  []beads.Issue{epic("e"), epic("f"), task("x")},
			want:   "x",
			calls:  []string{"ready --claim --exclude-type epic"},
		},
		{
			name:   "every epic waits and nothing else is ready: the whole list is asked",
			status: map[string]string{"g": closed},
			ready:  []beads.Issue{epic("e"), epic("new")},
			want:   "new",
			calls:  []string{"ready --claim --exclude-type epic", "ready", "update --claim new"},
		},
		{
			name:  "some epics wait: the list, and a claim by id",
			ready: []beads.Issue{epic("e"), epic("g"), task("x")},
			want:  "g",
			calls: []string{"ready", "update --claim g"},
		},
		{
			name:   "a closed child a worker holds keeps its epic waiting",
			status: map[string]string{"e.1": closed, "e.2": closed, "f.1": closed},
			held:   []string{"e.2"},
			ready:  []beads.Issue{epic("e"), task("x")},
			want:   "x",
			calls:  []string{"ready", "update --claim x"},
		},
		{
			name:   "scoped: the scope's list, the waiting epic passed over",
			status: map[string]string{"g": closed},
			scope:  "root",
			ready:  []beads.Issue{epic("e"), task("x")},
			want:   "x",
			calls:  []string{"ready root", "update --claim x"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			fake := &claimFake{ready: tc.ready, actor: "w1", claims: map[string]bool{}}
			p := &Pool{PoolSetup: PoolSetup{Scope: tc.scope}}
			if tc.scope != "" {
				p.InScope = func(beads.Issue) bool { return true }
			}
			p.epics.Store(familyOf(epicSnap(tc.status)))
			for _, id := range tc.held {
				_, _ = p.hold(id, "w2")
			}
			res, err := p.claimNext(context.Background(), &beads.Claimer{Tracker: fake, Actor: "w1"})
			is.NoErr(err)
			if tc.want == "" {
				is.Equal(res.Outcome, beads.Empty)
			} else {
				is.Equal(res.Outcome, beads.Won)
				is.Equal(res.Issue.ID, tc.want)
			}
			is.Equal(fake.log, tc.calls)
		})
	}
}

// TestReadyLeft: what the pool's last `bd ready` holds that a worker
// should have taken: not an issue stuck, someone's (named apart), the
// fleet's, out of scope, or an epic waiting on its children; an epic
// whose children are closed is left.
func TestReadyLeft(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	l, p := pinLoop(t)
	free := p.create("free")
	stuck := p.create("stuck")
	sh(t, p.repo, p.bd, "label", "add", stuck, StuckLabel)
	theirs := p.create("theirs")
	sh(t, p.repo, p.bd, "update", theirs, "--assignee", "bob")
	fleet := p.create("fleet's")
	sh(t, p.repo, p.bd, "label", "add", fleet, FleetLabel)
	waiting := p.create("waiting epic", "-t", "epic")
	p.create("its child", "--parent", waiting)
	done := p.create("done epic", "-t", "epic")
	child := p.create("its closed child", "--parent", done)
	sh(t, p.repo, p.bd, "close", child, "--reason", "done")

	pool := &Pool{}
	left, elsewhere := l.readyLeft(ctx, pool)
	slices.Sort(left)
	want := []string{done, free, waiting + ".1"}
	slices.Sort(want)
	is.Equal(left, want)
	is.Equal(elsewhere, []string{theirs + " (bob)"})

	// Out of scope is not left either.
	pool.InScope = func(i beads.Issue) bool { return i.ID != free }
	left, _ = l.readyLeft(ctx, pool)
	is.True(!slices.Contains(left, free))
	is.True(slices.Contains(left, done))
}

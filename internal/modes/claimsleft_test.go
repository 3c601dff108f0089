package modes

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/state"
)

// TestLeftClaim: an open issue assigned to one of this clone's worker
// actors that nobody holds is a claim left behind; an issue in progress,
// closed, someone else's (a person, another clone), the fleet's, or held
// by a worker now is not.
func TestLeftClaim(t *testing.T) {
	const prefix = "ralphd/host/abc/"
	holds := func(id string) bool { return id == "t-held" }
	for _, tc := range []struct {
		name string
		is   beads.Issue
		held func(string) bool
		want bool
	}{
		{"reopened after a worker closed it", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: prefix + "w2"}, nil, true},
		{"held by a worker now", beads.Issue{ID: "t-held", Status: beads.StatusOpen, Assignee: prefix + "w1"}, holds, false},
		{"nobody holds it", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: prefix + "w1"}, holds, true},
		{"in progress: a claim", beads.Issue{ID: "t-a", Status: beads.StatusInProgress, Assignee: prefix + "w1"}, nil, false},
		{"closed", beads.Issue{ID: "t-a", Status: beads.StatusClosed, Assignee: prefix + "w1"}, nil, false},
		{"blocked by its agent", beads.Issue{ID: "t-a", Status: beads.StatusBlocked, Assignee: prefix + "w1"}, nil, false},
		{"a person's", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: "dave"}, nil, false},
		{"another clone's", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: "ralphd/host/def/w1"}, nil, false},
		{"a prefix of ours as a longer name", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: "ralphd/host/abcd/w1"}, nil, false},
		{"unassigned", beads.Issue{ID: "t-a", Status: beads.StatusOpen}, nil, false},
		{"the fleet's", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: prefix + "w1", Labels: []string{FleetLabel}}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := leftClaim(tc.is, prefix, tc.held); got != tc.want {
				t.Errorf("leftClaim(%+v) = %v, want %v", tc.is, got, tc.want)
			}
		})
	}
	if leftClaim(beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: "x"}, "", nil) {
		t.Error("an empty prefix names every actor: no claim is left behind by it")
	}
}

// TestPassedOver: workers pass over a ready issue assigned to anyone but
// a claim this clone's workers left behind; the single loop on a tracker
// of its own takes it whatever its assignee.
func TestPassedOver(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(context.Background(), filepath.Join(dir, "state"), state.Identity{ID: "0123456789ab", TopLevel: dir}, "")
	if err != nil {
		t.Fatal(err)
	}
	l := &Loop{Deps: Deps{Dir: dir, Config: &config.Config{}, State: st}}
	own := l.WorkerActor("w2")
	for _, tc := range []struct {
		name    string
		is      beads.Issue
		workers int
		want    bool
	}{
		{"a person's, workers", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: "dave"}, 2, true},
		{"another clone's, workers", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: "ralphd/elsewhere/abc/w1"}, 8, true},
		{"left behind by this clone, workers", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: own}, 2, false},
		{"unassigned, workers", beads.Issue{ID: "t-a", Status: beads.StatusOpen}, 2, false},
		{"a person's, one loop on its own tracker", beads.Issue{ID: "t-a", Status: beads.StatusOpen, Assignee: "dave"}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := l.passedOver(tc.is, tc.workers); got != tc.want {
				t.Errorf("passedOver(%q, %d workers) = %v, want %v", tc.is.Assignee, tc.workers, got, tc.want)
			}
		})
	}
}

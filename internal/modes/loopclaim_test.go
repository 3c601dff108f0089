package modes

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/state"
)

// TestOtherRalphd: a single loop's judgement on a shared tracker leaves
// another ralphd's claim, close and release alone, and nothing else: not
// a person's, not an issue moved to this clone's own actors, not a close
// of an issue nobody's ralphd holds.
func TestOtherRalphd(t *testing.T) {
	const own, other = "ralphd/h/aaa/", "ralphd/h/bbb/w1"
	is := func(status, assignee string) beads.Issue {
		return beads.Issue{ID: "lc-1", Status: status, Assignee: assignee}
	}
	for _, tc := range []struct {
		name          string
		before, after beads.Issue
		kind          guard.Kind
		want          bool
	}{
		{"their claim", is("open", ""), is("in_progress", other), guard.OtherStatus, true},
		{"their claim's assignee", is("open", ""), is("in_progress", other), guard.OtherAssignee, true},
		{"their close", is("in_progress", other), is("closed", other), guard.OtherStatus, true},
		{"claimed and closed in the window", is("open", ""), is("closed", other), guard.OtherStatus, true},
		{"their release", is("in_progress", other), is("open", ""), guard.OtherStatus, true},
		{"their agent's blocked, released", is("in_progress", other), is("blocked", ""), guard.OtherStatus, true},
		{"their agent sets its issue blocked", is("in_progress", other), is("blocked", other), guard.OtherStatus, true},
		// Attacks: what this clone's agent might do to another issue.
		{"blocked under a made-up ralphd actor", is("open", ""), is("blocked", other), guard.OtherStatus, false},
		{"a person's issue closed", is("open", "alice"), is("closed", "alice"), guard.OtherStatus, false},
		{"a claim as a person", is("open", ""), is("in_progress", "alice"), guard.OtherStatus, false},
		{"a claim as this clone's own worker", is("open", ""), is("in_progress", own+"w1"), guard.OtherStatus, false},
		{"their issue closed as a person", is("in_progress", other), is("closed", "alice"), guard.OtherStatus, false},
		{"their issue released and closed", is("in_progress", other), is("closed", ""), guard.OtherStatus, false},
		{"not a status or assignee change", is("open", ""), is("in_progress", other), guard.Priority, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := guard.NewSnapshot([]beads.Issue{tc.before}), guard.NewSnapshot([]beads.Issue{tc.after})
			if got := otherRalphd(guard.Violation{Kind: tc.kind, IssueID: "lc-1"}, before, after, own); got != tc.want {
				t.Fatalf("otherRalphd = %v, want %v", got, tc.want)
			}
		})
	}
}

// loopClones returns n single loops in n clones of one tracker in the
// stand-in's server mode, and the seed's bd.
func loopClones(t *testing.T, n int) ([]*Loop, *beads.Client) {
	t.Helper()
	bin, root, seed, remote := sharedTracker(t, "lc")
	var loops []*Loop
	for i := range n {
		c := string(rune('a' + i))
		dir := filepath.Join(root, "clone-"+c)
		sh(t, root, "git", "clone", "-q", remote, dir)
		st, err := state.Open(context.Background(), filepath.Join(root, "state-"+c), state.Identity{ID: "0123456789ab", TopLevel: dir}, "")
		if err != nil {
			t.Fatal(err)
		}
		loops = append(loops, &Loop{Deps: Deps{Dir: dir, Config: &config.Config{}, State: st,
			BD: &beads.Client{Bin: bin, Dir: dir, Timeout: time.Minute}}})
	}
	return loops, &beads.Client{Bin: bin, Dir: seed, Timeout: time.Minute}
}

// TestLoopClaims: two clones' single loops claim one issue; one wins, the
// other loses without an error; the winner's claim is given back after
// its iteration (open, or its status kept and the assignee dropped) and
// kept when closed; a run's start gives back what a crashed run left, and
// nothing of the other clone's or of the fleet's.
func TestLoopClaims(t *testing.T) {
	ctx := context.Background()
	loops, seed := loopClones(t, 2)
	a, b := loops[0], loops[1]
	if !a.claimsShared() || !b.claimsShared() {
		t.Fatal("a single loop in server mode does not claim")
	}
	for _, id := range []string{"lc-1", "lc-2", "lc-3", "lc-4"} {
		if _, err := seed.Create(ctx, beads.CreateOptions{ID: id, Title: "Issue " + id}); err != nil {
			t.Fatal(err)
		}
	}
	show := func(id string) beads.Issue {
		t.Helper()
		is, err := seed.Show(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	one := beads.Issue{ID: "lc-1"}
	if won, err := a.claimPick(ctx, one); err != nil || !won {
		t.Fatalf("a's claim: won %v, err %v", won, err)
	}
	if won, err := b.claimPick(ctx, one); err != nil || won {
		t.Fatalf("b's claim of a's issue: won %v, err %v; want a lost race", won, err)
	}
	if !b.heldByOther(show("lc-1")) || a.heldByOther(show("lc-1")) {
		t.Fatal("heldByOther does not tell a's claim from b's")
	}
	// Given back after the iteration: open and unassigned.
	a.dropLoopClaim(ctx, "lc-1")
	if is := show("lc-1"); is.Status != beads.StatusOpen || is.Assignee != "" {
		t.Fatalf("after the drop: %s %q", is.Status, is.Assignee)
	}
	// Blocked by its agent: stays blocked, loses the assignee.
	if won, _ := a.claimPick(ctx, beads.Issue{ID: "lc-2"}); !won {
		t.Fatal("a lost t-2")
	}
	if _, err := seed.UpdateStatus(ctx, "lc-2", beads.StatusBlocked); err != nil {
		t.Fatal(err)
	}
	a.dropLoopClaim(ctx, "lc-2")
	if is := show("lc-2"); is.Status != beads.StatusBlocked || is.Assignee != "" {
		t.Fatalf("blocked after the drop: %s %q", is.Status, is.Assignee)
	}
	// Closed: stays as it is.
	if won, _ := a.claimPick(ctx, beads.Issue{ID: "lc-3"}); !won {
		t.Fatal("a lost t-3")
	}
	if _, err := seed.Close(ctx, "lc-3", "done"); err != nil {
		t.Fatal(err)
	}
	a.dropLoopClaim(ctx, "lc-3")
	if is := show("lc-3"); is.Status != beads.StatusClosed {
		t.Fatalf("closed issue after the drop: %s", is.Status)
	}
	// A crash: a's claim stays; b's is b's; a fleet issue under a's
	// worker actor is the fleet's.
	if won, _ := a.claimPick(ctx, beads.Issue{ID: "lc-4"}); !won {
		t.Fatal("a lost t-4")
	}
	if won, _ := b.claimPick(ctx, one); !won {
		t.Fatal("b lost t-1")
	}
	fl, err := a.workerClient(a.WorkerActor(loopWorker), a.Dir).Create(ctx, beads.CreateOptions{Title: "fleet-like", Labels: []string{FleetLabel}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.workerClient(a.WorkerActor(loopWorker), a.Dir).Claim(ctx, fl.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.recoverLoopClaims(ctx); err != nil {
		t.Fatal(err)
	}
	if is := show("lc-4"); is.Status != beads.StatusOpen || is.Assignee != "" {
		t.Fatalf("a's crashed claim after recovery: %s %q", is.Status, is.Assignee)
	}
	if is := show("lc-1"); is.Assignee != b.WorkerActor(loopWorker) {
		t.Fatalf("b's claim after a's recovery: %q", is.Assignee)
	}
	if is := show(fl.ID); is.Status != beads.StatusInProgress {
		t.Fatalf("a fleet issue after recovery: %s", is.Status)
	}
}

package modes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/state"
)

// backdate rewrites the stand-in's store around bd: edit changes each
// issue, and every issue's updated_at is set years back, as an edit made
// around bd (or by a machine whose clock is behind) can leave it.
func backdate(t *testing.T, repo string, edit func(id string, is map[string]any)) {
	t.Helper()
	var file string
	_ = filepath.WalkDir(filepath.Join(repo, ".beads"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "standin.json" {
			file = p
		}
		return nil
	})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var store map[string]any
	if err := json.Unmarshal(b, &store); err != nil {
		t.Fatal(err)
	}
	for _, x := range store["issues"].([]any) {
		is := x.(map[string]any)
		if edit != nil {
			edit(is["id"].(string), is)
		}
		is["updated_at"] = "2020-01-01T00:00:00Z"
	}
	if b, err = json.Marshal(store); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTrackerReadsIncremental takes a full reading, changes an issue by
// one route, and checks what a reading of what changed sees, and what the
// full reading after it finds hidden, reverts and returns: every route
// the cheap reading misses is found by the full one, and a change only
// ralphd or bd made honestly is never taken for a hidden one.
func TestTrackerReadsIncremental(t *testing.T) {
	type env struct {
		p    *project
		l    *Loop
		x, y string
	}
	title := func(want string) func(e env, s guard.Snapshot) bool {
		return func(e env, s guard.Snapshot) bool { return s[e.x].Title == want }
	}
	labelled := func(l string) func(e env, s guard.Snapshot) bool {
		return func(e env, s guard.Snapshot) bool { return s[e.x].HasLabel(l) }
	}
	gone := func(e env, s guard.Snapshot) bool { _, ok := s[e.x]; return !ok }
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, e env)
		// seen: the change shows in the cheap reading (and then in the
		// full one); hidden: how many hidden changes the full reading
		// finds, whose change it then patches out and reverts.
		seen   func(e env, s guard.Snapshot) bool
		cheap  bool
		hidden int
	}{
		{"title by bd", func(t *testing.T, e env) { sh(t, e.p.repo, e.p.bd, "update", e.x, "--title", "New") }, title("New"), true, 0},
		{"plain label by bd", func(t *testing.T, e env) { sh(t, e.p.repo, e.p.bd, "label", "add", e.x, "later") }, labelled("later"), false, 0},
		{"reserved label by bd", func(t *testing.T, e env) { sh(t, e.p.repo, e.p.bd, "label", "add", e.x, StuckLabel) }, labelled(StuckLabel), false, 1},
		{"title in the store, back-dated", func(t *testing.T, e env) {
			backdate(t, e.p.repo, func(id string, is map[string]any) {
				if id == e.x {
					is["title"] = "Easier"
				}
			})
		}, title("Easier"), false, 1},
		{"another's status in the store, back-dated", func(t *testing.T, e env) {
			backdate(t, e.p.repo, func(id string, is map[string]any) {
				if id == e.x {
					is["status"], is["close_reason"] = "closed", "ran `make`: ok"
				}
			})
		}, func(e env, s guard.Snapshot) bool { return s[e.x].Status == beads.StatusClosed }, false, 1},
		{"deleted by bd", func(t *testing.T, e env) { sh(t, e.p.repo, e.p.bd, "delete", e.x, "--force") }, gone, false, 1},
		{"ralphd's own label", func(t *testing.T, e env) {
			if err := e.l.BD.LabelAdd(context.Background(), e.x, StuckLabel); err != nil {
				t.Fatal(err)
			}
		}, labelled(StuckLabel), true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			e := env{p: p, x: p.create("X", "-p", "2"), y: p.create("Y", "-p", "2")}
			backdate(t, p.repo, nil) // nothing changed lately
			e.l = &Loop{Deps: Deps{Dir: p.repo, BD: &beads.Client{Bin: p.bd, Dir: p.repo, Timeout: time.Minute}}}
			e.l.tracker = newTrackerReads(TrackerReadsIncremental, 20, 0)
			e.l.tracker.startRun(e.l.BD, false)
			ctx := context.Background()
			first, err := e.l.snapshotFresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(first) != 2 || tc.seen(e, first) {
				t.Fatalf("first reading: %d issues, the change already seen", len(first))
			}
			tc.change(t, e)
			cheap, err := e.l.snapshotFresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.l.tracker.cheap.Load(); got != 1 {
				t.Fatalf("%d cheap readings, want 1", got)
			}
			if tc.seen(e, cheap) != tc.cheap {
				t.Errorf("the cheap reading sees the change: %v, want %v", !tc.cheap, tc.cheap)
			}
			if _, ok := cheap[e.y]; !ok {
				t.Errorf("the cheap reading lost %s, which did not change", e.y)
			}
			full, err := e.l.snapshotFull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := int(e.l.tracker.hidden.Load()); got != tc.hidden {
				t.Fatalf("the full reading found %d hidden changes, want %d", got, tc.hidden)
			}
			if tc.hidden == 0 {
				if !tc.seen(e, full) {
					t.Errorf("the full reading does not hold a change that was not forbidden")
				}
				return
			}
			if tc.seen(e, full) {
				t.Errorf("the full reading returned holds the hidden change")
			}
			// Reverted: the next full reading finds the tracker as held.
			again, err := e.l.snapshotFull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.seen(e, again) {
				t.Errorf("the hidden change was not reverted")
			}
			if got := int(e.l.tracker.hidden.Load()); got != tc.hidden {
				t.Errorf("%d hidden changes after a second full reading, want still %d", got, tc.hidden)
			}
		})
	}
}

// TestTrackerReadsCadence checks when a reading lists every issue: the
// first, every `every` readings, a forced one, and every one in full mode
// or on a small tracker under auto.
func TestTrackerReadsCadence(t *testing.T) {
	p := newProject(t)
	p.create("X")
	for _, tc := range []struct {
		mode        string
		every       int
		force       []bool
		full, cheap int64
	}{
		{TrackerReadsIncremental, 3, []bool{false, false, false, false, false}, 2, 3},
		{TrackerReadsIncremental, 20, []bool{false, false, true, false}, 2, 2},
		{TrackerReadsFull, 20, []bool{false, false, false}, 3, 0},
		{TrackerReadsAuto, 20, []bool{false, false, false}, 3, 0}, // one issue: full
	} {
		l := &Loop{Deps: Deps{Dir: p.repo, BD: &beads.Client{Bin: p.bd, Dir: p.repo, Timeout: time.Minute}}}
		l.tracker = newTrackerReads(tc.mode, tc.every, 0)
		l.tracker.startRun(l.BD, false)
		for _, f := range tc.force {
			if _, err := l.takeReading(context.Background(), readOpts{full: f}); err != nil {
				t.Fatal(err)
			}
		}
		if f, c := l.tracker.full.Load(), l.tracker.cheap.Load(); f != tc.full || c != tc.cheap {
			t.Errorf("%s every %d, forced %v: %d full and %d cheap readings, want %d and %d", tc.mode, tc.every, tc.force, f, c, tc.full, tc.cheap)
		}
	}
}

// TestTrackerReadsWriteLaundering: a change hides from the readings of
// what changed, then ralphd itself writes to the same issue, which moves
// its updated_at (or has it re-read by id). The next reading must not
// carry the hidden change into the reading held: it finds what ralphd's
// write does not account for, reverts it against the reading held,
// keeps ralphd's write, and the full reading after it finds nothing
// left. A write that accounts for everything is taken as it is.
func TestTrackerReadsWriteLaundering(t *testing.T) {
	type env struct {
		p *project
		l *Loop
		x string
	}
	ctx := context.Background()
	store := func(field string, v any) func(t *testing.T, e env) {
		return func(t *testing.T, e env) {
			backdate(t, e.p.repo, func(id string, is map[string]any) {
				if id == e.x {
					is[field] = v
				}
			})
		}
	}
	label := func(l string) func(t *testing.T, e env) {
		return func(t *testing.T, e env) { sh(t, e.p.repo, e.p.bd, "label", "add", e.x, l) }
	}
	note := func(t *testing.T, e env) {
		if _, err := e.l.BD.AppendNotes(ctx, e.x, "ralphd: STUCK after 3 attempts"); err != nil {
			t.Fatal(err)
		}
	}
	heldBack := func(t *testing.T, e env) {
		if _, err := e.l.BD.AppendNotes(ctx, e.x, "ralphd: held back: the merge queue is full"); err != nil {
			t.Fatal(err)
		}
	}
	revertPriority := func(t *testing.T, e env) {
		if _, err := e.l.BD.Update(ctx, e.x, beads.Set{Flag: "priority", Value: "1"}); err != nil {
			t.Fatal(err)
		}
	}
	stuck := func(t *testing.T, e env) {
		if err := e.l.BD.LabelAdd(ctx, e.x, StuckLabel); err != nil {
			t.Fatal(err)
		}
	}
	readyClaim := func(t *testing.T, e env) {
		if is, ok, err := e.l.BD.ReadyClaim(ctx, beads.ClaimFilter{}); err != nil || !ok || is.ID != e.x {
			t.Fatalf("ready --claim: %v %v %v", is.ID, ok, err)
		}
	}
	noteKept := func(e env, s guard.Snapshot) bool { return strings.Contains(s[e.x].Notes, "ralphd:") }
	for _, tc := range []struct {
		name   string
		hide   func(t *testing.T, e env)
		write  func(t *testing.T, e env)
		hidden int
		// hiddenGone: the hidden change is not in the issue (tracker or
		// reading); kept: ralphd's write is.
		hiddenGone, kept func(e env, s guard.Snapshot) bool
	}{
		{"hidden stuck label, then a STUCK note", label(StuckLabel), note, 1,
			func(e env, s guard.Snapshot) bool { return !s[e.x].HasLabel(StuckLabel) }, noteKept},
		{"back-dated priority, then a held-back note", store("priority", 0), heldBack, 1,
			func(e env, s guard.Snapshot) bool { return s[e.x].Priority == 2 }, noteKept},
		{"back-dated title while ralphd reverts the priority", store("title", "Easier"), revertPriority, 1,
			func(e env, s guard.Snapshot) bool { return s[e.x].Title == "X" },
			func(e env, s guard.Snapshot) bool { return s[e.x].Priority == 1 }},
		{"back-dated title, then ralphd's ready --claim", store("title", "Easier"), readyClaim, 1,
			func(e env, s guard.Snapshot) bool { return s[e.x].Title == "X" },
			func(e env, s guard.Snapshot) bool { return s[e.x].Status == beads.StatusInProgress }},
		{"back-dated assignee, then ralphd's note", store("assignee", "mallory"), note, 1,
			func(e env, s guard.Snapshot) bool { return s[e.x].Assignee == "" }, noteKept},
		// ralphd's write accounts for everything: nothing is hidden.
		{"hidden stuck label, then ralphd adds it", label(StuckLabel), stuck, 0,
			func(e env, s guard.Snapshot) bool { return true },
			func(e env, s guard.Snapshot) bool { return s[e.x].HasLabel(StuckLabel) }},
		{"hidden plain label, then a note", label("later"), note, 0,
			func(e env, s guard.Snapshot) bool { return true }, noteKept},
		{"nothing hidden, a note", func(*testing.T, env) {}, note, 0,
			func(e env, s guard.Snapshot) bool { return true }, noteKept},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			e := env{p: p, x: p.create("X", "-p", "1")}
			p.create("Y", "-p", "2")
			backdate(t, p.repo, nil)
			e.l = &Loop{Deps: Deps{Dir: p.repo, BD: &beads.Client{Bin: p.bd, Dir: p.repo, Timeout: time.Minute}}}
			e.l.tracker = newTrackerReads(TrackerReadsIncremental, 20, 0)
			e.l.tracker.startRun(e.l.BD, false)
			if _, err := e.l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.name == "back-dated priority, then a held-back note" {
				// X at P2, so that the hidden P0 differs.
				if _, err := e.l.BD.Update(ctx, e.x, beads.Set{Flag: "priority", Value: "2"}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.l.snapshotFresh(ctx); err != nil {
					t.Fatal(err)
				}
			}
			tc.hide(t, e)
			if _, err := e.l.snapshotFresh(ctx); err != nil { // misses it
				t.Fatal(err)
			}
			if got := e.l.tracker.hidden.Load(); got != 0 {
				t.Fatalf("%d hidden changes found before ralphd wrote, want 0", got)
			}
			tc.write(t, e)
			got, err := e.l.snapshotFresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := e.l.tracker.hidden.Load(); int(n) != tc.hidden {
				t.Fatalf("the reading after ralphd's write found %d hidden changes, want %d", n, tc.hidden)
			}
			if e.l.tracker.full.Load() != 1 {
				t.Fatalf("%d full readings, want 1: a reading of what changed must find it", e.l.tracker.full.Load())
			}
			if !tc.hiddenGone(e, got) || !tc.kept(e, got) {
				t.Errorf("the reading returned: %+v; want the hidden change out and ralphd's write in", got[e.x])
			}
			full, err := e.l.snapshotFull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := e.l.tracker.hidden.Load(); int(n) != tc.hidden {
				t.Errorf("the full reading found %d more hidden changes: laundered, or ralphd's write taken for one", int(n)-tc.hidden)
			}
			if !tc.hiddenGone(e, full) || !tc.kept(e, full) {
				t.Errorf("the tracker after: %+v; want the hidden change reverted and ralphd's write kept", full[e.x])
			}
		})
	}
}

// TestTrackerReadsAgentWriteRace: with workers, ralphd writes a note to
// issue X (so the next reading re-reads X by id and takes only what
// ralphd's writes explain) while another worker's agent changes X
// through the guard. A change the guard allowed and ran is told to the
// reads (guard.GuardEnv.OnWrite, as the broker does) and explains what it
// set: it is taken, for that agent's window to judge, not reverted as
// hidden. What the guard refused, or anything made around it on the same
// issue, explains nothing and is still found, reverted and counted.
func TestTrackerReadsAgentWriteRace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// agent is the other worker's bd call through the guard; around,
		// when set, a change made around the guard meanwhile.
		agent  []string
		around func(t *testing.T, p *project, x string)
		hidden int
		// want holds for X in the reading returned and in the tracker.
		want func(is beads.Issue) bool
	}{
		{"allowed close", []string{"close", "X", "--reason", "ran `make`: ok"}, nil, 0,
			func(is beads.Issue) bool { return is.Status == beads.StatusClosed }},
		{"allowed status, short flag and --json", []string{"--json", "update", "X", "-s", "in_progress"}, nil, 0,
			func(is beads.Issue) bool { return is.Status == beads.StatusInProgress }},
		{"allowed close of two issues", []string{"close", "Y", "X", "--reason=ran `make`: ok"}, nil, 0,
			func(is beads.Issue) bool { return is.Status == beads.StatusClosed }},
		{"refused close (no reason), then closed around the guard", []string{"close", "X"},
			func(t *testing.T, p *project, x string) {
				sh(t, p.repo, p.bd, "close", x, "--reason", "done")
			}, 1,
			func(is beads.Issue) bool { return is.Status == beads.StatusOpen }},
		{"allowed note, and a back-dated close around the guard", []string{"update", "X", "--append-notes", "tried"},
			func(t *testing.T, p *project, x string) {
				backdate(t, p.repo, func(id string, is map[string]any) {
					if id == x {
						is["status"], is["close_reason"] = "closed", "done"
					}
				})
			}, 1,
			func(is beads.Issue) bool { return is.Status == beads.StatusOpen }},
		{"allowed status, then another status around the guard", []string{"update", "X", "--status", "in_progress"},
			func(t *testing.T, p *project, x string) {
				sh(t, p.repo, p.bd, "update", x, "--status", "blocked")
			}, 1,
			func(is beads.Issue) bool { return is.Status == beads.StatusOpen }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			x, y := p.create("X", "-p", "1"), p.create("Y", "-p", "2")
			backdate(t, p.repo, nil)
			l := &Loop{Deps: Deps{Dir: p.repo, BD: &beads.Client{Bin: p.bd, Dir: p.repo, Timeout: time.Minute}}}
			l.tracker = newTrackerReads(TrackerReadsIncremental, 20, 0)
			l.tracker.startRun(l.BD, false)
			if _, err := l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			// ralphd's note to X (worker 1's post-judgement note), then the
			// other worker's agent, before the next reading.
			if _, err := l.BD.AppendNotes(ctx, x, "ralphd: held back: the merge queue is full"); err != nil {
				t.Fatal(err)
			}
			argv := make([]string, len(tc.agent))
			for i, a := range tc.agent {
				argv[i] = strings.NewReplacer("X", x, "Y", y).Replace(a)
			}
			var out, errOut strings.Builder
			env := guard.GuardEnv{Mode: guard.ModeBuild, RealBD: p.bd, Dir: p.repo, OnWrite: l.agentWrote()}
			guard.RunGuard(ctx, argv, env, strings.NewReader(""), &out, &errOut)
			if tc.around != nil {
				tc.around(t, p, x)
			}
			got, err := l.snapshotFresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := l.tracker.hidden.Load(); int(n) != tc.hidden {
				t.Fatalf("the reading after the agent's call (%s%s) found %d hidden changes, want %d", out.String(), errOut.String(), n, tc.hidden)
			}
			if !tc.want(got[x]) || !strings.Contains(got[x].Notes, "ralphd: held back") {
				t.Errorf("the reading returned X as %+v", got[x])
			}
			full, err := l.snapshotFull(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := l.tracker.hidden.Load(); int(n) != tc.hidden {
				t.Errorf("the full reading found %d more hidden changes", int(n)-tc.hidden)
			}
			if !tc.want(full[x]) {
				t.Errorf("the tracker holds X as %+v", full[x])
			}
		})
	}
}

// TestTrackerReadsKeptAcrossKill: a ralphd reading incrementally is
// killed with no window open (no baseline on disk) after a change hid
// from its readings of what changed. The reading it held, its writes
// since and its windows are in the state dir: the next start's sweep
// compares a full reading with them, finds the hidden change, reverts it
// and charges the window, and does not take ralphd's own writes since
// (a label, which moves no updated_at; a note) or a change bd made in
// plain sight for hidden ones. A clean end leaves nothing to compare.
func TestTrackerReadsKeptAcrossKill(t *testing.T) {
	ctx := context.Background()
	type env struct {
		p    *project
		l    *Loop
		x, y string
	}
	hideTitle := func(t *testing.T, e env) {
		backdate(t, e.p.repo, func(id string, is map[string]any) {
			if id == e.y {
				is["title"] = "Easier"
			}
		})
	}
	stuck := func(t *testing.T, e env) {
		if err := e.l.BD.LabelAdd(ctx, e.x, StuckLabel); err != nil {
			t.Fatal(err)
		}
	}
	note := func(t *testing.T, e env) {
		if _, err := e.l.BD.AppendNotes(ctx, e.x, "ralphd: STUCK after 3 attempts"); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// cheap: a reading of what changed after the hidden change (else
		// the kill follows the full reading); before, after: what happens
		// before and after that reading.
		cheap         bool
		before, after []func(t *testing.T, e env)
		hidden        bool
		clean         bool // the run ends cleanly instead of being killed
	}{
		{"hidden title, then ralphd's stuck label and note", true, []func(*testing.T, env){hideTitle}, []func(*testing.T, env){stuck, note}, true, false},
		{"hidden title right after the full reading", false, []func(*testing.T, env){hideTitle}, nil, true, false},
		{"ralphd's stuck label since the last reading", true, nil, []func(*testing.T, env){stuck}, false, false},
		{"ralphd's stuck label before the last reading", true, []func(*testing.T, env){stuck}, nil, false, false},
		{"a title changed by bd in plain sight", true, nil, []func(*testing.T, env){func(t *testing.T, e env) {
			sh(t, e.p.repo, e.p.bd, "update", e.y, "--title", "Renamed")
		}}, false, false},
		{"clean end, then a hidden title", true, nil, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			e := env{p: p, x: p.create("X", "-p", "1"), y: p.create("Y", "-p", "2")}
			backdate(t, p.repo, nil)
			st, err := state.Open(ctx, filepath.Join(p.root, "state"), state.Identity{ID: "0123456789ab", TopLevel: p.repo}, "")
			if err != nil {
				t.Fatal(err)
			}
			newLoop := func() *Loop {
				l := &Loop{Deps: Deps{Dir: p.repo, State: st, BD: &beads.Client{Bin: p.bd, Dir: p.repo, Timeout: time.Minute}}}
				l.tracker = newTrackerReads(TrackerReadsIncremental, 20, 0)
				return l
			}
			e.l = newLoop()
			e.l.startReads()
			if _, err := e.l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			w := e.l.reads().opened(1, e.x, nil, time.Now())
			for _, f := range tc.before {
				f(t, e)
			}
			if tc.cheap {
				if _, err := e.l.snapshotFresh(ctx); err != nil {
					t.Fatal(err)
				}
			}
			e.l.reads().agentEnded(w)
			for _, f := range tc.after {
				f(t, e)
			}
			if tc.clean {
				e.l.closingRead(ctx)
				e.l.finish(&Result{}, nil, true)
				hideTitle(t, e)
			}
			// Killed: a new ralphd starts on the same state dir.
			e.l = newLoop()
			msg := e.l.chargeSinceFull(ctx, nil)
			got, err := e.l.BD.Show(ctx, e.y)
			if err != nil {
				t.Fatal(err)
			}
			if found := strings.Contains(msg, "reverted 1 change hidden"); found != tc.hidden {
				t.Fatalf("the sweep says %q; want a hidden change found: %v", msg, tc.hidden)
			}
			if tc.hidden && (got.Title != "Y" || !strings.Contains(msg, "charged to every iteration since: 1 ("+e.x+")")) {
				t.Errorf("after the sweep Y is titled %q (want Y), and the sweep says %q", got.Title, msg)
			}
			x, err := e.l.BD.Show(ctx, e.x)
			if err != nil {
				t.Fatal(err)
			}
			if stuckWritten := strings.Contains(tc.name, "stuck label"); stuckWritten && !x.HasLabel(StuckLabel) {
				t.Errorf("ralphd's own stuck label was taken for a hidden change and reverted: %+v", x.Labels)
			}
			if is, h, _, err := st.ReadTrackerHeld(); err != nil || h != nil || is != nil {
				t.Errorf("the reading kept is still there after the sweep: %v %v", h, err)
			}
			if rw, err := st.ReadReadWindows(); err != nil || rw != nil {
				t.Errorf("the windows' list is still there after the sweep: %v %v", rw, err)
			}
		})
	}
}

// TestTrackerReadsRereadOnlyWhatTheListLacks: a reading of what changed
// re-reads by id only the issues to re-read that its list lacks (a label
// moves no updated_at); one the list holds is taken from it, with the
// change, in one bd call.
func TestTrackerReadsRereadOnlyWhatTheListLacks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, l *Loop, p *project, x string)
		seen   func(is beads.Issue) bool
		calls  int // bd list calls of the cheap reading
	}{
		{"ralphd's note, which moves updated_at", func(t *testing.T, l *Loop, p *project, x string) {
			if _, err := l.BD.AppendNotes(context.Background(), x, "ralphd: noted"); err != nil {
				t.Fatal(err)
			}
		}, func(is beads.Issue) bool { return strings.Contains(is.Notes, "ralphd: noted") }, 1},
		{"ralphd's label, which does not", func(t *testing.T, l *Loop, p *project, x string) {
			if err := l.BD.LabelAdd(context.Background(), x, StuckLabel); err != nil {
				t.Fatal(err)
			}
		}, func(is beads.Issue) bool { return is.HasLabel(StuckLabel) }, 2},
		{"a judged issue the window changed", func(t *testing.T, l *Loop, p *project, x string) {
			l.reads().reread(x)
			sh(t, p.repo, p.bd, "update", x, "--title", "New")
		}, func(is beads.Issue) bool { return is.Title == "New" }, 1},
		{"a judged issue nothing changed", func(t *testing.T, l *Loop, p *project, x string) {
			l.reads().reread(x)
		}, func(is beads.Issue) bool { return is.Title == "X" }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			x := p.create("X", "-p", "2")
			p.create("Y", "-p", "2")
			backdate(t, p.repo, nil) // nothing changed lately
			wrap, log := loggingBD(t, p.bd, "")
			l := &Loop{Deps: Deps{Dir: p.repo, BD: &beads.Client{Bin: wrap, Dir: p.repo, Timeout: time.Minute}}}
			l.tracker = newTrackerReads(TrackerReadsIncremental, 20, 0)
			l.tracker.startRun(l.BD, false)
			ctx := context.Background()
			if _, err := l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			tc.change(t, l, p, x)
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
			cheap, err := l.snapshotFresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.tracker.cheap.Load(); got != 1 {
				t.Fatalf("%d cheap readings, want 1", got)
			}
			if !tc.seen(cheap[x]) {
				t.Errorf("the cheap reading does not hold the change: %+v", cheap[x])
			}
			if len(cheap) != 2 {
				t.Errorf("the cheap reading holds %d issues, want 2", len(cheap))
			}
			if got := callsOf(t, log, "list"); got != tc.calls {
				b, _ := os.ReadFile(log)
				t.Errorf("%d bd list calls, want %d:\n%s", got, tc.calls, b)
			}
		})
	}
}

// TestClaimedIssue: a worker's claimed issue is the run's last reading of
// it with what the claim set taken from bd's answer, and the answer's
// count of dependencies (a dependency added since the reading makes the
// worker read the edges); with no reading holding it, or one holding it
// closed, none (bd show reads it).
func TestClaimedIssue(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	held := beads.Issue{ID: "t-a", Title: "One", Description: "the first", Status: beads.StatusOpen, Labels: []string{"x"},
		Dependencies: []beads.Dependency{{IssueID: "t-a", DependsOnID: "t-b", Type: "blocks"}}, DependencyCount: 1, UpdatedAt: at}
	answer := beads.Issue{ID: "t-a", Title: "One", Status: beads.StatusInProgress, Assignee: "ralphd/h/abc/w1",
		StartedAt: at.Add(time.Second), UpdatedAt: at.Add(time.Second), DependencyCount: 2}
	for _, tc := range []struct {
		name    string
		reading guard.Snapshot
		claimed beads.Issue
		want    beads.Issue
		ok      bool
	}{
		{name: "no reading yet", claimed: answer},
		{name: "not in the reading", reading: guard.Snapshot{"t-b": {ID: "t-b"}}, claimed: answer},
		{name: "closed in the reading: reopened since", reading: guard.Snapshot{"t-a": {ID: "t-a", Status: beads.StatusClosed, CloseReason: "done"}}, claimed: answer},
		{name: "in the reading", reading: guard.Snapshot{"t-a": held}, claimed: answer, ok: true, want: func() beads.Issue {
			w := held
			w.Status, w.Assignee, w.StartedAt, w.UpdatedAt, w.DependencyCount = answer.Status, answer.Assignee, answer.StartedAt, answer.UpdatedAt, 2
			return w
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := newTrackerReads(TrackerReadsFull, 1, 0)
			if tc.reading != nil {
				r.last.Store(&tc.reading)
			}
			got, ok := claimedIssue(r, tc.claimed)
			is.Equal(ok, tc.ok)
			if tc.ok {
				is.Equal(got, tc.want)
				is.Equal(len(tc.reading["t-a"].Description), len("the first")) // the reading is not changed
				is.Equal(tc.reading["t-a"].Status, beads.StatusOpen)
			}
		})
	}
}

// TestTrackerReadsCarry: a daemon's run starts from the reading the run
// before it ended with only when bd wrote nothing since that reading
// started. Any write between the runs, one that moves no updated_at or
// one made around bd and back-dated included, starts the run with a full
// reading that takes the tracker as it is and charges nothing to anyone;
// so do a run that is not a daemon's and a run before whose last reading
// was of what changed. A run that did start from the last run's reading
// still finds a change hidden after it, in a full reading and, killed,
// in the next start's sweep (the reading is kept on disk again).
func TestTrackerReadsCarry(t *testing.T) {
	type env struct {
		p    *project
		x    string
		log  string
		st   *state.Store
		loop func() *Loop
	}
	hide := func(t *testing.T, e env) {
		backdate(t, e.p.repo, func(id string, is map[string]any) {
			if id == e.x {
				is["title"] = "Easier"
			}
		})
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		daemon    bool
		cheapLast bool
		between   func(*testing.T, env)
		// seen: the second run's first reading holds what was done
		// between the runs.
		seen   func(guard.Snapshot, string) bool
		reused bool
	}{
		{"nothing between", true, false, nil, nil, true},
		{"not a daemon's run", false, false, nil, nil, false},
		{"last reading of what changed", true, true, nil, nil, false},
		{"title by bd", true, false, func(t *testing.T, e env) { sh(t, e.p.repo, e.p.bd, "update", e.x, "--title", "New") },
			func(s guard.Snapshot, x string) bool { return s[x].Title == "New" }, false},
		{"label by bd, no updated_at moved", true, false, func(t *testing.T, e env) { sh(t, e.p.repo, e.p.bd, "label", "add", e.x, "later") },
			func(s guard.Snapshot, x string) bool { return s[x].HasLabel("later") }, false},
		{"title around bd, back-dated", true, false, hide,
			func(s guard.Snapshot, x string) bool { return s[x].Title == "Easier" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			e := env{p: p, x: p.create("X", "-p", "1"), log: filepath.Join(p.root, "calls")}
			p.create("Y", "-p", "2")
			backdate(t, p.repo, nil)
			wrapper := filepath.Join(p.root, "bd")
			if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho \"$*\" >> '"+e.log+"'\nexec '"+p.bd+"' \"$@\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			st, err := state.Open(ctx, filepath.Join(p.root, "state"), state.Identity{ID: "0123456789ab", TopLevel: p.repo}, "")
			if err != nil {
				t.Fatal(err)
			}
			e.st = st
			e.loop = func() *Loop {
				l := &Loop{Deps: Deps{Dir: p.repo, State: st, BD: &beads.Client{Bin: wrapper, Dir: p.repo, Timeout: time.Minute}}}
				l.tracker = newTrackerReads(TrackerReadsIncremental, 20, 0)
				l.daemonReads = tc.daemon
				return l
			}
			l := e.loop()
			l.startReads()
			if _, err := l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.cheapLast {
				if _, err := l.snapshotFresh(ctx); err != nil {
					t.Fatal(err)
				}
			}
			l.finish(&Result{}, nil, true)
			if tc.between != nil {
				tc.between(t, e)
			}
			_ = os.Remove(e.log)
			l.startReads()
			first, err := l.snapshotFresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			calls, _ := os.ReadFile(e.log)
			if reused := l.tracker.reused.Load() == 1; reused != tc.reused {
				t.Fatalf("the second run's first reading was the first run's: %v, want %v (bd calls: %q)", reused, tc.reused, calls)
			}
			if tc.reused && len(calls) > 0 {
				t.Errorf("the reading reused called bd: %q", calls)
			}
			if !tc.reused && !strings.Contains(string(calls), "export") {
				t.Errorf("the second run's first reading did not list every issue: %q", calls)
			}
			if len(first) != 2 || (tc.seen != nil && !tc.seen(first, e.x)) {
				t.Errorf("the second run's first reading misses what was done between the runs: %+v", first[e.x])
			}
			if h := l.tracker.hidden.Load(); h != 0 {
				t.Errorf("%d hidden changes charged for what was done between the runs", h)
			}
			if !tc.reused {
				return
			}
			// What is hidden after the reused reading is found, killed or not.
			hide(t, e)
			if _, err := l.snapshotFresh(ctx); err != nil {
				t.Fatal(err)
			}
			if l.tracker.cheap.Load() != 1 {
				t.Fatalf("%d readings of what changed after the reused one, want 1", l.tracker.cheap.Load())
			}
			killed := e.loop()
			if msg := killed.chargeSinceFull(ctx, nil); !strings.Contains(msg, "reverted 1 change hidden") {
				t.Errorf("a ralphd killed after a run started from the last one's reading: the sweep says %q, want the hidden title found", msg)
			}
			if y, err := killed.BD.Show(ctx, e.x); err != nil || y.Title != "X" {
				t.Errorf("after the sweep X is titled %q (%v), want X", y.Title, err)
			}
		})
	}
}

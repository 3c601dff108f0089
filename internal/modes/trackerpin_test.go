package modes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/state"
)

// pinLoop is a Loop on a fresh stand-in project with a state store, for
// the pin's tests.
func pinLoop(t *testing.T) (*Loop, *project) {
	t.Helper()
	p := newProject(t)
	st, err := state.Open(context.Background(), filepath.Join(p.root, "state"), state.Identity{ID: "0123456789ab", TopLevel: p.repo}, "")
	if err != nil {
		t.Fatal(err)
	}
	return &Loop{Deps: Deps{Dir: p.repo, State: st, BD: &beads.Client{Bin: p.bd, Dir: p.repo, Timeout: time.Minute}}}, p
}

// TestTrackerPinConfigChange: a change to a file that tells bd where its
// database is counts on its own, whether or not bd's answer shows it, and
// is put back: the project's config.yaml and config.local.yaml, and the
// user's bd config, made where there was none.
func TestTrackerPinConfigChange(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		path   func(p *project) string
		text   string
		moved  bool // bd's answer shows it too
		remove bool // made: put back by removing it
	}{
		{"comment only", func(p *project) string { return filepath.Join(p.repo, ".beads", "config.yaml") }, "# harmless?\n", false, false},
		{"shared server", func(p *project) string { return filepath.Join(p.repo, ".beads", "config.yaml") }, "dolt:\n  shared-server: true\n", false, false},
		{"local db", func(p *project) string { return filepath.Join(p.repo, ".beads", "config.local.yaml") }, "db: DECOY\n", true, true},
		{"user db", func(p *project) string { return filepath.Join(p.root, "home", ".config", "bd", "config.yaml") }, "db: DECOY\n", true, true},
		{"env file", func(p *project) string { return filepath.Join(p.repo, ".beads", ".env") }, "BEADS_DIR=DECOY\n", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			t.Setenv("XDG_CONFIG_HOME", "")
			l, p := pinLoop(t)
			decoy := filepath.Join(p.root, "decoy", ".beads")
			sh(t, p.root, "mkdir", "-p", filepath.Dir(decoy))
			sh(t, p.root, "cp", "-a", filepath.Join(p.repo, ".beads"), decoy)
			is.NoErr(l.pinTracker(ctx, "r1"))
			path := c.path(p)
			before, _ := os.ReadFile(path)
			is.NoErr(os.MkdirAll(filepath.Dir(path), 0o755))
			is.NoErr(os.WriteFile(path, append(append([]byte{}, before...), strings.ReplaceAll(c.text, "DECOY", decoy)...), 0o644))
			if c.moved {
				id, err := l.BD.ReadIdentity(ctx)
				is.NoErr(err)
				is.True(id.BeadsDir == decoy) // bd follows it
			}

			res, it := &Result{}, &buildIter{n: 1, issue: beads.Issue{ID: p.create("Work")}}
			is.NoErr(l.checkTrackerPin(ctx, res, it))
			is.Equal(res.Violations, 1)                                                                          // one violation, put back
			is.Equal(len(it.rec.Violations), 1)                                                                  // recorded on the iteration
			is.True(strings.Contains(it.rec.Violations[0], path+", which tells bd where its database is, was ")) // names the file
			after, err := os.ReadFile(path)
			if c.remove {
				is.True(os.IsNotExist(err)) // made during the window: removed
			} else {
				is.NoErr(err)
				is.Equal(string(after), string(before)) // put back as it was
			}
			id, err := l.BD.ReadIdentity(ctx)
			is.NoErr(err)
			is.Equal(len(l.pin.want.Compare(id)), 0) // bd opens the pinned tracker
			is.Equal(len(l.pin.changedFiles()), 0)

			// Nothing changed since: nothing found.
			res, it = &Result{}, &buildIter{n: 2, issue: it.issue}
			is.NoErr(l.checkTrackerPin(ctx, res, it))
			is.Equal(res.Violations, 0)
		})
	}
}

// TestTrackerPinManagedPort: the port file of a server bd runs itself is
// neither judged nor put back; an external server's is, unless it names
// that server's own port (bd writes it so on its first call in a clone).
func TestTrackerPinManagedPort(t *testing.T) {
	file := func(s string) git.DirFile { return git.DirFile{Data: []byte(s), Mode: 0o644} }
	for _, tc := range []struct {
		name    string
		server  *beads.Server
		file    string
		f       git.DirFile
		counted bool
	}{
		{"managed server, any port", &beads.Server{Port: 3307, Managed: true}, portFile, file("41999\n"), false},
		{"managed server, config.yaml", &beads.Server{Port: 3307, Managed: true}, "config.yaml", file("x"), true},
		{"external server, its own port, as bd writes it", &beads.Server{Port: 3307}, portFile, file("3307\n"), false},
		{"external server, its own port, no newline", &beads.Server{Port: 3307}, portFile, file("3307"), false},
		{"external server, another port", &beads.Server{Port: 3307}, portFile, file("3308\n"), true},
		{"external server, not a number", &beads.Server{Port: 3307}, portFile, file("3307; x"), true},
		{"external server, removed", &beads.Server{Port: 3307}, portFile, git.DirFile{}, true},
		{"external server, its port through a link", &beads.Server{Port: 3307}, portFile, git.DirFile{Data: []byte("3307"), Mode: fs.ModeSymlink}, true},
		{"no server", nil, portFile, file("3307\n"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &trackerPin{want: beads.Identity{Server: tc.server}}
			if got := p.judged(tc.file, tc.f); got != tc.counted {
				t.Errorf("judged(%s, %q) = %v, want %v", tc.file, tc.f.Data, got, tc.counted)
			}
		})
	}
}

// TestTrackerPinSaved: the first start saves the pin; a later start on
// another tracker is refused with what changed and what to do, also
// before the sweep; forgetting the pin lets the next start pin anew.
func TestTrackerPinSaved(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	l, p := pinLoop(t)
	is.NoErr(l.checkSavedPinBeforeSweep(ctx)) // nothing saved: nothing to compare
	is.NoErr(l.pinTracker(ctx, "r1"))
	saved, err := l.State.TrackerPin(p.repo)
	is.NoErr(err)
	is.True(saved != nil)
	is.Equal(saved.RunID, "r1")
	is.NoErr(l.pinTracker(ctx, "r2")) // the same tracker: fine
	saved, err = l.State.TrackerPin(p.repo)
	is.NoErr(err)
	is.Equal(saved.RunID, "r1") // the first pin stays

	// The database directory replaced by a copy, as a stopped run leaves it.
	db := filepath.Join(p.repo, ".beads", "embeddeddolt")
	sh(t, p.root, "cp", "-a", db, filepath.Join(p.root, "copy"))
	is.NoErr(os.Rename(db, filepath.Join(p.root, "away")))
	is.NoErr(os.Rename(filepath.Join(p.root, "copy"), db))
	for _, check := range []func() error{
		func() error { return l.pinTracker(ctx, "r3") },
		func() error { return l.checkSavedPinBeforeSweep(ctx) },
	} {
		err := check()
		is.True(errors.Is(err, ErrTrackerChanged))                                // refused
		is.True(strings.Contains(err.Error(), "database directory was replaced")) // says what changed
		is.True(strings.Contains(err.Error(), "ralphd reset --tracker"))          // and what to do
	}
	had, err := l.State.ClearTrackerPin(p.repo)
	is.NoErr(err)
	is.True(had)
	is.NoErr(l.pinTracker(ctx, "r4")) // accepted: pinned anew
	saved, err = l.State.TrackerPin(p.repo)
	is.NoErr(err)
	is.Equal(saved.RunID, "r4")
}

// TestTrackerPinAsksBoundedly: a window's end asks bd which database it
// opens only when something ralphd holds or stats changed, and at least
// every pinAskEvery window ends and every pinAskInterval. A move that
// shows in the directories bd named is found at the very next window's
// end; one that only bd's answer shows (here: a bd that names a decoy, as
// a setting ralphd does not know of would make it) within the bound.
func TestTrackerPinAsksBoundedly(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*Loop, *project, func() int, *time.Time) {
		l, p := pinLoop(t)
		lie := filepath.Join(p.root, "lie")
		wrap, log := loggingBD(t, p.bd, "if [ \"$1\" = where ] && [ -f "+lie+" ]; then cat "+lie+"; exit 0; fi")
		l.BD.Bin = wrap
		clock := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
		l.Now = func() time.Time { return clock }
		if err := l.pinTracker(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		asks := func() int { return callsOf(t, log, "where") }
		return l, p, asks, &clock
	}
	end := func(l *Loop, n int) (*Result, *buildIter, error) {
		res, it := &Result{}, &buildIter{n: n, issue: beads.Issue{ID: "wk-1"}}
		return res, it, l.checkTrackerPin(ctx, res, it)
	}

	t.Run("nothing changed", func(t *testing.T) {
		is := is.New(t)
		l, _, asks, clock := setup(t)
		pinned := asks() // the pin itself asks once
		for n := 1; n < pinAskEvery; n++ {
			res, _, err := end(l, n)
			is.NoErr(err)
			is.Equal(res.Violations, 0)
		}
		is.Equal(asks(), pinned) // nine window ends, no bd call
		_, _, err := end(l, pinAskEvery)
		is.NoErr(err)
		is.Equal(asks(), pinned+1) // the tenth asks
		_, _, err = end(l, pinAskEvery+1)
		is.NoErr(err)
		is.Equal(asks(), pinned+1)
		*clock = clock.Add(pinAskInterval)
		_, _, err = end(l, pinAskEvery+2)
		is.NoErr(err)
		is.Equal(asks(), pinned+2) // and so does the first after the interval
	})

	t.Run("database directory swapped for a link", func(t *testing.T) {
		is := is.New(t)
		l, p, asks, _ := setup(t)
		pinned := asks()
		db := l.pin.want.DatabasePath
		is.True(db != "")
		aside := filepath.Join(p.root, "db-aside")
		sh(t, p.root, "cp", "-a", db, aside)
		is.NoErr(os.RemoveAll(db))
		is.NoErr(os.Symlink(aside, db))
		res, it, err := end(l, 1)
		is.True(asks() > pinned) // the stat showed it: bd was asked at once
		is.True(err != nil || res.Violations == 1)
		is.Equal(len(it.rec.Violations), 1)
	})

	t.Run("a move only bd's answer shows", func(t *testing.T) {
		is := is.New(t)
		l, p, asks, _ := setup(t)
		pinned := asks()
		decoy := filepath.Join(p.root, "decoy", ".beads")
		sh(t, p.root, "mkdir", "-p", filepath.Dir(decoy))
		sh(t, p.root, "cp", "-a", filepath.Join(p.repo, ".beads"), decoy)
		out := sh(t, p.repo, p.bd, "where", "--json")
		is.NoErr(os.WriteFile(filepath.Join(p.root, "lie"), []byte(strings.ReplaceAll(out, filepath.Join(p.repo, ".beads"), decoy)), 0o644))
		var found int
		for n := 1; n <= pinAskEvery; n++ {
			_, it, err := end(l, n)
			if err != nil || len(it.rec.Violations) > 0 {
				is.True(errors.Is(err, ErrTrackerMoved)) // nothing ralphd can put back
				found = n
				break
			}
		}
		is.Equal(found, pinAskEvery) // found within the bound
		is.Equal(asks(), pinned+2)   // asked then, and again after putting back what it could
	})

	t.Run("confirmed before the work is reported done", func(t *testing.T) {
		is := is.New(t)
		l, p, asks, _ := setup(t)
		pinned := asks()
		is.NoErr(l.confirmPin(ctx)) // no window's end since the pin asked
		is.Equal(asks(), pinned)
		_, _, err := end(l, 1)
		is.NoErr(err)
		is.NoErr(l.confirmPin(ctx)) // one unasked window's end: bd is asked
		is.Equal(asks(), pinned+1)

		// A move only bd's answer shows, after the last window's end: the
		// run does not report its work done.
		decoy := filepath.Join(p.root, "decoy", ".beads")
		sh(t, p.root, "mkdir", "-p", filepath.Dir(decoy))
		sh(t, p.root, "cp", "-a", filepath.Join(p.repo, ".beads"), decoy)
		out := sh(t, p.repo, p.bd, "where", "--json")
		is.NoErr(os.WriteFile(filepath.Join(p.root, "lie"), []byte(strings.ReplaceAll(out, filepath.Join(p.repo, ".beads"), decoy)), 0o644))
		_, it, err := end(l, 2)
		is.NoErr(err)
		is.Equal(len(it.rec.Violations), 0) // the window's end did not ask
		res := &Result{}
		err = l.queueEmpty(ctx, res) // what decides "all work complete or blocked"
		is.True(errors.Is(err, ErrTrackerMoved))
		is.True(strings.Contains(err.Error(), decoy))
		is.Equal(res.Stop, StopError)
	})
}

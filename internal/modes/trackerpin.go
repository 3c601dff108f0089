package modes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

// The tracker's identity is pinned. Without the sandbox, an agent can
// leave the tracker where it is and send bd elsewhere: a .beads/redirect
// file naming a copy, the database directory swapped for a link to a
// copy, another server in .beads/metadata.json, or a db: line in bd's
// configuration. Every snapshot ralphd takes would then read the decoy,
// and what it found and reverted there would say nothing about the real
// tracker. So the run pins which database bd opens (beads.Identity)
// before any agent starts, and holds the files that point bd at it: the
// .beads directory's (steeringFiles) and the user's bd configuration
// (userConfigFiles). Each window's end compares both before the
// after-snapshot is trusted: a change to either is a tracker_identity
// violation, put back where ralphd can (the held files are written back,
// and a database directory moved aside within reach is moved back), and
// otherwise the run stops. A held file counts on its own, whatever bd's
// own answer says: bd does not report every setting it opens a database
// by (dolt.shared-server in config.yaml, say).
//
// The pin is also saved in the state directory, per checkout, when first
// taken: a start on another tracker (a run stopped on a move it could not
// undo leaves the decoy in place) is refused, before the sweep judges
// anything, until the tracker is put back or the person runs `ralphd
// reset --tracker`.

// steeringFiles are the files in a .beads directory that tell bd where
// its database is (bd 1.0.5: beads.FollowRedirect, configfile.Load,
// config.Initialize, doltserver.DefaultConfig, and the .env file
// loadBeadsEnvFile reads for BEADS_DIR, BEADS_DB and the server's
// address). ralphd holds them, never the database itself.
var steeringFiles = []string{"redirect", "metadata.json", "config.yaml", "config.local.yaml", ".env", portFile}

// portFile is where bd keeps the port of its Dolt server. A server bd
// runs itself moves to a new port whenever it starts again, so for one
// the file is neither judged nor put back.
const portFile = "dolt-server.port"

// userConfigFiles are bd's configuration files outside the project (bd
// 1.0.5 config.Initialize merges them under the project's): a "db" key in
// one sends bd's commands to another database as the project's
// config.yaml can.
func userConfigFiles() []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	home, herr := os.UserHomeDir()
	if herr == nil {
		add(filepath.Join(home, ".beads", "config.yaml"))
	}
	if dir, err := os.UserConfigDir(); err == nil {
		add(filepath.Join(dir, "bd", "config.yaml"))
	}
	if herr == nil {
		add(filepath.Join(home, ".config", "bd", "config.yaml"))
	}
	return out
}

// trackerPin is a run's pinned tracker identity and the files that point
// bd at it as they were at its start. Workers share it.
type trackerPin struct {
	mu   sync.Mutex
	bd   *beads.Client // the run's client, in the project directory
	want beads.Identity
	held map[string]*heldDir // directory → its held files
	// askedAt is when bd was last asked which database it opens, and
	// unasked the window ends checked since without asking it (askDue).
	askedAt time.Time
	unasked int
}

// A window's end asks bd which database it opens (two bd calls, a third
// of ralphd's own bd time per iteration on a big tracker with real bd)
// only when the held files or the directories bd named show a change, and
// at least every pinAskEvery window ends and every pinAskInterval: what bd
// opens follows from its environment, which is ralphd's and fixed, from
// the files held and from those directories, so a move shows there first.
// The bounded asks find one by a route ralphd does not know of (a
// setting bd reads from elsewhere), within the bound.
const (
	pinAskEvery    = 10
	pinAskInterval = 10 * time.Minute
)

// heldDir is a directory's held files, and the directory they were read
// in: they are written back only into that same directory. A directory
// that did not exist has a zero id: a file made in it is removed (through
// its parent, never following a link).
type heldDir struct {
	id    beads.FileID
	names []string
	files git.DirFiles
}

// pinTracker reads which database bd opens, before any agent of the run
// starts, compares it with the pin saved for this checkout (saving it the
// first time), and holds the files that point bd at it.
func (l *Loop) pinTracker(ctx context.Context, runID string) error {
	id, err := l.BD.ReadIdentity(ctx)
	if err != nil {
		return fmt.Errorf("read which tracker bd opens: %w", err)
	}
	if err := l.checkSavedPin(id, runID); err != nil {
		return err
	}
	p := &trackerPin{bd: l.BD, want: id, held: map[string]*heldDir{}, askedAt: l.now()}
	for _, dir := range []string{l.beadsDir(), id.BeadsDir, id.RedirectedFrom} {
		if dir != "" {
			p.hold(dir, steeringFiles...)
		}
	}
	for _, f := range userConfigFiles() {
		p.hold(filepath.Dir(f), filepath.Base(f))
	}
	for dir, h := range p.held {
		h.files = git.DirFiles{}
		for _, f := range h.names {
			if err := h.files.Read(dir, f); err != nil {
				return fmt.Errorf("hold %s: %w", filepath.Join(dir, f), err)
			}
		}
	}
	l.pin = p
	return nil
}

// ErrTrackerChanged matches the error that refuses a start because bd
// opens another tracker than the one pinned for the checkout when ralphd
// first ran there.
var ErrTrackerChanged = errors.New("bd opens another tracker than the one ralphd pinned for this checkout")

// checkSavedPinBeforeSweep refuses a start whose bd opens another tracker
// than the pin saved for this checkout, before the sweep judges a killed
// or stopped iteration's baseline against it: a run that stopped on a
// move it could not undo left its baseline for the next start, and a
// judgement of the decoy would let the real tracker's changes through.
// It does nothing when no pin is saved, or when bd cannot say which
// tracker it opens (the run's own start says why).
func (l *Loop) checkSavedPinBeforeSweep(ctx context.Context) error {
	if l.State == nil || l.BD == nil || l.State.Worker() != "" {
		return nil // a worker's sweep: the project's own sweep checked
	}
	if saved, err := l.State.TrackerPin(l.checkout()); err == nil && saved == nil {
		return nil
	}
	id, err := l.BD.ReadIdentity(ctx)
	if err != nil {
		return nil
	}
	return l.checkSavedPin(id, "")
}

// checkout is the physical path of the checkout's top level, which the
// saved pin is kept under.
func (l *Loop) checkout() string {
	if c := l.State.Identity().TopLevel; c != "" {
		return c
	}
	return l.Dir
}

// checkSavedPin compares id, what bd opens now, with the pin saved for
// this checkout, and saves id when there is none. A run that stopped on a
// move of the tracker it could not undo leaves the decoy in place; this
// is what keeps the next start from pinning it.
func (l *Loop) checkSavedPin(id beads.Identity, runID string) error {
	if l.State == nil {
		return nil
	}
	checkout := l.checkout()
	saved, err := l.State.TrackerPin(checkout)
	if err != nil {
		return fmt.Errorf("%w: %v; run `ralphd reset --tracker` to pin what bd opens now", ErrTrackerChanged, err)
	}
	if saved == nil {
		return l.State.SaveTrackerPin(state.TrackerPin{Checkout: checkout, PinnedAt: l.now().UTC(), RunID: runID, Identity: id})
	}
	changes := saved.Identity.Compare(id)
	if len(changes) == 0 {
		return nil
	}
	var what []string
	for _, c := range changes {
		what = append(what, c.String())
	}
	w := saved.Identity
	return fmt.Errorf("%w (pinned %s): %s; put it back so that `bd where --json` names %s again (database %s): a .beads/redirect, a db: line in bd's config (.beads/config.yaml, config.local.yaml, ~/.config/bd/config.yaml) or a database directory replaced by a link or a copy are the usual ways; "+
		"or, if you moved the tracker on purpose, run `ralphd reset --tracker` and start again, and ralphd pins what bd opens then",
		ErrTrackerChanged, saved.PinnedAt.Format(time.RFC3339), strings.Join(what, "; "), w.BeadsDir, w.DatabasePath)
}

// hold adds names to the files held in dir.
func (p *trackerPin) hold(dir string, names ...string) {
	h := p.held[dir]
	if h == nil {
		h = &heldDir{id: beads.FileIDOf(dir)}
		p.held[dir] = h
	}
	for _, n := range names {
		if !slices.Contains(h.names, n) {
			h.names = append(h.names, n)
		}
	}
}

// judged reports whether a change to the held file name, now holding f,
// counts: all do but the port file of a server bd runs itself, and a port
// file that names the pinned server's own port. bd (1.0.5,
// doltserver.EnsurePortFile) writes the port of the server it connected
// to into the port file when the file is missing, also for an external
// server, on its first call in a clone; the file comes before
// metadata.json when bd looks for the port, so one that names another
// port sends bd to another server and counts.
func (p *trackerPin) judged(name string, f git.DirFile) bool {
	if name != portFile || p.want.Server == nil {
		return true
	}
	if p.want.Server.Managed {
		return false
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(f.Data)))
	return err != nil || port != p.want.Server.Port || f.Mode&fs.ModeType != 0
}

// changedFiles returns, per held directory, the held files that differ
// now from what the pin holds, judged ones only.
func (p *trackerPin) changedFiles() map[string][]string {
	out := map[string][]string{}
	for dir, h := range p.held {
		now := git.DirFiles{}
		for _, f := range h.names {
			if err := now.Read(dir, f); err != nil {
				now[f] = git.DirFile{} // unreadable: a change
			}
		}
		for _, f := range git.ChangedFiles(h.files, now) {
			if p.judged(f, now[f]) {
				out[dir] = append(out[dir], f)
			}
		}
	}
	return out
}

// describeChanged says what changed in the held files, one phrase each.
func (p *trackerPin) describeChanged(changed map[string][]string) []string {
	var out []string
	for dir, fs := range changed {
		for _, f := range fs {
			verb := "was changed"
			if _, ok := p.held[dir].files[f]; !ok {
				verb = "was made"
			} else if _, err := os.Lstat(filepath.Join(dir, f)); errors.Is(err, os.ErrNotExist) {
				verb = "was removed"
			}
			out = append(out, fmt.Sprintf("%s, which tells bd where its database is, %s", filepath.Join(dir, f), verb))
		}
	}
	slices.Sort(out)
	return out
}

// checkTrackerPin is called at a BUILD window's end, before the tracker
// is read for judging: it reports each change to the pinned identity as
// a violation, puts back what it can, and returns an error, which stops
// the run with the baseline kept, when bd still opens another tracker.
func (l *Loop) checkTrackerPin(ctx context.Context, res *Result, it *buildIter) error {
	p := l.pin
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The files first: a change that does not show in bd's answer (a
	// "db" key in a config file, which `bd where` may not reflect) is a
	// violation all the same, and a reading through it judges a decoy.
	files := p.changedFiles()
	if len(files) == 0 && !p.askDue(l.now()) {
		if now, err := p.want.Restat(); err == nil && len(p.want.Compare(now)) == 0 {
			p.unasked++
			return nil
		}
	}
	now, readErr := p.bd.ReadIdentity(ctx)
	p.askedAt, p.unasked = l.now(), 0
	changes := p.want.Compare(now)
	if readErr == nil && len(changes) == 0 && len(files) == 0 {
		return nil
	}
	if readErr != nil && beads.FileIDOf(p.want.BeadsDir) != p.want.Beads {
		// The .beads directory itself is gone or replaced: nothing can be
		// put back into it, and no reading of the tracker is judged (the
		// after-snapshot fails, or trackerReplaced stops the run); the
		// baseline stays for the next start.
		return nil
	}
	var found []string
	for _, c := range changes {
		found = append(found, c.String())
	}
	found = append(found, p.describeChanged(files)...)
	if readErr != nil {
		found = append(found, fmt.Sprintf("bd cannot say which tracker it opens any more (%v)", readErr))
	}
	restored := p.restore()
	now, readErr = p.bd.ReadIdentity(ctx)
	left := p.want.Compare(now)
	files = p.changedFiles()
	fixed := readErr == nil && len(left) == 0 && len(files) == 0
	// One violation: the changes are one move, seen from several sides.
	detail := strings.Join(found, "; ") + "; put back (" + strings.Join(restored, "; ") + ")"
	if !fixed {
		detail = strings.Join(found, "; ") + "; not put back"
	}
	it.fixed = append(it.fixed, "restored: "+strings.Join(found, "; "))
	it.rec.Violations = append(it.rec.Violations, detail)
	if fixed {
		// The summary counts it as reverted; one not put back stops the
		// run with an error that says so instead.
		res.Violations++
	}
	l.event(logjsonl.EventViolation, logjsonl.Violation{Iteration: it.n, IssueID: it.issue.ID, Mode: ModeBuild, Kind: "tracker_identity", Detail: detail})
	l.human().Warn("BUILD changed which tracker bd opens", "issue", it.issue.ID, "change", detail)
	if fixed {
		note := "ralphd: put back how bd finds the tracker: " + strings.Join(found, "; ") +
			". The tracker and its .beads files belong to ralphd and PLANNING; leave a note instead."
		if _, err := l.BD.AppendNotes(context.WithoutCancel(ctx), it.issue.ID, note); err != nil {
			l.human().Warn("could not note the restore on the issue", "issue", it.issue.ID, "err", err)
		}
		l.snap.invalidate()
		return nil
	}
	var still []string
	for _, c := range left {
		still = append(still, c.String())
	}
	still = append(still, p.describeChanged(files)...)
	if readErr != nil {
		still = append(still, readErr.Error())
	}
	return fmt.Errorf("%w during iteration %d: %s; ralphd put back what it could (%s) but bd still does not open the tracker pinned at the start (%s, database %s, %s); "+
		"put it back by hand (`bd where` names what bd opens), and the next start judges the iteration against its baseline",
		ErrTrackerMoved, it.n, strings.Join(still, "; "), strings.Join(restored, "; "), p.want.BeadsDir, p.want.DatabasePath, p.want.Database)
}

// confirmPin asks bd which database it opens, when no window's end has
// since the last window's agent ended, before a run reports its work
// done: success is never decided on a reading of a decoy, however few
// window ends ago a move by a route ralphd does not know of was made
// (askDue bounds how many). A move that shows stops the run with the
// baseline kept, as one no window's end could put back does.
func (l *Loop) confirmPin(ctx context.Context) error {
	p := l.pin
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unasked == 0 {
		return nil // the last window's end asked bd
	}
	now, err := p.bd.ReadIdentity(ctx)
	p.askedAt, p.unasked = l.now(), 0
	if err != nil {
		return fmt.Errorf("%w: bd cannot say which tracker it opens any more (%v); ralphd does not report the work done; put it back (`bd where` names what bd opens) and start again", ErrTrackerMoved, err)
	}
	if changes := p.want.Compare(now); len(changes) > 0 {
		var what []string
		for _, c := range changes {
			what = append(what, c.String())
		}
		return fmt.Errorf("%w since the run started: %s; ralphd does not report the work done: put it back (`bd where` names what bd opens; pinned: %s, database %s) and start again", ErrTrackerMoved, strings.Join(what, "; "), p.want.BeadsDir, p.want.DatabasePath)
	}
	return nil
}

// askDue reports whether a window's end at now asks bd which database it
// opens even though nothing ralphd holds or stats changed.
func (p *trackerPin) askDue(now time.Time) bool {
	return p.unasked+1 >= pinAskEvery || now.Sub(p.askedAt) >= pinAskInterval
}

// ErrTrackerMoved matches the error that stops a run in which bd no
// longer opens the tracker pinned at its start.
var ErrTrackerMoved = errors.New("the tracker bd opens changed")

// restore puts back the held files that changed (not the port file of a
// server bd runs itself) and the database directory, when it was moved
// aside within reach. It returns what it did, one phrase each ("nothing"
// when nothing).
func (p *trackerPin) restore() []string {
	var did []string
	for dir, changed := range p.changedFiles() {
		h := p.held[dir]
		if !h.id.IsZero() && beads.FileIDOf(dir) != h.id {
			continue // not the directory they came from: nothing to put back into
		}
		if err := git.RestoreDir(dir, h.files, changed); err != nil {
			did = append(did, fmt.Sprintf("could not restore %s: %v", dir, err))
			continue
		}
		for _, f := range changed {
			verb := "restored"
			if _, ok := h.files[f]; !ok {
				verb = "removed"
			}
			did = append(did, verb+" "+filepath.Join(dir, f))
		}
	}
	slices.Sort(did)
	if d := p.restoreDatabaseDir(); d != "" {
		did = append(did, d)
	}
	if len(did) == 0 {
		did = append(did, "nothing")
	}
	return did
}

// restoreDatabaseDir moves the pinned database directory back to its
// path when something else is there and the original (by device and
// inode) is where the thing there links to, or beside it in its parent
// directory. What was in its place is kept beside it, renamed (a link is
// removed). It returns what it did, "" when there was nothing to do.
func (p *trackerPin) restoreDatabaseDir() string {
	w := p.want
	if w.DatabasePath == "" || w.Database.IsZero() || w.DatabaseLink != "" {
		return ""
	}
	path := w.DatabasePath
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode().IsDir() && beads.FileIDOf(path) == w.Database {
		return ""
	}
	original := ""
	if err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if t, err := filepath.EvalSymlinks(path); err == nil && beads.FileIDOf(t) == w.Database {
			original = t
		}
	}
	if original == "" {
		entries, _ := os.ReadDir(filepath.Dir(path))
		for _, e := range entries {
			c := filepath.Join(filepath.Dir(path), e.Name())
			if c != path && e.IsDir() && beads.FileIDOf(c) == w.Database {
				original = c
				break
			}
		}
	}
	if original == "" {
		return ""
	}
	switch {
	case err != nil: // nothing there
	case fi.Mode()&os.ModeSymlink != 0:
		if err := os.Remove(path); err != nil {
			return fmt.Sprintf("could not remove the link at %s: %v", path, err)
		}
	default:
		aside := fmt.Sprintf("%s.replaced-%d", path, os.Getpid())
		if err := os.Rename(path, aside); err != nil {
			return fmt.Sprintf("could not move %s aside: %v", path, err)
		}
	}
	if err := os.Rename(original, path); err != nil {
		return fmt.Sprintf("could not move the database directory back from %s: %v", original, err)
	}
	return fmt.Sprintf("moved the database directory back from %s to %s", original, path)
}

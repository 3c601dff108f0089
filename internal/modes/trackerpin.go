package modes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/logjsonl"
)

// The tracker's identity is pinned. Without the sandbox, an agent can
// leave the tracker where it is and send bd elsewhere: a .beads/redirect
// file naming a copy, the database directory swapped for a link to a
// copy, or another server in .beads/metadata.json. Every snapshot ralphd
// takes would then read the decoy, and what it found and reverted there
// would say nothing about the real tracker. So the run pins which
// database bd opens (beads.Identity) before any agent starts, and each
// window's end compares it before the after-snapshot is trusted: a change
// is a tracker_identity violation, put back where ralphd can (the files
// in .beads that steer bd are held, and a database directory moved aside
// within reach is moved back), and otherwise the run stops.

// steeringFiles are the files in a .beads directory that tell bd where
// its database is (bd 1.0.5: beads.FollowRedirect, configfile.Load,
// config.Initialize, doltserver.DefaultConfig). ralphd holds them, never
// the database itself.
var steeringFiles = []string{"redirect", "metadata.json", "config.yaml", "config.local.yaml", "dolt-server.port"}

// trackerPin is a run's pinned tracker identity and the steering files as
// they were at its start. Workers share it.
type trackerPin struct {
	mu   sync.Mutex
	bd   *beads.Client // the run's client, in the project directory
	want beads.Identity
	held map[string]heldDir // .beads directory → its steering files
}

// heldDir is a .beads directory's steering files, and the directory they
// were read in: they are written back only into that same directory.
type heldDir struct {
	id    beads.FileID
	files git.DirFiles
}

// pinTracker reads which database bd opens, before any agent of the run
// starts, and holds the files that steer bd to it.
func (l *Loop) pinTracker(ctx context.Context) error {
	id, err := l.BD.ReadIdentity(ctx)
	if err != nil {
		return fmt.Errorf("read which tracker bd opens: %w", err)
	}
	p := &trackerPin{bd: l.BD, want: id, held: map[string]heldDir{}}
	for _, dir := range []string{l.beadsDir(), id.BeadsDir, id.RedirectedFrom} {
		if _, ok := p.held[dir]; dir == "" || ok {
			continue
		}
		files := git.DirFiles{}
		for _, f := range steeringFiles {
			if err := files.Read(dir, f); err != nil {
				return fmt.Errorf("hold %s: %w", filepath.Join(dir, f), err)
			}
		}
		p.held[dir] = heldDir{id: beads.FileIDOf(dir), files: files}
	}
	l.pin = p
	return nil
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
	now, readErr := p.bd.ReadIdentity(ctx)
	changes := p.want.Compare(now)
	if readErr == nil && len(changes) == 0 {
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
	if readErr != nil {
		found = append(found, fmt.Sprintf("bd cannot say which tracker it opens any more (%v)", readErr))
	}
	restored := p.restore()
	now, readErr = p.bd.ReadIdentity(ctx)
	left := p.want.Compare(now)
	fixed := readErr == nil && len(left) == 0
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
	if readErr != nil {
		still = append(still, readErr.Error())
	}
	return fmt.Errorf("%w during iteration %d: %s; ralphd put back what it could (%s) but bd still does not open the tracker pinned at the start (%s, database %s, %s); "+
		"put it back by hand (`bd where` names what bd opens), and the next start judges the iteration against its baseline",
		ErrTrackerMoved, it.n, strings.Join(still, "; "), strings.Join(restored, "; "), p.want.BeadsDir, p.want.DatabasePath, p.want.Database)
}

// ErrTrackerMoved matches the error that stops a run in which bd no
// longer opens the tracker pinned at its start.
var ErrTrackerMoved = errors.New("the tracker bd opens changed")

// restore puts back the steering files that changed and the database
// directory, when it was moved aside within reach. It returns what it
// did, one phrase each ("nothing" when nothing).
func (p *trackerPin) restore() []string {
	var did []string
	for dir, h := range p.held {
		if h.id.IsZero() || beads.FileIDOf(dir) != h.id {
			continue // not the directory they came from (or none): nothing to put back into
		}
		was := h.files
		now := git.DirFiles{}
		for _, f := range steeringFiles {
			if err := now.Read(dir, f); err != nil {
				now[f] = git.DirFile{} // unreadable: write it back
			}
		}
		changed := git.ChangedFiles(was, now)
		if len(changed) == 0 {
			continue
		}
		if err := git.RestoreDir(dir, was, changed); err != nil {
			did = append(did, fmt.Sprintf("could not restore %s: %v", dir, err))
			continue
		}
		for _, f := range changed {
			verb := "restored"
			if _, ok := was[f]; !ok {
				verb = "removed"
			}
			did = append(did, verb+" "+filepath.Join(dir, f))
		}
	}
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

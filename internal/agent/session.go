package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// This file holds what the backends that can resume a session share: the
// session ralphd keeps, the Resumer interface, and the reading and
// writing of a session's files under a CLI's own dir, never through a
// link. Each backend says in its own file whether and how it resumes.

// MaxSessionBytes bounds the files of one saved session. A session that
// has grown past it is not kept: the next attempt starts afresh.
const MaxSessionBytes = 8 << 20

// Session is an agent CLI's session as ralphd saved it to resume it: the
// id the CLI gave it and the files the CLI needs to resume it.
type Session struct {
	// ID is the session id, as the CLI's stream announced it first.
	ID string `json:"id"`
	// Files are the session's files, relative to the CLI's dir for
	// sessions (SessionFile.Rel).
	Files []SessionFile `json:"files"`
}

// SessionFile is one file of a saved Session.
type SessionFile struct {
	// Rel is the file's path below the CLI's dir ("projects/-w-repo/<id>.jsonl"
	// under ~/.claude), slash-separated, without "." or "..".
	Rel string `json:"rel"`
	// Data is the file's content.
	Data []byte `json:"data"`
}

// Resumer is a Backend whose CLI can resume one of its sessions. Its
// Command resumes inv.Resume, when set, with inv.Prompt as the next user
// message, instead of starting a fresh session.
type Resumer interface {
	Backend
	// SaveSession reads back from the CLI's own dirs the files it needs
	// to resume session id, after a run of inv (whose Home and ScratchDir
	// it reads) has ended.
	SaveSession(inv Invocation, id string) (Session, error)
}

// SessionJanitor is a Resumer whose BUILD runs leave files of their own
// in the CLI's dirs, one set per issue (opencode's database of the run),
// which ralphd removes once it has no more use for them.
type SessionJanitor interface {
	Resumer
	// DropSessionFiles removes the files BUILD runs on issue left.
	DropSessionFiles(h Home, issue string) error
	// PruneSessionFiles removes such files that have not changed since
	// cutoff, except those of the issues in keep, and returns how many
	// sets it removed.
	PruneSessionFiles(h Home, cutoff time.Time, keep []string) (int, error)
}

// DropSessionFiles removes the files BUILD runs on issue left in the
// dirs of every backend that leaves some (a SessionJanitor), whichever
// backend is configured now: an issue an earlier configuration's agent
// worked on is cleaned as well.
func DropSessionFiles(h Home, issue string) error {
	var errs []error
	for _, j := range janitors() {
		if err := j.DropSessionFiles(h, issue); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", j.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// PruneSessionFiles prunes, in every SessionJanitor's dirs, the files
// unchanged since cutoff of the issues not in keep, and returns how many
// sets it removed.
func PruneSessionFiles(h Home, cutoff time.Time, keep []string) (int, error) {
	var errs []error
	n := 0
	for _, j := range janitors() {
		m, err := j.PruneSessionFiles(h, cutoff, keep)
		n += m
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", j.Name(), err))
		}
	}
	return n, errors.Join(errs...)
}

// janitors returns the registered backends that are SessionJanitors.
func janitors() []SessionJanitor {
	var out []SessionJanitor
	for _, e := range registry() {
		if j, ok := e.proto.(SessionJanitor); ok {
			out = append(out, j)
		}
	}
	return out
}

// CanResume reports whether b resumes sessions.
func CanResume(b Backend) bool {
	_, ok := b.(Resumer)
	return ok
}

// ValidSessionID reports whether id has the form of the session ids the
// resuming CLIs give: a UUID (8-4-4-4-12 hex digits: Claude Code, Codex,
// Gemini CLI) or opencode's "ses_" and 26 ASCII letters and digits. Only
// such an id is ever put in a path or a command line.
func ValidSessionID(id string) bool {
	return validUUID(id) || validOpencodeID(id)
}

// validUUID reports whether id is a UUID, 8-4-4-4-12 hex digits.
func validUUID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// validOpencodeID reports whether id is an opencode session id: "ses_"
// and 26 ASCII letters and digits.
func validOpencodeID(id string) bool {
	rest, ok := strings.CutPrefix(id, "ses_")
	if !ok || len(rest) != 26 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// validRel reports whether rel is a plain relative path below a dir.
func validRel(rel string) bool {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") || path.Clean(rel) != rel {
		return false
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// Check reports what is wrong with s, for a backend about to put its
// files back: an id that is not a session id, or a file that is not
// below the CLI's dir or not named for the session.
func (s Session) Check() error {
	if !ValidSessionID(s.ID) {
		return fmt.Errorf("session id %q is not a session id (a UUID, or opencode's ses_...)", s.ID)
	}
	if len(s.Files) == 0 {
		return fmt.Errorf("session %s has no files", s.ID)
	}
	n := 0
	for _, f := range s.Files {
		if !validRel(f.Rel) || !strings.Contains(path.Base(f.Rel), s.ID) {
			return fmt.Errorf("session %s: file %q is not one of its own", s.ID, f.Rel)
		}
		n += len(f.Data)
	}
	if n > MaxSessionBytes {
		return fmt.Errorf("session %s: %d bytes, more than %d", s.ID, n, MaxSessionBytes)
	}
	return nil
}

// readSession reads the file rel below root into a Session with id,
// never through a link (atomicfile.Dir): a link the agent put in the
// CLI's dirs makes the session unusable, never reads a file elsewhere.
func readSession(root, rel, id string) (Session, error) {
	d, err := atomicfile.OpenDir(root)
	if err != nil {
		return Session{}, fmt.Errorf("open %s: %w", root, err)
	}
	defer d.Close()
	data, err := d.ReadFile(rel, MaxSessionBytes)
	if err != nil {
		return Session{}, fmt.Errorf("read session %s: %w", id, err)
	}
	s := Session{ID: id, Files: []SessionFile{{Rel: rel, Data: data}}}
	return s, s.Check()
}

// placeSession writes s's files back below root, making the dirs on the
// way, never through a link, and replacing whatever file is there (what
// the agent may have changed since ralphd saved it).
func placeSession(root string, s Session) error {
	if err := s.Check(); err != nil {
		return err
	}
	d, err := atomicfile.MakeDirAll(root, 0o700)
	if err != nil {
		return fmt.Errorf("put session %s back: %w", s.ID, err)
	}
	defer d.Close()
	for _, f := range s.Files {
		if dir := path.Dir(f.Rel); dir != "." {
			sub, err := d.MakeDir(dir, 0o700)
			if err != nil {
				return fmt.Errorf("put session %s back: %w", s.ID, err)
			}
			_ = sub.Close()
		}
		// A link or a directory in the file's place is not written
		// through: it is removed first (Remove never follows it).
		if err := d.RemoveAny(f.Rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("put session %s back: %w", s.ID, err)
		}
		if err := d.WriteFile(f.Rel, f.Data, 0o600); err != nil {
			return fmt.Errorf("put session %s back: %w", s.ID, err)
		}
	}
	return nil
}

// findIn returns the names in the dir rel below root (never through a
// link) that hold id and end in suffix.
func findIn(root, rel, id, suffix string) ([]string, error) {
	d, err := atomicfile.OpenDir(root)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(rel)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.Contains(e.Name(), id) && strings.HasSuffix(e.Name(), suffix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/proc"
)

// RemoveWorktree removes the worktree at dir and git's record of it, also
// when a run that was killed left it half made or half removed. git
// refuses a worktree whose .git file a kill mid `worktree add` left
// unfinished ("not a .git file"): its record is then forgotten by hand. A
// git that failed to delete the files (one the killed run started, in its
// own process group, still writing there: "Directory not empty") has
// forgotten it already. The files go last, tried again a few times while
// such a git finishes (removeSettled). A dir git keeps no record of is
// only removed.
func RemoveWorktree(ctx context.Context, repo, dir string) error {
	if _, err := Output(ctx, repo, "worktree", "remove", "--force", "--force", dir); err != nil {
		if ferr := forgetWorktree(ctx, repo, dir); ferr != nil && !errors.Is(ferr, errNoRecord) {
			return fmt.Errorf("remove worktree %s: %w; and forget it: %w", dir, err, ferr)
		}
	}
	if err := removeSettled(ctx, dir); err != nil {
		return fmt.Errorf("remove worktree %s: %w", dir, err)
	}
	return nil
}

// removeSettled removes dir and what it holds. A git process a killed
// run started lives on in its own process group and may still be writing
// there (a checkout, a rebase step): a removal that meets its new files
// is tried again, a few times, while it finishes.
func removeSettled(ctx context.Context, dir string) error {
	var err error
	for try := 1; try <= 10; try++ {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		if perr := proc.Sleep(ctx, time.Duration(try)*50*time.Millisecond); perr != nil {
			return fmt.Errorf("%w (%w)", err, perr)
		}
	}
	return fmt.Errorf("%w; is a git process still running in %s? stop it, then start again", err, dir)
}

// errNoRecord: git keeps no record of the worktree (forgetWorktree).
var errNoRecord = errors.New("git keeps no record of it")

// forgetWorktree removes git's record of the worktree at dir (its entry
// in the common dir's worktrees/, found by the gitdir file that points at
// dir/.git), as `git worktree remove` would. The caller removes dir.
func forgetWorktree(ctx context.Context, repo, dir string) error {
	common, err := CommonDir(ctx, repo)
	if err != nil {
		return err
	}
	recs, err := records(common)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if SameDir(r.dir, dir) {
			return os.RemoveAll(r.admin)
		}
	}
	return fmt.Errorf("%s in %s: %w", dir, filepath.Join(common, "worktrees"), errNoRecord)
}

// record is one entry of a common dir's worktrees/: git's record of a
// linked worktree (admin), and the worktree its gitdir file names ("" when
// that file is missing, unreadable or empty).
type record struct{ admin, dir string }

// records lists the records in common's worktrees/; none when there is no
// such dir.
func records(common string) ([]record, error) {
	entries, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs := make([]record, 0, len(entries))
	for _, e := range entries {
		r := record{admin: filepath.Join(common, "worktrees", e.Name())}
		if b, err := atomicfile.Read(filepath.Join(r.admin, "gitdir"), 64<<10); err == nil {
			if line := strings.TrimSpace(string(b)); line != "" {
				r.dir = filepath.Dir(line)
			}
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// SameDir reports whether a and b are the same directory: the same path,
// or the same file once links are followed.
func SameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// ForgetKilledAdds removes what a `git worktree add` killed before it
// ended left of the worktrees ours claims: git's record of it and its
// files. git locks a worktree while adding it and writes its admin files
// one after the other; a kill among them leaves an empty commondir that
// makes every later `git worktree` call fail ("failed to read
// .../commondir"), and `git worktree prune` keeps it, being locked. Such
// a worktree holds nothing but what git was checking out (Open keeps a
// branch's commits before it adds). It runs only at recovery, when no git
// of ralphd's is adding. It returns the worktrees it removed.
func ForgetKilledAdds(ctx context.Context, repo string, ours func(dir string) bool) ([]string, error) {
	common, err := CommonDir(ctx, repo)
	if err != nil {
		return nil, err
	}
	recs, err := records(common)
	if err != nil {
		return nil, fmt.Errorf("forget interrupted worktree adds: %w", err)
	}
	var gone []string
	for _, r := range recs {
		admin, dir := r.admin, r.dir
		// A record whose gitdir is not written yet names no worktree of ours.
		if dir == "" || !ours(dir) || !unfinishedAdd(admin) {
			continue
		}
		// The files go only when they are this add's: a gitdir file (an
		// agent may write its own worktree's record) can name another
		// worktree, whose .git file names its own record.
		files := pointsBack(dir, admin)
		if err := os.RemoveAll(admin); err != nil {
			return gone, fmt.Errorf("forget the interrupted add of %s: %w", dir, err)
		}
		if !files {
			continue
		}
		if err := removeSettled(ctx, dir); err != nil {
			return gone, fmt.Errorf("remove the interrupted add of %s: %w", dir, err)
		}
		gone = append(gone, dir)
	}
	return gone, nil
}

// unfinishedAdd reports whether the worktree record at admin is one whose
// `git worktree add` never ended: still locked (git locks it while it
// adds), with an admin file not yet written (HEAD still git's all-zero
// placeholder, or no commondir) or no index yet (killed before or during
// its checkout). A worktree a person locked has all of them.
func unfinishedAdd(admin string) bool {
	if _, err := os.Lstat(filepath.Join(admin, "locked")); err != nil {
		return false
	}
	read := func(name string) string {
		b, err := atomicfile.Read(filepath.Join(admin, name), 4<<10)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	if head := read("HEAD"); head == "" || strings.Trim(head, "0") == "" || read("commondir") == "" {
		return true
	}
	_, err := os.Lstat(filepath.Join(admin, "index"))
	return errors.Is(err, os.ErrNotExist)
}

// pointsBack reports whether the worktree at dir is the one the record
// at admin was added for: its .git file names admin, or the add was
// killed before it wrote one (missing or empty), when git checks out
// nothing yet, so the dir holds nothing else. A dir with files and no
// .git file of this record's is left for recovery, which keeps it.
func pointsBack(dir, admin string) bool {
	b, err := atomicfile.Read(filepath.Join(dir, ".git"), 64<<10)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return false
	case strings.TrimSpace(string(b)) != "":
		to, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		return ok && SameDir(to, admin)
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	return err == nil && (len(ents) == 0 || len(ents) == 1 && ents[0].Name() == ".git")
}

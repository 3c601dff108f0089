package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MovedPrefix starts the branches that keep where a ref ralphd owns was
// found after someone else moved it: ralphd/moved/<what>/<time>. Nothing
// a move pointed at is lost.
const MovedPrefix = "ralphd/moved/"

// zeroOID is git's "must not exist" old value for update-ref.
const zeroOID = "0000000000000000000000000000000000000000"

// Move is a move of a ref ralphd owns that ralphd did not make: a
// worker's branch, a worktree's HEAD, or the target branch.
type Move struct {
	// Worker owns the ref; "" for the target branch.
	Worker string
	// Ref is the full ref name, or "HEAD of <dir>" for a worktree's HEAD.
	Ref string
	// Want is where ralphd left it (for a HEAD: the branch it names, as
	// "ref: refs/heads/…"); Got is where it was found ("" when deleted).
	Want, Got string
	// Kept is the branch that keeps Got, when Got had commits Want lacks.
	Kept string
	// Err says why it could not be put back; nil when it was.
	Err error
	// Lock, when set, is a lock file found left beside Ref (Want and Got
	// are then unused): no git of ralphd's held it, and while it stays
	// every move of Ref fails. It was removed unless Err says why not.
	Lock string
	// Planted, when set, says what was found where git opens a file (a
	// FIFO, a link to a device; see Scrubber) and what was done about it;
	// Ref is then the path, and Want, Got and Lock are unused.
	Planted string
}

// String describes the move for a log line or a note.
func (m Move) String() string {
	if m.Planted != "" {
		return m.Planted
	}
	if m.Lock != "" {
		s := fmt.Sprintf("%s was locked by something other than ralphd (%s left in place)", m.Ref, m.Lock)
		if m.Err != nil {
			return s + "; the lock could not be removed: " + m.Err.Error()
		}
		return s + "; the lock was removed"
	}
	got := m.Got
	if got == "" {
		got = "nothing (deleted)"
	}
	s := fmt.Sprintf("%s was moved from %s to %s by something other than ralphd", m.Ref, short(m.Want), short(got))
	if m.Kept != "" {
		s += "; what it pointed at is kept on " + m.Kept
	}
	if m.Err != nil {
		return s + "; it could not be put back: " + m.Err.Error()
	}
	return s + "; put back"
}

func short(s string) string {
	if IsHash(s) {
		return s[:12]
	}
	return s
}

// IsHash reports whether s is a full object id, such as a commit's
// (SHA-1 or SHA-256, in lower-case hex, as git prints one).
func IsHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// RefAt returns the commit ref (a full name, e.g. refs/heads/main) points
// at, or "" when it does not exist.
//
// The name is a for-each-ref pattern: a branch under it (ref/...) counts
// too, the first in name order when ref itself does not exist.
func RefAt(ctx context.Context, repo, ref string) (string, error) {
	refs, err := forEachRef(ctx, repo, ref)
	if err != nil || len(refs) == 0 {
		return "", err
	}
	return refs[0][0], nil
}

// Refs returns the commit each ref under the given prefixes (full names,
// e.g. refs/heads/ralphd/workers/) points at, in one git call.
func Refs(ctx context.Context, repo string, prefixes ...string) (map[string]string, error) {
	found, err := forEachRef(ctx, repo, prefixes...)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, r := range found {
		refs[r[1]] = r[0]
	}
	return refs, nil
}

// forEachRef returns the commit and the name of each ref that matches
// patterns, in name order, from one for-each-ref.
func forEachRef(ctx context.Context, repo string, patterns ...string) ([][2]string, error) {
	out, err := Output(ctx, repo, append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, patterns...)...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", strings.Join(patterns, ", "), err)
	}
	var refs [][2]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(l, " ")
		if ok && IsHash(sha) {
			refs = append(refs, [2]string{sha, ref})
		}
	}
	return refs, nil
}

// Head returns what HEAD of the worktree dir is: "ref: <full ref>" when it
// names a branch, or the commit when it is detached.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := Output(ctx, dir, "symbolic-ref", "-q", "HEAD")
	if sym := strings.TrimSpace(string(out)); err == nil && sym != "" {
		return "ref: " + sym, nil
	}
	c, err := Repo{Dir: dir}.Head(ctx)
	if err == nil && c == "" {
		err = errors.New("HEAD names no commit")
	}
	if err != nil {
		return "", fmt.Errorf("read HEAD of %s: %w", dir, err)
	}
	return c, nil
}

// RestoreRef puts ref back at want (a commit; "" deletes it) where it was
// found at got, by compare-and-swap: if it moved again meanwhile, nothing
// is changed and an error says so. When got has commits want lacks, they
// are kept first on a new branch MovedPrefix+what+"/<time>", returned.
func RestoreRef(ctx context.Context, repo, ref, want, got, what string, now time.Time) (kept string, err error) {
	if got != "" && got != want {
		if kept, err = KeepIfNew(ctx, repo, got, want, MovedPrefix+what, now); err != nil {
			return "", err
		}
	}
	if err := updateRef(ctx, repo, ref, want, got, "ralphd: put back"); err != nil {
		return kept, fmt.Errorf("put %s back: %w", ref, err)
	}
	return kept, nil
}

// ChangesOnBase reports whether every commit reachable from commit and not
// from base makes a change base already holds under another commit: the
// same patch (`git cherry`, by patch id), as the merge queue's rebase
// leaves a worker's commits on the target. A commit reachable from base
// is on it too.
func ChangesOnBase(ctx context.Context, repo, commit, base string) (bool, error) {
	out, err := Output(ctx, repo, "cherry", base, commit)
	if err != nil {
		return false, fmt.Errorf("compare %s with %s: %w", short(commit), base, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "+") {
			return false, nil
		}
	}
	return true, nil
}

// KeepIfNew puts a new branch prefix/<time> at commit when commit has
// anything base lacks (base "" counts as nothing), and returns its name;
// it returns "" when commit is already reachable from base.
func KeepIfNew(ctx context.Context, repo, commit, base, prefix string, now time.Time) (string, error) {
	if base != "" {
		if _, err := Output(ctx, repo, "merge-base", "--is-ancestor", commit, base); err == nil {
			return "", nil
		}
	}
	name, at, err := freeBranch(ctx, repo, prefix+"/"+now.UTC().Format("20060102-150405"), commit)
	if err != nil || at {
		return name, err
	}
	if err := createBranch(ctx, repo, name, commit, "ralphd: keep"); err != nil {
		return "", fmt.Errorf("keep %s on %s: %w", short(commit), name, err)
	}
	return name, nil
}

// freeBranch returns name when it is free for a new branch, else the
// first of name-2, name-3, ... that is, or that a branch already has at
// reuse (when set; at then says so). A name is taken by a branch, by a
// branch under it (name/...), which git would refuse beside it, and by a
// lock file (a git updating it, or one killed while it did).
func freeBranch(ctx context.Context, repo, name, reuse string) (free string, at bool, err error) {
	common, err := CommonDir(ctx, repo)
	if err != nil {
		return "", false, err
	}
	try := name
	for i := 2; ; i++ {
		c, err := RefAt(ctx, repo, "refs/heads/"+try)
		if err != nil {
			return "", false, err
		}
		if reuse != "" && c == reuse {
			return try, true, nil
		}
		if c == "" && !locked(common, "refs/heads/"+try) {
			return try, false, nil
		}
		try = fmt.Sprintf("%s-%d", name, i)
	}
}

// createBranch makes the branch name at commit, which must not exist
// yet, so that a branch someone made meanwhile is never overwritten.
func createBranch(ctx context.Context, repo, name, commit, why string) error {
	return updateRef(ctx, repo, "refs/heads/"+name, commit, "", why)
}

// updateRef moves ref (a full name) from old to want by compare-and-swap,
// with why in its reflog: it fails, changing nothing, when ref is not at
// old. An empty old means ref must not exist; an empty want deletes it.
func updateRef(ctx context.Context, repo, ref, want, old, why string) error {
	if old == "" {
		old = zeroOID
	}
	args := []string{"update-ref", "-m", why, ref, want, old}
	if want == "" {
		args = []string{"update-ref", "-m", why, "-d", ref, old}
	}
	_, err := Output(ctx, repo, args...)
	return err
}

// ErrHeadMoved is wrapped by the error of SetHead when the worktree's HEAD
// changed again while it was being put back.
var ErrHeadMoved = errors.New("HEAD moved again")

// SetHead points the HEAD of the worktree dir back at branch (a full ref)
// when it was found at got (as Head returns it), and keeps a detached
// commit that has anything base lacks on a MovedPrefix+what branch. Only
// HEAD changes: the caller resets the files.
func SetHead(ctx context.Context, dir, branch, got, base, what string, now time.Time) (kept string, err error) {
	if IsHash(got) {
		if kept, err = KeepIfNew(ctx, dir, got, base, MovedPrefix+what, now); err != nil {
			return "", err
		}
	}
	cur, err := Head(ctx, dir)
	if err != nil {
		return kept, err
	}
	if cur != got {
		return kept, fmt.Errorf("put HEAD of %s back: %w (now %s)", dir, ErrHeadMoved, short(cur))
	}
	if _, err := Output(ctx, dir, "symbolic-ref", "-m", "ralphd: put back", "HEAD", branch); err != nil {
		return kept, fmt.Errorf("put HEAD of %s back: %w", dir, err)
	}
	return kept, nil
}

// removeLockIn removes the lock file a git killed while it updated ref
// (a full name) left beside it in the common git dir common, which would
// make every later update of the ref fail. Call it only when no git of
// ralphd's can be updating ref (a worktree's reset by its own worker):
// git dies with ralphd (see command), so its locks outlive it.
func removeLockIn(common, ref string) error {
	if err := os.Remove(lockPath(common, ref)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove a stale lock: %w", err)
	}
	return nil
}

// locked reports whether ref has a lock file beside it in the common git
// dir common (a git updating it, or one killed while it did): such a
// name is not free.
func locked(common, ref string) bool {
	_, err := os.Stat(lockPath(common, ref))
	return err == nil
}

// lockPath is where git puts the lock file of ref (a full name) while it
// updates it, in the common git dir common.
func lockPath(common, ref string) string {
	return filepath.Join(common, filepath.FromSlash(ref)+".lock")
}

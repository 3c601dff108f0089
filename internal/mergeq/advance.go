package mergeq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/git"
)

// journalName is the default journal (Queue.Journal), in the repository's
// common git directory. A journal records a move of a checked-out target
// in progress: the checkout's directory, the old tip and the new one, one
// per line.
const journalName = "ralphd-mergeq.journal"

// maxJournal bounds what the queue reads of its journal and its tip file:
// a directory and two commit ids, many times over.
const maxJournal = 64 << 10

// ErrTargetDirty is returned when the target is checked out with
// uncommitted changes (outside .beads/), so that moving it would mix the
// work into the user's changes. The work is kept on a branch.
var ErrTargetDirty = errors.New("the target branch's checkout has uncommitted changes")

// errMoved is returned when the target moved while the work was verified.
var errMoved = errors.New("the target branch moved during the integration")

// advance fast-forwards the local target to tip. When the target is
// checked out, its checkout moves along. With a remote, a local target
// that is not an ancestor of tip (the user's own commits) stays put. base,
// when set, is a commit tip is known to hold (what it was rebased onto).
func (q *Queue) advance(ctx context.Context, tip, base string) error {
	ref := "refs/heads/" + q.Target
	old, err := line(ctx, q.Repo, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		return fmt.Errorf("advance %s: %w", q.Target, err)
	}
	if old == tip {
		return nil
	}
	if q.want != "" && old != q.want {
		return fmt.Errorf("advance %s: %w", q.Target, errMoved) // the next round's guard puts it back
	}
	if old != base { // else tip was rebased onto it: a fast-forward
		if _, err := git.Output(ctx, q.Repo, "merge-base", "--is-ancestor", old, tip); err != nil {
			if q.Remote != "" {
				return nil // the remote has the work; the local branch has commits of its own
			}
			return fmt.Errorf("advance %s: %w", q.Target, errMoved)
		}
	}
	// While the queue watches, its guard has just found the target checked
	// out where Watch found it (home); otherwise, ask git.
	dir := q.home
	if q.want == "" {
		var err error
		if dir, err = q.checkout(ctx); err != nil {
			return err
		}
	}
	if dir == "" {
		if _, err := git.Output(ctx, q.Repo, "update-ref", "-m", "ralphd: integrate", ref, tip, old); err != nil {
			return fmt.Errorf("advance %s: %w: %w", q.Target, errMoved, err)
		}
		if q.want != "" {
			q.setWant(tip)
		}
		return nil
	}
	return q.moveCheckout(ctx, dir, old, tip)
}

// checkout returns the worktree that has the target checked out, or "".
func (q *Queue) checkout(ctx context.Context) (string, error) {
	all, err := git.List(ctx, q.Repo)
	if err != nil {
		return "", err
	}
	for _, w := range all {
		if w.Branch == q.Target {
			return w.Dir, nil
		}
	}
	return "", nil
}

// moveCheckout moves the target's checkout in dir from old to tip: a
// two-way read-tree (git's own fast-forward of index and files, which
// keeps unrelated local changes such as bd's .beads files and refuses to
// overwrite anything else), then the ref, under a journal for Recover.
//
// Its git calls share one drivers lookup: verify, the last code to run,
// has ended.
func (q *Queue) moveCheckout(ctx context.Context, dir, old, tip string) error {
	run := git.NewRunner(dir)
	out, err := run.Output(ctx, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude).beads")
	if err != nil {
		return fmt.Errorf("advance %s: %w", q.Target, err)
	}
	if len(strings.TrimSpace(string(out))) > 0 {
		return fmt.Errorf("advance %s in %s: %w", q.Target, dir, ErrTargetDirty)
	}
	if err := q.shift(ctx, run, dir, old, tip, "ralphd: integrate"); err != nil {
		return err
	}
	if q.want != "" {
		q.setWant(tip)
	}
	return nil
}

// shift moves the target's checkout in dir, and then the target's ref,
// from old to tip, under the journal: a two-way read-tree (which refuses
// to overwrite local changes), then a compare-and-swap of the ref. Its
// git calls in dir run through run.
func (q *Queue) shift(ctx context.Context, run *git.Runner, dir, old, tip, why string) error {
	jpath, err := q.journalPath(ctx)
	if err != nil {
		return err
	}
	if err := writeJournal(jpath, dir, old, tip); err != nil {
		return fmt.Errorf("advance %s: %w", q.Target, err)
	}
	if _, err := run.Output(ctx, "read-tree", "-m", "-u", old, tip); err != nil {
		_ = os.Remove(jpath) // read-tree checks before it writes: nothing moved
		return fmt.Errorf("advance %s in %s: %w", q.Target, dir, err)
	}
	if _, err := run.Output(ctx, "update-ref", "-m", why, "refs/heads/"+q.Target, tip, old); err != nil {
		// Someone committed meanwhile: put the files back.
		if _, uerr := run.Output(ctx, "read-tree", "-m", "-u", tip, old); uerr != nil {
			return fmt.Errorf("advance %s: %w: %w (and the checkout could not be put back: %w; Recover will)", q.Target, errMoved, err, uerr)
		}
		_ = os.Remove(jpath)
		return fmt.Errorf("advance %s: %w: %w", q.Target, errMoved, err)
	}
	if err := os.Remove(jpath); err != nil {
		return fmt.Errorf("advance %s: %w", q.Target, err)
	}
	return nil
}

// Recover removes the queue's worktree a run that did not end left, and
// finishes a move of the target's checkout that a crash interrupted: the
// journal names the checkout and the old and new tips. If the ref moved,
// only the journal is left to remove; if not, the files the interrupted
// read-tree may have half-written are put back to the old tip and the
// move is done again. It reports whether there was anything to recover.
func (q *Queue) Recover(ctx context.Context) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	jpath, err := q.journalPath(ctx)
	if err != nil {
		return false, err
	}
	// The queue's worktree goes first: a kill mid `git worktree add`
	// leaves it in a state that fails every list of worktrees.
	if err := q.dropTree(ctx); err != nil {
		return false, err
	}
	if err := q.removeStaleLocks(ctx); err != nil {
		return false, err
	}
	dir, old, tip, found, err := q.readJournal(ctx, jpath)
	if !found || err != nil {
		return found, err
	}
	head, err := line(ctx, q.Repo, "rev-parse", "--verify", "-q", "refs/heads/"+q.Target)
	if err != nil {
		return true, fmt.Errorf("recover the merge queue: %w", err)
	}
	switch head {
	case tip:
		// The ref moves last in an integration: the files did too. A
		// checkout put back under a ref already in place (its HEAD was
		// repointed) has the index at old until its read-tree ends.
		return true, q.finishFiles(ctx, dir, old, tip, jpath)
	case old:
	default:
		return true, fmt.Errorf("recover the merge queue: %s is at %s, neither %s nor %s; check its checkout %s, then remove %s", q.Target, head, old, tip, dir, jpath)
	}
	idxTree, newTree, err := trees(ctx, dir, tip)
	if err != nil {
		return true, err
	}
	if idxTree != newTree {
		if err := redo(ctx, dir, old, tip); err != nil {
			return true, err
		}
	}
	if _, err := git.Output(ctx, dir, "update-ref", "-m", "ralphd: integrate (recovered)", "refs/heads/"+q.Target, tip, old); err != nil {
		return true, fmt.Errorf("recover the merge queue: %w", err)
	}
	return true, os.Remove(jpath)
}

// readJournal reads the journal at jpath: the checkout of a move in
// progress, and its old and new tips. found is false when there is no
// journal. Anything there that is not a journal the queue wrote, or one
// naming a directory where the target is not checked out, is an error
// that says what to check.
func (q *Queue) readJournal(ctx context.Context, jpath string) (dir, old, tip string, found bool, err error) {
	b, err := atomicfile.Read(jpath, maxJournal)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", "", false, nil
	}
	if errors.Is(err, atomicfile.ErrNotRegular) || errors.Is(err, atomicfile.ErrTooLarge) {
		return "", "", "", true, fmt.Errorf("recover the merge queue: %w, not a journal ralphd wrote; remove it after checking %s", err, q.Target)
	}
	if err != nil {
		return "", "", "", false, fmt.Errorf("recover the merge queue: %w", err)
	}
	dir, old, tip, ok := parseJournal(string(b))
	if !ok {
		return "", "", "", true, fmt.Errorf("recover the merge queue: %s is not a journal; remove it after checking %s", jpath, q.Target)
	}
	// The queue only ever moves the checkout that has the target (the
	// repository's own, or wherever the target is checked out): a
	// journal naming another directory is not the queue's.
	top, _ := line(ctx, q.Repo, "rev-parse", "--show-toplevel")
	if home, _ := q.checkout(ctx); !git.SameDir(top, dir) && !git.SameDir(home, dir) {
		return "", "", "", true, fmt.Errorf("recover the merge queue: %s names %s, which is not where %s is checked out; check %s, then remove %s", jpath, dir, q.Target, q.Target, jpath)
	}
	return dir, old, tip, true, nil
}

// finishFiles ends a journalled move whose ref is already at tip: when
// the index is still old's, the read-tree did not end, so the files are
// put back at old and moved again.
func (q *Queue) finishFiles(ctx context.Context, dir, old, tip, jpath string) error {
	idxTree, newTree, err := trees(ctx, dir, tip)
	if err != nil {
		return err
	}
	if oldTree, err := line(ctx, dir, "rev-parse", old+"^{tree}"); err == nil && idxTree == oldTree && idxTree != newTree {
		if err := redo(ctx, dir, old, tip); err != nil {
			return err
		}
	}
	return os.Remove(jpath)
}

// trees returns the tree of dir's index, after removing the index lock a
// killed git left (nothing else writes this index while ralphd holds its
// lock), and tip's tree.
func trees(ctx context.Context, dir, tip string) (idx, tipTree string, err error) {
	if gitDir, err := line(ctx, dir, "rev-parse", "--absolute-git-dir"); err == nil {
		_ = os.Remove(filepath.Join(gitDir, "index.lock"))
	}
	if idx, err = line(ctx, dir, "write-tree"); err != nil {
		return "", "", fmt.Errorf("recover the merge queue: %w", err)
	}
	if tipTree, err = line(ctx, dir, "rev-parse", tip+"^{tree}"); err != nil {
		return "", "", fmt.Errorf("recover the merge queue: %w", err)
	}
	return idx, tipTree, nil
}

// redo puts back at old the files an interrupted move from old to tip may
// have written, and moves them again.
func redo(ctx context.Context, dir, old, tip string) error {
	if err := undoPartial(ctx, dir, old, tip); err != nil {
		return err
	}
	if _, err := git.Output(ctx, dir, "read-tree", "-m", "-u", old, tip); err != nil {
		return fmt.Errorf("recover the merge queue: redo the move: %w", err)
	}
	return nil
}

// undoPartial puts back, at old, the files an interrupted two-way
// read-tree from old to tip may have written; the index is still old's.
func undoPartial(ctx context.Context, dir, old, tip string) error {
	out, err := git.Output(ctx, dir, "diff", "--no-renames", "--name-status", "-z", old, tip)
	if err != nil {
		return fmt.Errorf("recover the merge queue: %w", err)
	}
	f := strings.Split(string(out), "\x00")
	var restore []string
	for i := 0; i+1 < len(f); i += 2 {
		status, path := f[i], f[i+1]
		if strings.HasPrefix(status, "A") {
			// Added by the move: absent before it (read-tree refuses to
			// overwrite an untracked file), so any file there is ours.
			p := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("recover the merge queue: %w", err)
			}
			continue
		}
		restore = append(restore, path)
	}
	if len(restore) > 0 {
		args := append([]string{"checkout", "-q", old, "--"}, restore...)
		if _, err := git.Output(ctx, dir, args...); err != nil {
			return fmt.Errorf("recover the merge queue: %w", err)
		}
	}
	return nil
}

func parseJournal(s string) (dir, old, tip string, ok bool) {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 3 || !filepath.IsAbs(lines[0]) || !git.IsHash(lines[1]) || !git.IsHash(lines[2]) {
		return "", "", "", false
	}
	return lines[0], lines[1], lines[2], true
}

// journalPath is Queue.Journal, or the default in the repository's
// common git directory.
func (q *Queue) journalPath(ctx context.Context) (string, error) {
	if q.Journal != "" {
		return q.Journal, nil
	}
	common, err := git.CommonDir(ctx, q.Repo)
	if err != nil {
		return "", fmt.Errorf("merge queue journal: %w", err)
	}
	return filepath.Join(common, journalName), nil
}

// writeJournal records in the journal at path a move of the checkout dir
// from old to tip, for Recover, through atomicfile.Write. When the write
// fails after its rename (the directory's fsync), the journal of this move
// is removed again: the caller gives up before anything moves, and Recover
// must not finish a move the queue abandoned.
func writeJournal(path, dir, old, tip string) error {
	body := []byte(dir + "\n" + old + "\n" + tip + "\n")
	err := atomicfile.Write(path, body, 0o600)
	if err != nil {
		if b, rerr := atomicfile.Read(path, maxJournal); rerr == nil && bytes.Equal(b, body) {
			_ = os.Remove(path)
		}
	}
	return err
}

// removeStaleLocks removes, at the start, the locks a git of ralphd's
// killed with it left on the target's ref and in its checkout (index,
// HEAD): git dies with ralphd (gitsafe), and a lock left would make the
// next move of the target, or its repair, fail or leave the checkout
// behind its ref. Nothing else writes them while ralphd holds its lock.
func (q *Queue) removeStaleLocks(ctx context.Context) error {
	dir, err := q.checkout(ctx)
	if err != nil {
		return err
	}
	paths, err := q.lockPaths(ctx, dir)
	if err != nil {
		return fmt.Errorf("recover the merge queue: %w", err)
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("recover the merge queue: %w", err)
		}
	}
	return nil
}

package mergeq

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/proc"
)

// The target is the merge queue's: once Watch has run, only Integrate
// moves it. Before each integration round, and whenever Check is called
// (the pool calls it when it ends), the target's ref and its checkout are
// compared with where the queue left them. A move the queue did not make
// (an agent's update-ref, branch -f, push to the repository itself, an
// edit of the ref file or of packed-refs, a deleted ref, a reset in the
// target's checkout, a repointed HEAD there, or a commit made by hand) is
// undone: what the target was moved to is kept on a
// workertree.MovedPrefix branch, the ref is put back by compare-and-swap,
// the checkout's files are moved back under the journal (so a SIGKILL is
// finished by Recover), and the move is reported to Moved.
//
// A lock file that stays beside the target's ref, or beside its
// checkout's HEAD or index, would make every later move fail (git takes
// those locks with O_EXCL): while the queue watches, only its own git
// takes them, under q.mu, so one found while it holds q.mu is not its
// own. It is removed once it has stayed lockGrace (a git's own lock lives
// for milliseconds), and reported to Moved like a move.

// ErrTargetMoved is wrapped by the errors of moves that could not be put
// back.
var ErrTargetMoved = errors.New("the target branch was moved by something other than ralphd")

// Watch starts guarding the target: its tip now, and the worktree that has
// it checked out, are where the queue expects them. Call it after Recover.
//
// With a remote, it first checks the remote's target (see checkRemote),
// and returns what it found there that a person should know.
func (q *Queue) Watch(ctx context.Context) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.resume(ctx); err != nil {
		return nil, err
	}
	var notes []string
	if q.Remote != "" {
		var err error
		if notes, err = q.checkRemote(ctx); err != nil {
			return notes, err
		}
	}
	tip, err := git.RefAt(ctx, q.Repo, q.ref())
	if err != nil {
		return notes, err
	}
	if tip == "" {
		return notes, fmt.Errorf("watch %s: the branch does not exist", q.Target)
	}
	dir, err := q.checkout(ctx)
	if err != nil {
		return notes, err
	}
	q.want, q.home, q.locks = tip, dir, nil
	return notes, q.writeTip()
}

// resume starts from where a run that did not end left the target
// (TipFile): a target moved since is put back like any other move.
func (q *Queue) resume(ctx context.Context) error {
	if q.TipFile == "" {
		return nil
	}
	b, err := atomicfile.Read(q.TipFile, maxJournal)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if errors.Is(err, atomicfile.ErrNotRegular) || errors.Is(err, atomicfile.ErrTooLarge) {
		return fmt.Errorf("watch %s: %w, not the record of the target ralphd wrote; remove it after checking %s", q.Target, err, q.Target)
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", q.Target, err)
	}
	left := strings.TrimSpace(string(b))
	if !git.IsHash(left) {
		return fmt.Errorf("watch %s: %s does not hold a commit id; remove it after checking %s", q.Target, q.TipFile, q.Target)
	}
	if _, err := line(ctx, q.Repo, "cat-file", "-e", left+"^{commit}"); err != nil {
		return fmt.Errorf("watch %s: %s names %s, which is not in the repository; remove it after checking %s", q.Target, q.TipFile, left, q.Target)
	}
	dir, err := q.checkout(ctx)
	if err != nil {
		return err
	}
	q.want, q.home, q.locks = left, dir, nil
	_, err = q.guard(ctx)
	return err
}

// Unwatch ends the guard of the target: the run ended, and the target is
// the person's again until the next Watch.
func (q *Queue) Unwatch() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.want, q.home, q.locks = "", "", nil
	if q.TipFile == "" {
		return nil
	}
	if err := os.Remove(q.TipFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unwatch %s: %w", q.Target, err)
	}
	return nil
}

// setWant records where the queue left the target.
func (q *Queue) setWant(tip string) {
	q.want = tip
	if q.writeTip() != nil && q.TipFile != "" {
		// A stale tip would have the next start put the target back
		// behind this move: without a file, it trusts the target.
		_ = os.Remove(q.TipFile)
	}
}

func (q *Queue) writeTip() error {
	if q.TipFile == "" || q.want == "" {
		return nil
	}
	if err := atomicfile.Write(q.TipFile, []byte(q.want+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the tip of %s: %w", q.Target, err)
	}
	return nil
}

// checkRemote fetches the remote's target at the start of a run. The
// local target and the remote's may differ legitimately (other clones
// push; a person commits locally), and ralphd never force-pushes, so:
//   - a remote target that no longer holds what the last fetch saw was
//     rewritten by someone else: what it held is kept on a
//     ralphd/moved/<remote>-<target>/<time> branch, and said;
//   - a local target behind the remote's (work pushed just before a
//     crash, or another clone's) is fast-forwarded, its checkout along
//     under the journal; a dirty checkout is left, and said;
//   - a local target with commits the remote lacks is left alone, and
//     said: ralphd integrates onto the remote's target and never pushes
//     them.
func (q *Queue) checkRemote(ctx context.Context) ([]string, error) {
	var notes []string
	tracking := "refs/remotes/" + q.Remote + "/" + q.Target
	seen, err := git.RefAt(ctx, q.Repo, tracking)
	if err != nil {
		return nil, err
	}
	remote, err := q.base(ctx)
	if err != nil {
		return nil, err
	}
	if seen != "" && seen != remote {
		kept, err := git.KeepIfNew(ctx, q.Repo, seen, remote, git.MovedPrefix+q.Remote+"-"+q.Target, q.now())
		if err != nil {
			return notes, err
		}
		if kept != "" {
			notes = append(notes, fmt.Sprintf("%s/%s was rewritten since the last fetch (it no longer holds %s); what it held is kept on %s", q.Remote, q.Target, seen[:12], kept))
		}
	}
	local, err := git.RefAt(ctx, q.Repo, q.ref())
	if err != nil || local == "" || local == remote {
		return notes, err
	}
	behind := q.ancestor(ctx, local, remote)
	switch {
	case behind:
		if err := q.advance(ctx, remote, ""); err != nil {
			notes = append(notes, fmt.Sprintf("the local %s is behind %s/%s and could not follow it: %v", q.Target, q.Remote, q.Target, err))
		} else {
			notes = append(notes, fmt.Sprintf("the local %s was behind %s/%s (work pushed before a stop, or another clone's): fast-forwarded to %s", q.Target, q.Remote, q.Target, remote[:12]))
		}
	default:
		notes = append(notes, fmt.Sprintf("the local %s has commits %s/%s lacks; ralphd integrates onto %s/%s and never pushes them", q.Target, q.Remote, q.Target, q.Remote, q.Target))
	}
	return notes, nil
}

// ancestor reports whether a is an ancestor of b.
func (q *Queue) ancestor(ctx context.Context, a, b string) bool {
	_, err := git.Output(ctx, q.Repo, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// Check compares the target and its checkout with where the queue left
// them, puts back what moved and reports each move to Moved; it returns
// the moves too.
func (q *Queue) Check(ctx context.Context) ([]git.Move, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.guard(ctx)
}

// TryCheck is Check unless an integration is under way, which checks the
// target itself before it admits any work: then it checks nothing, and
// reports checked false.
func (q *Queue) TryCheck(ctx context.Context) (moves []git.Move, checked bool, err error) {
	if !q.mu.TryLock() {
		return nil, false, nil
	}
	defer q.mu.Unlock()
	moves, err = q.guard(ctx)
	return moves, true, err
}

// Tip returns where the queue expects the target; "" before Watch.
func (q *Queue) Tip() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.want
}

func (q *Queue) ref() string { return "refs/heads/" + q.Target }

// guard is Check with q.mu held. Its error says why it could not look, or
// joins the errors of the moves it could not put back (each wraps
// ErrTargetMoved); the work then waits for the person to fix the target.
func (q *Queue) guard(ctx context.Context) ([]git.Move, error) {
	if q.want == "" {
		return nil, nil // not watching
	}
	started := time.Now()
	moves, err := q.clearLocks(ctx)
	if err != nil {
		return nil, err
	}
	if q.home != "" {
		head, err := git.Head(ctx, q.home)
		if err != nil {
			return nil, err
		}
		if want := "ref: " + q.ref(); head != want {
			m := git.Move{Ref: "HEAD of " + q.home, Want: want, Got: head}
			m.Kept, m.Err = q.putHeadBack(ctx, head)
			moves = append(moves, m)
		}
	}
	got, err := git.RefAt(ctx, q.Repo, q.ref())
	if err != nil {
		return moves, err
	}
	if got != q.want {
		m := git.Move{Ref: q.ref(), Want: q.want, Got: got}
		m.Kept, m.Err = q.putBack(ctx, got)
		moves = append(moves, m)
	}
	if len(moves) == 0 {
		q.cleanAt.Store(started.UnixNano())
	}
	return moves, q.report(moves)
}

// CleanAt returns when a check last began that found the target and its
// checkout where the queue left them (zero before any): a move found
// later was made after it. It does not wait for the queue's lock, and may
// be called from Moved.
func (q *Queue) CleanAt() time.Time {
	n := q.cleanAt.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// report tells Moved of each move, and joins the errors of those that
// could not be put back.
func (q *Queue) report(moves []git.Move) error {
	var errs []error
	for _, m := range moves {
		if q.Moved != nil {
			q.Moved(m)
		}
		if m.Err != nil {
			errs = append(errs, m.Err)
		}
	}
	return errors.Join(errs...)
}

// putBack returns the target from got to q.want. When its checkout was
// moved along (its index is got's), the files go back too, under the
// journal; a checkout with other changes keeps them (a later integration
// refuses it as dirty, keeping the work).
func (q *Queue) putBack(ctx context.Context, got string) (string, error) {
	kept := ""
	if got != "" {
		var err error
		if kept, err = git.KeepIfNew(ctx, q.Repo, got, q.want, git.MovedPrefix+q.Target, q.now()); err != nil {
			return "", err
		}
	}
	if q.home != "" && got != "" && indexAt(ctx, q.home, got) && !indexAt(ctx, q.home, q.want) {
		if err := q.shift(ctx, git.NewRunner(q.home), q.home, got, q.want, "ralphd: put back"); err != nil {
			return kept, fmt.Errorf("%w: %w", ErrTargetMoved, err)
		}
		return kept, nil
	}
	_, err := git.RestoreRef(ctx, q.Repo, q.ref(), q.want, got, q.Target, q.now())
	if err != nil {
		return kept, fmt.Errorf("%w: %w", ErrTargetMoved, err)
	}
	return kept, nil
}

// putHeadBack points the HEAD of the target's checkout back at the
// target, and its files with it when they followed HEAD.
func (q *Queue) putHeadBack(ctx context.Context, head string) (string, error) {
	at := head
	if sym, ok := cutRef(head); ok {
		var err error
		if at, err = git.RefAt(ctx, q.Repo, sym); err != nil {
			return "", err
		}
	}
	files := at != "" && indexAt(ctx, q.home, at) && !indexAt(ctx, q.home, q.want)
	var jpath string
	if files {
		// The ref is already at want: the journal's old is where the
		// files are, and Recover finishes the move (finishFiles).
		var err error
		if jpath, err = q.journalPath(ctx); err != nil {
			return "", err
		}
		if err := writeJournal(jpath, q.home, at, q.want); err != nil {
			return "", err
		}
	}
	kept, err := git.SetHead(ctx, q.home, q.ref(), head, q.want, q.Target+"-head", q.now())
	if err != nil {
		if jpath != "" {
			_ = os.Remove(jpath)
		}
		return kept, fmt.Errorf("%w: %w", ErrTargetMoved, err)
	}
	if !files {
		return kept, nil
	}
	if _, err := git.Output(ctx, q.home, "read-tree", "-m", "-u", at, q.want); err != nil {
		_ = os.Remove(jpath)
		return kept, fmt.Errorf("%w: put the files of %s back: %w", ErrTargetMoved, q.home, err)
	}
	return kept, os.Remove(jpath)
}

func cutRef(head string) (string, bool) {
	if len(head) > 5 && head[:5] == "ref: " {
		return head[5:], true
	}
	return "", false
}

// indexAt reports whether the index of the worktree dir holds commit's
// tree.
func indexAt(ctx context.Context, dir, commit string) bool {
	idx, err := line(ctx, dir, "write-tree")
	if err != nil {
		return false
	}
	tree, err := line(ctx, dir, "rev-parse", commit+"^{tree}")
	return err == nil && idx == tree
}

// checkRequest puts the worker's HEAD and branch back where the pool
// recorded them (req.Tip) when something else moved them while the work
// waited for the queue, and reports each move. The worker's files go back
// too when they followed the move (a crash here is recovered by the
// worker tree's reset, which keeps its work on a wip branch).
func (q *Queue) checkRequest(ctx context.Context, req Request) error {
	if req.Tip == "" {
		return nil
	}
	ref := "refs/heads/" + req.Branch
	var moves []git.Move
	head, err := git.Head(ctx, req.Dir)
	if err != nil {
		return err
	}
	if want := "ref: " + ref; head != want {
		m := git.Move{Worker: req.Worker, Ref: "HEAD of " + req.Dir, Want: want, Got: head}
		at := head
		if sym, ok := cutRef(head); ok {
			at, _ = git.RefAt(ctx, q.Repo, sym)
		}
		m.Kept, m.Err = git.SetHead(ctx, req.Dir, ref, head, req.Tip, req.Worker+"-head", q.now())
		if m.Err == nil && at != "" {
			m.Err = followFiles(ctx, req.Dir, at, req.Tip)
		}
		moves = append(moves, m)
	}
	got, err := git.RefAt(ctx, q.Repo, ref)
	if err != nil {
		return err
	}
	if got != req.Tip {
		m := git.Move{Worker: req.Worker, Ref: ref, Want: req.Tip, Got: got}
		files := got != "" && indexAt(ctx, req.Dir, got) && !indexAt(ctx, req.Dir, req.Tip)
		if m.Kept, m.Err = git.RestoreRef(ctx, q.Repo, ref, req.Tip, got, req.Worker, q.now()); m.Err == nil && files {
			m.Err = followFiles(ctx, req.Dir, got, req.Tip)
		}
		moves = append(moves, m)
	}
	if err := q.report(moves); err != nil {
		return fmt.Errorf("integrate %s: %w", req.Branch, err)
	}
	return nil
}

// followFiles moves the index and files of dir from from's tree to to's
// when the index is from's, keeping local changes (a two-way read-tree).
func followFiles(ctx context.Context, dir, from, to string) error {
	if !indexAt(ctx, dir, from) || indexAt(ctx, dir, to) {
		return nil
	}
	if _, err := git.Output(ctx, dir, "read-tree", "-m", "-u", from, to); err != nil {
		return fmt.Errorf("put the files of %s back: %w", dir, err)
	}
	return nil
}

// lockGrace is how long a lock on the target must stay before the queue
// takes it for planted, or left by a killed git: git holds its locks for
// milliseconds, and a person's git on the target's checkout may be
// finishing.
const lockGrace = time.Second

// lockPoll is how often a lock is looked at during its grace.
const lockPoll = 20 * time.Millisecond

// lockPaths lists the lock files that block a move of the target: its
// ref's, and, when it is checked out in home, that checkout's HEAD's and
// index's. A lock on packed-refs does not: the queue never deletes the
// target, and only a deletion rewrites packed-refs.
func (q *Queue) lockPaths(ctx context.Context, home string) ([]string, error) {
	common, err := git.CommonDir(ctx, q.Repo)
	if err != nil {
		return nil, fmt.Errorf("find the locks of %s: %w", q.Target, err)
	}
	paths := []string{filepath.Join(common, filepath.FromSlash(q.ref())+".lock")}
	if home == "" {
		return paths, nil
	}
	gitDir, err := line(ctx, home, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return nil, fmt.Errorf("find the locks of %s: %w", q.Target, err)
	}
	return append(paths, filepath.Join(gitDir, "HEAD.lock"), filepath.Join(gitDir, "index.lock")), nil
}

// clearLocks removes the locks on the target that stayed lockGrace and
// returns them as moves (reported with the guard's other moves). The
// paths are found once per watch.
func (q *Queue) clearLocks(ctx context.Context) ([]git.Move, error) {
	if q.locks == nil {
		var err error
		if q.locks, err = q.lockPaths(ctx, q.home); err != nil {
			return nil, err
		}
	}
	var moves []git.Move
	for _, p := range q.locks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return moves, fmt.Errorf("look at %s: %w", p, err)
		}
		left, err := lockStays(ctx, p, fi.ModTime())
		if err != nil || !left {
			if err != nil {
				return moves, err
			}
			continue
		}
		m := git.Move{Ref: q.lockedRef(p), Lock: p}
		if err := os.RemoveAll(p); err != nil {
			m.Err = fmt.Errorf("%w: %w", ErrTargetMoved, err)
		}
		moves = append(moves, m)
	}
	return moves, nil
}

// lockStays waits, at most lockGrace from now or from mod (the lock's
// change time, when in the past), for the lock at p to go, and reports
// whether it stayed.
func lockStays(ctx context.Context, p string, mod time.Time) (bool, error) {
	now := time.Now()
	deadline := now.Add(lockGrace)
	if mod.Before(now) && mod.Add(lockGrace).Before(deadline) {
		deadline = mod.Add(lockGrace)
	}
	for {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return true, nil
		}
		if err := proc.Sleep(ctx, min(wait, lockPoll)); err != nil {
			return false, fmt.Errorf("wait for the lock %s: %w", p, err)
		}
	}
}

// lockedRef names what the lock at p locks, for Move.Ref.
func (q *Queue) lockedRef(p string) string {
	switch filepath.Base(p) {
	case "HEAD.lock":
		return "HEAD of " + q.home
	case "index.lock":
		return "the index of " + q.home
	}
	return q.ref()
}

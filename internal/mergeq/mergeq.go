// Package mergeq integrates worker branches into the target branch one at
// a time: a merge queue of one.
//
// A worker hands its work over (Hand): what it left uncommitted is
// committed, and the work is from then on one commit, which the queue
// integrates while the worker goes on to its next issue. Integrating
// checks that commit out in the queue's own worktree (never a worker's,
// never the target's checkout), rebases it onto the current target there,
// runs verify on the result, and only then lands it through the queue's
// Strategy. A conflict or a red verify keeps the work on a branch and
// names the conflicting files; nothing lands.
//
// The strategy decides where the rebased, verified work goes and when
// its issue counts as integrated. The default, ff (ff.go), fast-forwards
// the target; with a remote, the result is pushed (never forced) first,
// and a rejected push means someone else got there first: fetch, rebase,
// verify and push again, a bounded number of times.
//
// Where to look:
//
//	integrate.go  Integrate, one round's steps in order: prepare, rebase,
//	              checkTracker, verify, land
//	strategy.go   the Strategy interface, the Outcome a pool acts on, and
//	              the registry of strategies by name
//	ff.go         the strategy ff
//	advance.go    moving the target and its checkout, under a journal;
//	              Recover
//	guard.go      putting back moves of the target the queue did not make
//	tree.go       the queue's own worktree
//
// The target is never left mid-rebase, because no rebase happens in its
// checkout. Moving it is a compare-and-swap of the ref; when the target is
// checked out somewhere, its files are moved first by a two-way read-tree
// under a journal, so that a SIGKILL at any point is finished or undone by
// Recover at the next start.
package mergeq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/proc"
)

// DefaultMaxPushTries bounds fetch-rebase-verify-push rounds. Rounds
// after a rejection wait a random, doubling pause (backoff), so eight
// rounds wait five seconds at most in all: enough for clones that push
// at the same moment to take turns.
const DefaultMaxPushTries = 8

// KeptPrefix starts the branches that keep work that could not be
// integrated: ralphd/kept/<issue>/<time>.
const KeptPrefix = "ralphd/kept/"

// Queue integrates into Target of the repository Repo.
type Queue struct {
	// Repo is the main repository's work tree (or any of its worktrees).
	Repo string
	// Target is the branch to integrate into, e.g. "main".
	Target string
	// Remote, when set (e.g. "origin"), is fetched before and pushed after
	// each integration.
	Remote string
	// Verify checks the rebased result in dir, the queue's worktree; nil
	// means no check.
	Verify func(ctx context.Context, dir string) error
	// Forge is where the strategy pr opens pull requests; nil for the
	// others.
	Forge Forge
	// Strategy decides where the rebased, verified work goes and when
	// its issue counts as integrated (see Strategy); nil means the
	// default, ff. LookupStrategy turns the configuration's name into one.
	Strategy Strategy
	// MaxPushTries bounds the rounds when pushes are rejected; zero means
	// DefaultMaxPushTries.
	MaxPushTries int
	// Now stamps kept branches; nil means time.Now.
	Now func() time.Time
	// Journal is the file that records a move of the target's checkout in
	// progress, for Recover. Recover acts on what it names, so it must be
	// where no agent can write: ralphd's state directory, which the
	// sandbox keeps read-only (an agent can write the git directory, so
	// a journal there could make the next start move the target to the
	// agent's commit). Empty means the repository's common git directory,
	// for tools and tests.
	Journal string
	// TipFile, when set, is where the queue records, while it watches
	// the target (Watch), the tip it last set or found: a file that
	// outlives its run (a crash) tells the next Watch where the target
	// must be, so that a move made before the crash is not taken for the
	// target's tip. Unwatch removes it. Keep it where agents cannot write
	// (ralphd's state directory).
	TipFile string
	// Tree is the queue's own worktree, where each request's work is
	// checked out, rebased and verified. Keep it where agents cannot
	// write (under ralphd's state directory): what it holds after the
	// rebase is what the target moves to. The queue creates it, resets it
	// for each request, and RemoveTree removes it. Empty means a directory
	// in the repository's common git directory, for tools and tests.
	Tree string
	// Moved, when set, is told of each move of the target (or of its
	// checkout's HEAD, or of a worker's branch or HEAD found by Hand) that
	// the queue did not make, after it was put back (see Watch). It may be
	// called with the queue's lock held, and from Hand concurrently with
	// an integration: it must not call the queue.
	Moved func(git.Move)
	// Scrub, when set, is called before Hand's and each integration's git
	// work: a pool removes there what an agent planted where git opens a
	// file (a FIFO, a link to /dev/zero: see gitscrub) and charges it. Its
	// error stops the hand-over or integration. Like Moved, it may be
	// called with the queue's lock held and must not call the queue.
	Scrub func() error

	mu sync.Mutex
	// want is where the queue left the target ("" until Watch); home is
	// the worktree that had it checked out at Watch.
	want, home string
	// locks are the lock files that block a move of the target (guard).
	locks []string
	// tree is the queue's worktree once it is known to be registered;
	// treeGitDir its git dir, once looked up ("" until then).
	tree, treeGitDir string
	// cleanAt is when (Unix nanoseconds) the last check that found the
	// target in place began (CleanAt).
	cleanAt atomic.Int64
}

// Request asks to integrate a worker's work.
type Request struct {
	Worker string // for messages
	Issue  string // names the kept branch
	// Commit is the work: what Hand returned. When it is empty, Integrate
	// hands the work over itself from Dir and Branch first.
	Commit string
	// Title and Body describe the work, for a pull request (the
	// strategy pr).
	Title, Body string
	Dir         string // the worker's worktree
	Branch      string // the worker's branch, checked out in Dir
	// Tip, when set, is where the worker's pool left the branch: a HEAD
	// or branch found elsewhere is put back first, and reported to Moved.
	Tip string
	// Checked says that the caller found HEAD and the branch at Tip just
	// before, with nothing of its own in between (a window's end): Hand
	// does not look again.
	Checked bool
	// Admit, when set, is asked once the queue's checks are done and
	// before anything moves; an error returns at once, the work left
	// where it was (a pool refuses work whose window saw a forbidden move).
	Admit func() error
	// Rebased, when set, is told the rebased and verified result before
	// the target (or the remote) moves to it: a record of it tells a
	// start after a crash whether the work reached the target. An error
	// stops the integration, the target unmoved.
	Rebased func(commit string) error
}

// Result says what happened. Outcome sums it up for the caller.
type Result struct {
	// Integrated is true when the work is where the strategy puts
	// integrated work (for ff: the target, and the remote, now has it);
	// Commit is then where it is (for ff: the target's new tip).
	Integrated bool
	Commit     string
	// Waiting is true when the strategy put the work where something
	// outside ralphd decides whether it is integrated (a pull request);
	// Commit is the work as landed, and Why says what it waits for.
	Waiting bool
	// Branch, when set, is the branch the work was put on instead of
	// the target (the strategies branch and pr): Commit is its tip.
	Branch string
	// PR is the pull request the work waits in (the strategy pr).
	PR PullRequest
	// Why is the strategy's word on work that waits, or that it refused
	// (the work is then kept).
	Why string
	// Conflicts lists the files the rebase could not merge.
	Conflicts []string
	// VerifyErr is verify's failure on the rebased result.
	VerifyErr error
	// Rejected is true when every round's landing asked for another (for
	// ff: every push was rejected, or the target moved each time).
	Rejected bool
	// Kept is the branch that keeps the work when it was not integrated.
	Kept string
	// Rounds counts fetch-rebase-verify(-push) rounds.
	Rounds int
	// Empty is true when the branch had nothing the target lacks.
	Empty bool
	// Tracker lists the files under .beads/ that the branch adds, changes
	// or deletes (bd's interactions.jsonl aside). They tell every clone's
	// bd where the tracker is (metadata.json: in server mode, the Dolt
	// server's host, port and database) and how to use it; a change to
	// them is a person's to make, never integrated from an agent's work.
	Tracker []string
	// LocalErr says why the local target did not follow the remote, when
	// the work was pushed but the local branch could not move.
	LocalErr error
}

// Outcome sums the result up: Integrated (the work landed, or there was
// nothing to integrate), Waiting, or Failed.
func (r Result) Outcome() Outcome {
	switch {
	case r.Integrated || r.Empty:
		return Integrated
	case r.Waiting:
		return Waiting
	}
	return Failed
}

// Reason describes a result that was not integrated, for a note on the
// issue.
func (r Result) Reason() string {
	switch {
	case r.Integrated:
		return "integrated"
	case r.Waiting:
		return "waiting: " + r.Why
	case len(r.Conflicts) > 0:
		return fmt.Sprintf("rebase onto the target conflicted in %s; the work is kept on %s", strings.Join(r.Conflicts, ", "), r.Kept)
	case len(r.Tracker) > 0:
		return fmt.Sprintf("the work changes the tracker's own files (%s), which BUILD may not; the work is kept on %s", strings.Join(r.Tracker, ", "), r.Kept)
	case r.VerifyErr != nil:
		return fmt.Sprintf("verify failed after rebasing onto the target (%v); the work is kept on %s", r.VerifyErr, r.Kept)
	case r.Rejected:
		return fmt.Sprintf("every push to the remote was rejected (%d rounds); the work is kept on %s", r.Rounds, r.Kept)
	case r.Empty:
		return "nothing to integrate"
	case r.Why != "":
		return fmt.Sprintf("%s; the work is kept on %s", r.Why, r.Kept)
	}
	return "not integrated"
}

func (q *Queue) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

// Hand hands a worker's work over to the queue: it puts the worker's
// HEAD and branch back where the pool left them (req.Tip) when something
// else moved them (unless req.Checked and nothing is left to commit),
// commits what the worker left uncommitted (outside .beads/), and returns
// the branch's tip, which is the work from then on: the worker's worktree
// and branch are free for its next issue. It does not wait for an
// integration under way.
func (q *Queue) Hand(ctx context.Context, req Request) (string, error) {
	if req.Dir == "" || req.Branch == "" {
		return "", errors.New("hand over: request without a worktree or branch")
	}
	if err := q.scrub(); err != nil {
		return "", err
	}
	if req.Checked && req.Tip != "" {
		// Looked at just before: again only if there is something to
		// commit, which goes wherever HEAD points.
		left, err := q.leftovers(ctx, req)
		if err != nil {
			return "", err
		}
		if !left {
			return req.Tip, nil
		}
	}
	if err := q.checkRequest(ctx, req); err != nil {
		return "", err
	}
	committed, err := q.commitLeftovers(ctx, req)
	if err != nil {
		return "", err
	}
	if !committed && req.Tip != "" {
		return req.Tip, nil // where the branch was found, or put back
	}
	tip, err := line(ctx, q.Repo, "rev-parse", "--verify", "-q", "refs/heads/"+req.Branch+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("hand over %s: %w", req.Branch, err)
	}
	return tip, nil
}

// Base returns the commit work should start from: the remote's target
// after a fetch, or the local target.
func (q *Queue) Base(ctx context.Context) (string, error) { return q.base(ctx) }

// base returns the commit to rebase onto: the remote's target after a
// fetch, or the local target.
func (q *Queue) base(ctx context.Context) (string, error) {
	if q.Remote == "" {
		return line(ctx, q.Repo, "rev-parse", "--verify", "-q", "refs/heads/"+q.Target+"^{commit}")
	}
	ref := "refs/remotes/" + q.Remote + "/" + q.Target
	// A fetch can fail for a moment while a worker's worktree is being
	// added in the same repository ("bad object worktrees/<w>/HEAD": git
	// checks every worktree's HEAD), or on a network blip: retry, bounded.
	var err error
	for try := 1; try <= fetchTries; try++ {
		if _, err = git.Output(ctx, q.Repo, "fetch", "-q", "--no-tags", q.Remote, "+refs/heads/"+q.Target+":"+ref); err == nil {
			return q.remoteTip(ctx, ref)
		}
		if try == fetchTries {
			break
		}
		if perr := proc.Sleep(ctx, time.Duration(try)*100*time.Millisecond); perr != nil {
			return "", fmt.Errorf("fetch %s: %w", q.Remote, errors.Join(err, perr))
		}
	}
	return "", fmt.Errorf("fetch %s: %w", q.Remote, err)
}

// fetchTries bounds the fetches of one base lookup.
const fetchTries = 5

// commitLeftovers commits what the worker left uncommitted, so that the
// rebase takes it along instead of refusing. It reports whether it made a
// commit.
func (q *Queue) commitLeftovers(ctx context.Context, req Request) (bool, error) {
	if left, err := q.leftovers(ctx, req); err != nil || !left {
		return false, err
	}
	if _, err := git.Output(ctx, req.Dir, "add", "-A", "--", ".", ":(exclude).beads"); err != nil {
		return false, fmt.Errorf("integrate %s: %w", req.Branch, err)
	}
	msg := fmt.Sprintf("ralphd: work %s left uncommitted on %s", req.Worker, req.Issue)
	if _, err := git.Output(ctx, req.Dir, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return false, fmt.Errorf("integrate %s: %w", req.Branch, err)
	}
	return true, nil
}

// leftovers reports whether the worker left changes uncommitted (outside
// .beads/).
func (q *Queue) leftovers(ctx context.Context, req Request) (bool, error) {
	out, err := git.Output(ctx, req.Dir, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude).beads")
	if err != nil {
		return false, fmt.Errorf("integrate %s: %w", req.Branch, err)
	}
	return len(strings.TrimSpace(string(out))) > 0, nil
}

// rebase rebases the work checked out in the queue's worktree dir onto
// base. On a conflict it lists the conflicting files and aborts, which
// puts the work back where it was.
func (q *Queue) rebase(ctx context.Context, run *git.Runner, dir string, req Request, base string) ([]string, error) {
	_, err := run.Output(ctx, "rebase", "-q", "--no-autostash", base)
	if err == nil {
		return nil, nil
	}
	if ctx.Err() != nil {
		_, _ = git.Output(context.WithoutCancel(ctx), dir, "rebase", "--abort")
		return nil, fmt.Errorf("rebase the work on %s: %w", req.Issue, ctx.Err())
	}
	out, derr := run.Output(ctx, "diff", "--name-only", "--diff-filter=U")
	conflicts := strings.Fields(string(out))
	if _, aerr := git.Output(ctx, dir, "rebase", "--abort"); aerr != nil && inRebase(ctx, dir) {
		return nil, fmt.Errorf("rebase the work on %s: %w; and abort: %w", req.Issue, err, aerr)
	}
	if derr != nil || len(conflicts) == 0 {
		return nil, fmt.Errorf("rebase the work on %s onto %s: %w", req.Issue, base, err)
	}
	return conflicts, nil
}

// trackerFiles lists the files under .beads/ that differ between base and
// tip, but for bd's interactions.jsonl, which bd appends to itself.
func trackerFiles(ctx context.Context, run *git.Runner, base, tip string) ([]string, error) {
	out, err := run.Output(ctx, "diff", "--name-only", "--no-renames", "-z", base, tip, "--", ".beads")
	if err != nil {
		return nil, fmt.Errorf("list the tracker files the work changes: %w", err)
	}
	var files []string
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f != "" && f != ".beads/interactions.jsonl" {
			files = append(files, f)
		}
	}
	return files, nil
}

// inRebase reports whether dir's worktree is mid-rebase.
func inRebase(ctx context.Context, dir string) bool {
	gitDir, err := line(ctx, dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return false
	}
	for _, d := range []string{"rebase-merge", "rebase-apply"} {
		if _, err := os.Stat(filepath.Join(gitDir, d)); err == nil {
			return true
		}
	}
	return false
}

// keep puts a kept branch at the work as the queue's worktree dir has
// it: rebased, when the rebase went through (a red verify), else as it
// was handed over.
func (q *Queue) keep(ctx context.Context, dir string, req Request) (string, error) {
	tip := req.Commit
	if dir != "" {
		if head, err := line(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err == nil {
			tip = head
		}
	}
	issue := req.Issue
	if issue == "" {
		issue = req.Worker
	}
	name := KeptPrefix + issue + "/" + q.now().UTC().Format("20060102-150405")
	for i := 2; ; i++ {
		if _, err := line(ctx, q.Repo, "rev-parse", "--verify", "-q", "refs/heads/"+name); err != nil {
			break
		}
		name = fmt.Sprintf("%s%s/%s-%d", KeptPrefix, issue, q.now().UTC().Format("20060102-150405"), i)
	}
	if _, err := git.Output(ctx, q.Repo, "branch", name, tip); err != nil {
		return "", fmt.Errorf("keep the work on %s: %w", req.Issue, err)
	}
	return name, nil
}

func line(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := git.Output(ctx, dir, args...)
	return strings.TrimSpace(string(out)), err
}

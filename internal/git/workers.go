// A Manager gives each ralphd worker its own git worktree, on its
// own branch, under one directory that ralphd owns. Worktrees share the
// main repository's objects, refs and (through git's common directory)
// its bd tracker.
//
// Nothing a worker did is ever deleted: before a worktree is reset,
// removed or recovered after a crash, its uncommitted changes and any
// commits the target does not have are kept on a wip/<worker>/<time>
// branch.

package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// BranchPrefix starts every worker branch: ralphd/workers/<worker>/work.
// Each worker's branch is alone in a directory of its own (BranchDir), so
// that a sandbox can leave an agent only its own branch writable: a ref
// directory bound read-only stays so, while a bound ref file is replaced
// (and the binding lost) at the next update of the ref.
const BranchPrefix = "ralphd/workers/"

// WipPrefix starts every branch that keeps a worker's leftover work.
const WipPrefix = "wip/"

// lostDir is where stray directories under the root are moved.
const lostDir = ".lost"

// Manager creates, resets and removes the worker worktrees of one
// repository.
type Manager struct {
	// Repo is the main repository's work tree.
	Repo string
	// Root is the directory ralphd owns; worker w works in Root/w.
	Root string
	// Now stamps wip branches; nil means time.Now.
	Now func() time.Time

	// mu serialises the Manager's git calls on the shared repository:
	// concurrent `git worktree add` calls race on .git/worktrees.
	mu sync.Mutex
	// handed is, per worker, the commit its branch was last handed over
	// at (Handed); open, the workers whose worktree this Manager opened.
	handed map[string]string
	open   map[string]bool
	// fresh is, per worker, the base Prepare left its worktree at, until
	// the worker's next Open.
	fresh map[string]string

	// common is the repository's common git dir, once looked up
	// (commonDir); guarded by commonMu, not mu, which a reset does not
	// take.
	commonMu sync.Mutex
	common   string
}

// commonDir returns the repository's common git dir. It is looked up
// once: where the main repository keeps its git dir does not change
// while ralphd holds it.
func (m *Manager) commonDir(ctx context.Context) (string, error) {
	m.commonMu.Lock()
	defer m.commonMu.Unlock()
	if m.common != "" {
		return m.common, nil
	}
	c, err := CommonDir(ctx, m.Repo)
	if err != nil {
		return "", fmt.Errorf("find the repository's git dir: %w", err)
	}
	m.common = c
	return c, nil
}

// Handed records that worker's work up to commit, its branch's tip, was
// handed over (to the merge queue, which keeps it): the next Open of the
// worker's worktree does not keep those commits on a wip branch again.
func (m *Manager) Handed(worker, commit string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.handed == nil {
		m.handed = map[string]string{}
	}
	m.handed[worker] = commit
}

// Tree is one worker's worktree.
type Tree struct {
	Worker string
	Dir    string
	Branch string
	// Base is the commit Open checked the branch out at.
	Base string
}

// Saved is work kept on a wip branch.
type Saved struct {
	Worker string
	Branch string // the wip branch
	Commit string
}

var workerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckWorker rejects worker names that are not a plain path element and
// branch component.
func CheckWorker(name string) error {
	if !workerName.MatchString(name) || strings.Contains(name, "..") || strings.HasSuffix(name, ".lock") {
		return fmt.Errorf("worker name %q: use letters, digits, '.', '_' and '-'", name)
	}
	return nil
}

// Branch returns worker's branch.
func Branch(worker string) string { return BranchDir(worker) + "/work" }

// BranchDir returns the ref directory, under refs/heads/, that holds only
// worker's branch.
func BranchDir(worker string) string { return BranchPrefix + worker }

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// root returns the root with symlinks resolved, as git records worktree
// paths.
func (m *Manager) root() string {
	if r, err := filepath.EvalSymlinks(m.Root); err == nil {
		return r
	}
	return filepath.Clean(m.Root)
}

func (m *Manager) tree(worker string) Tree {
	return Tree{Worker: worker, Dir: filepath.Join(m.root(), worker), Branch: Branch(worker)}
}

// Open returns worker's worktree checked out at base on the worker's
// branch, creating it or reusing the one there. Work left in a reused
// worktree or on the branch is saved to a wip branch first.
func (m *Manager) Open(ctx context.Context, worker, base string) (Tree, []Saved, error) {
	if err := CheckWorker(worker); err != nil {
		return Tree{}, nil, err
	}
	baseCommit, err := m.commit(ctx, base)
	if err != nil {
		return Tree{}, nil, fmt.Errorf("open worktree for %s: %w", worker, err)
	}
	t := m.tree(worker)
	t.Base = baseCommit
	m.mu.Lock()
	handed, open, fresh := m.handed[worker], m.open[worker], m.fresh[worker]
	delete(m.handed, worker)
	delete(m.fresh, worker)
	m.mu.Unlock()
	if open && fresh == baseCommit && handed == "" {
		// Prepared at this base, and not worked in since: nothing to keep
		// or reset.
		return t, nil, nil
	}
	if open {
		// This Manager made or reset it: reset it again, beside the
		// other workers (a reset touches only the worker's own worktree
		// and branch). Should that fail, it is looked at afresh.
		if saved, err := m.reset(ctx, t, baseCommit, handed); err == nil {
			return t, saved, nil
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, worker)
	if err := os.MkdirAll(m.Root, 0o755); err != nil {
		return Tree{}, nil, fmt.Errorf("open worktree for %s: %w", worker, err)
	}
	registered, err := m.registered(ctx)
	if err != nil {
		return t, nil, err
	}
	if _, ok := registered[t.Dir]; ok {
		saved, err := m.reset(ctx, t, baseCommit, handed)
		if err == nil {
			m.markOpen(worker)
		}
		return t, saved, err
	}
	var saved []Saved
	if err := m.moveAside(t.Dir); err != nil {
		return t, nil, err
	}
	// The branch may hold commits from before a crash: keep them.
	if tip, err := (Repo{Dir: m.Repo}).resolve(ctx, "refs/heads/"+t.Branch); err == nil && tip != "" && tip != handed {
		s, err := m.keep(ctx, m.Repo, worker, tip, baseCommit)
		if err != nil {
			return t, nil, err
		}
		saved = append(saved, s...)
	}
	if _, err := Output(ctx, m.Repo, "worktree", "add", "-q", "--force", "-B", t.Branch, t.Dir, baseCommit); err != nil {
		return t, saved, fmt.Errorf("open worktree for %s: %w", worker, err)
	}
	m.markOpen(worker)
	return t, saved, nil
}

// Prepare opens worker's worktree at base, as Open does, ahead of the
// worker's first issue: the worker's next Open, at the same base commit
// and with nothing handed over in between, finds it ready and does no
// more.
func (m *Manager) Prepare(ctx context.Context, worker, base string) ([]Saved, error) {
	t, saved, err := m.Open(ctx, worker, base)
	if err != nil {
		return saved, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fresh == nil {
		m.fresh = map[string]string{}
	}
	m.fresh[worker] = t.Base
	return saved, nil
}

// Reserve makes the branch of each worker that has none, at base, so that
// every worker's branch exists before any agent runs: a sandbox can make
// read-only only a ref file that exists.
func (m *Manager) Reserve(ctx context.Context, workers []string, base string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, err := m.commit(ctx, base)
	if err != nil {
		return fmt.Errorf("reserve the workers' branches: %w", err)
	}
	for _, w := range workers {
		if err := CheckWorker(w); err != nil {
			return err
		}
		cur, err := RefAt(ctx, m.Repo, "refs/heads/"+Branch(w))
		if err != nil {
			return err
		}
		if cur != "" {
			continue
		}
		if err := createBranch(ctx, m.Repo, Branch(w), at, "ralphd: reserve"); err != nil {
			return fmt.Errorf("reserve the branch of %s: %w", w, err)
		}
	}
	return nil
}

// markOpen records that worker's worktree is registered and was opened by
// this Manager. The caller holds m.mu.
func (m *Manager) markOpen(worker string) {
	if m.open == nil {
		m.open = map[string]bool{}
	}
	m.open[worker] = true
}

// reset puts a registered worktree back at base on its branch, after
// finishing any interrupted rebase and saving its work (but for the
// commits handed over up to handed, when it is set).
//
// Its git calls in the worktree share one lookup of the drivers: nothing
// of the worker's runs between its hand-over and its next agent. Another
// worker's agent, when unsandboxed (sandboxed, the shared git config is
// read-only to it), could add a driver in between, as it could between
// the lookup and the start of any single git call.
func (m *Manager) reset(ctx context.Context, t Tree, base, handed string) ([]Saved, error) {
	run := NewRunner(t.Dir)
	saved, err := m.settle(ctx, t, run, base, handed)
	if err != nil {
		return nil, err
	}
	if _, err := run.Output(ctx, "checkout", "-q", "--force", "-B", t.Branch, base); err != nil {
		return saved, fmt.Errorf("reset worktree %s: %w", t.Dir, err)
	}
	if _, err := run.Output(ctx, "clean", "-fdq"); err != nil {
		return saved, fmt.Errorf("reset worktree %s: %w", t.Dir, err)
	}
	return saved, nil
}

// settle readies t to be reset or removed: a stale lock on its branch
// goes, an interrupted rebase is aborted, and its work is saved. Its git
// calls in t.Dir run through run.
func (m *Manager) settle(ctx context.Context, t Tree, run *Runner, base, handed string) ([]Saved, error) {
	common, err := m.commonDir(ctx)
	if err != nil {
		return nil, err
	}
	if err := removeLockIn(common, "refs/heads/"+t.Branch); err != nil {
		return nil, err
	}
	if err := abortRebase(ctx, t.Dir); err != nil {
		return nil, err
	}
	return m.save(ctx, t, run, base, handed)
}

// save keeps the work in t that base lacks (commits and uncommitted
// changes) on a wip branch. It returns nothing when there is none, or
// when HEAD is handed (non-empty: work handed over, which another keeps)
// and nothing is uncommitted.
func (m *Manager) save(ctx context.Context, t Tree, run *Runner, base, handed string) ([]Saved, error) {
	r := Repo{Dir: t.Dir}.InStep(run)
	head, err := r.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("save work of %s: %w", t.Worker, err)
	}
	dirty, err := r.Dirty(ctx)
	if err != nil {
		return nil, fmt.Errorf("save work of %s: %w", t.Worker, err)
	}
	if !dirty {
		// Ignored files the reset would overwrite or clean away are work
		// too (FailureBranch).
		ignored, err := r.ignoredAtRisk(ctx, []string{head, base})
		if err != nil {
			return nil, fmt.Errorf("save work of %s: %w", t.Worker, err)
		}
		dirty = len(ignored) > 0
	}
	if !dirty {
		if head == "" || head == handed {
			return nil, nil
		}
		saved, err := m.keep(ctx, t.Dir, t.Worker, head, base)
		if err != nil {
			return nil, fmt.Errorf("save work of %s: %w", t.Worker, err)
		}
		return saved, nil
	}
	name, _, err := freeBranch(ctx, t.Dir, m.wipPrefix(t.Worker), "")
	if err != nil {
		return nil, fmt.Errorf("save work of %s: %w", t.Worker, err)
	}
	// The uncommitted work, committed on top of HEAD: the branch holds
	// HEAD's commits as well.
	commit, err := r.FailureBranch(ctx, name, fmt.Sprintf("ralphd: work %s left in its worktree", t.Worker), head, base)
	if err != nil {
		return nil, fmt.Errorf("save work of %s: %w", t.Worker, err)
	}
	return []Saved{{Worker: t.Worker, Branch: name, Commit: commit}}, nil
}

// keep puts a new wip branch of worker's at commit, through repo, when
// commit has anything base lacks (see KeepIfNew), and returns it. Commits
// whose changes base holds under other ids (ChangesOnBase: work the merge
// queue rebased onto the target, left on the worker's branch when a run
// ended) are not kept: the next run would warn of work left that is not.
func (m *Manager) keep(ctx context.Context, repo, worker, commit, base string) ([]Saved, error) {
	if on, err := ChangesOnBase(ctx, repo, commit, base); err != nil || on {
		return nil, err
	}
	name, err := KeepIfNew(ctx, repo, commit, base, WipPrefix+worker, m.now())
	if err != nil || name == "" {
		return nil, err
	}
	return []Saved{{Worker: worker, Branch: name, Commit: commit}}, nil
}

// wipPrefix returns the name a new wip branch of worker's starts from
// (see freeBranch): as KeepIfNew names it.
func (m *Manager) wipPrefix(worker string) string {
	return WipPrefix + worker + "/" + m.now().UTC().Format("20060102-150405")
}

// commit returns the commit rev names, or an error that says it names
// none.
func (m *Manager) commit(ctx context.Context, rev string) (string, error) {
	c, err := Repo{Dir: m.Repo}.resolve(ctx, rev+"^{commit}")
	if err == nil && c == "" {
		err = errors.New("not a commit")
	}
	if err != nil {
		return "", fmt.Errorf("base %q: %w", rev, err)
	}
	return c, nil
}

func (m *Manager) removeTree(ctx context.Context, t Tree, base string) ([]Saved, error) {
	saved, err := m.settle(ctx, t, NewRunner(t.Dir), base, "")
	if err != nil {
		return nil, err
	}
	// A killed run's git (or agent) may still be writing there: removed
	// as the merge queue's tree is, tolerantly.
	if err := RemoveWorktree(ctx, m.Repo, t.Dir); err != nil {
		return saved, err
	}
	// Its work is on the wip branch now: start the worker's branch afresh
	// at base, so that the next Open does not keep the same work twice.
	if _, err := Output(ctx, m.Repo, "branch", "-f", t.Branch, base); err != nil {
		return saved, fmt.Errorf("reset branch %s: %w", t.Branch, err)
	}
	return saved, nil
}

// Recover cleans up after a crash, at start: it forgets worktrees whose
// directory is gone, finishes interrupted rebases, saves the work of every
// worktree under the root to wip branches and removes those worktrees, and
// moves stray directories under the root to Root/.lost.
func (m *Manager) Recover(ctx context.Context, base string) ([]Saved, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	baseCommit, err := m.commit(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("recover worktrees: %w", err)
	}
	if _, err := m.forgetKilledAdds(ctx); err != nil {
		return nil, fmt.Errorf("recover worktrees: %w", err)
	}
	if _, err := Output(ctx, m.Repo, "worktree", "prune"); err != nil {
		return nil, fmt.Errorf("recover worktrees: %w", err)
	}
	registered, err := m.registered(ctx)
	if err != nil {
		return nil, err
	}
	var saved []Saved
	var errs []error
	for dir := range registered {
		worker := filepath.Base(dir)
		if filepath.Dir(dir) != m.root() || CheckWorker(worker) != nil {
			continue // not one of ralphd's
		}
		delete(m.open, worker)
		s, err := m.removeTree(ctx, Tree{Worker: worker, Dir: dir, Branch: Branch(worker)}, baseCommit)
		saved = append(saved, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	entries, err := os.ReadDir(m.root())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("recover worktrees: %w", err))
	}
	for _, e := range entries {
		if e.Name() == lostDir {
			continue
		}
		if err := m.moveAside(filepath.Join(m.root(), e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return saved, errors.Join(errs...)
}

// ForgetKilledAdds removes the worker worktrees a kill left half added
// (ForgetKilledAdds in remove.go), which would make every `git worktree`
// call fail, the merge queue's recovery among them: the pool calls it
// before anything else lists worktrees. Recover calls it too.
func (m *Manager) ForgetKilledAdds(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.forgetKilledAdds(ctx)
}

// forgetKilledAdds is ForgetKilledAdds with m.mu held.
func (m *Manager) forgetKilledAdds(ctx context.Context) ([]string, error) {
	return ForgetKilledAdds(ctx, m.Repo, func(dir string) bool {
		return SameDir(filepath.Dir(dir), m.root()) && CheckWorker(filepath.Base(dir)) == nil
	})
}

// moveAside moves a stray path under the root to Root/.lost, so nothing
// in it is deleted. A missing path is fine.
func (m *Manager) moveAside(p string) error {
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	dst := filepath.Join(m.root(), lostDir, filepath.Base(p)+"-"+m.now().UTC().Format("20060102-150405.000000000"))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("move aside %s: %w", p, err)
	}
	if err := os.Rename(p, dst); err != nil {
		return fmt.Errorf("move aside %s: %w", p, err)
	}
	return nil
}

// registered lists the repository's linked worktrees: directory → branch.
func (m *Manager) registered(ctx context.Context) (map[string]string, error) {
	all, err := List(ctx, m.Repo)
	if err != nil {
		return nil, err
	}
	trees := map[string]string{}
	for _, w := range all[1:] { // the first is the main worktree
		trees[w.Dir] = w.Branch
	}
	return trees, nil
}

// Worktree is one entry of `git worktree list`.
type Worktree struct {
	Dir    string
	Branch string // "" when detached
	// Detached is true when HEAD names no branch (or is mid-rebase).
	Detached bool
}

// List returns every worktree of the repository at repo, the main one
// first.
func List(ctx context.Context, repo string) ([]Worktree, error) {
	var out []byte
	var err error
	for try := 1; ; try++ {
		out, err = Output(ctx, repo, "worktree", "list", "--porcelain", "-z")
		if err == nil || try == listTries || !halfAdded(err) {
			break
		}
		// git worktree add writes a new worktree's admin files one after
		// the other, with no lock: a list that runs at that moment reads
		// an empty commondir or gitdir and fails. Another worker (or the
		// merge queue) adding its worktree is not an error of this one.
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list worktrees: %w", ctx.Err())
		case <-time.After(time.Duration(try) * 20 * time.Millisecond):
		}
	}
	if err != nil && halfAdded(err) {
		return nil, fmt.Errorf("list worktrees: %w; a `git worktree add` was interrupted there: if none is running, remove that worktrees/ entry and the worktree it names", err)
	}
	if err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	all := parseWorktreeList(out)
	if len(all) == 0 {
		return nil, fmt.Errorf("list worktrees of %s: git listed none", repo)
	}
	return all, nil
}

// listTries bounds how often List asks again while a worktree is being
// added: 5 tries wait 200 ms in all, far longer than git takes to write
// the admin files, so what fails after them is not a worktree being added.
const listTries = 5

// halfAdded reports whether err is git failing to read a linked
// worktree's admin file that is still being written.
func halfAdded(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed to read") && strings.Contains(msg, "worktrees/")
}

// parseWorktreeList reads `git worktree list --porcelain -z`: records of
// NUL-terminated "key value" lines, separated by an empty line.
func parseWorktreeList(out []byte) []Worktree {
	var trees []Worktree
	var cur Worktree
	flush := func() {
		if cur.Dir != "" {
			trees = append(trees, cur)
		}
		cur = Worktree{}
	}
	for _, f := range strings.Split(string(out), "\x00") {
		switch {
		case f == "":
			flush()
		case strings.HasPrefix(f, "worktree "):
			cur.Dir = filepath.Clean(strings.TrimPrefix(f, "worktree "))
		case strings.HasPrefix(f, "branch "):
			cur.Branch = strings.TrimPrefix(strings.TrimPrefix(f, "branch "), "refs/heads/")
		case f == "detached":
			cur.Detached = true
		}
	}
	flush()
	return trees
}

// abortRebase ends a rebase a crash interrupted in dir, which puts the
// branch back where it was before the rebase. It runs only at times when
// no git of ralphd's can be running in dir (recovery, or before the
// worktree is reused), so the lock files a killed git left are stale and
// go first.
func abortRebase(ctx context.Context, dir string) error {
	l, err := Repo{Dir: dir}.layout(ctx, false, "")
	if err != nil {
		return fmt.Errorf("check for a rebase in %s: %w", dir, err)
	}
	gitDir := l.GitDir
	for _, l := range []string{"index.lock", "HEAD.lock"} {
		if err := os.Remove(filepath.Join(gitDir, l)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove a stale lock in %s: %w", gitDir, err)
		}
	}
	for _, d := range []string{"rebase-merge", "rebase-apply"} {
		state := filepath.Join(gitDir, d)
		if _, err := os.Stat(state); err != nil {
			continue
		}
		if _, err := Output(ctx, dir, "rebase", "--abort"); err == nil {
			return nil
		}
		// A rebase killed while it was starting has a state git cannot
		// abort. The branch itself moves only when a rebase ends, so it
		// still has the work: drop the state and check the branch out.
		headName, _ := atomicfile.Read(filepath.Join(state, "head-name"), 4096) // the agent's to write
		if _, err := Output(ctx, dir, "rebase", "--quit"); err != nil {
			if err := os.RemoveAll(state); err != nil {
				return fmt.Errorf("drop the interrupted rebase in %s: %w", dir, err)
			}
		}
		if branch, ok := strings.CutPrefix(strings.TrimSpace(string(headName)), "refs/heads/"); ok {
			if _, err := Output(ctx, dir, "checkout", "-q", "--force", branch); err != nil {
				return fmt.Errorf("return to %s after the interrupted rebase in %s: %w", branch, dir, err)
			}
		}
		return nil
	}
	return nil
}

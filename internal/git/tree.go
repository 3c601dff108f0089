// A Repo reads and changes the project's git working tree for the
// loop: the signals that show progress (HEAD, a hash of the diff, the files
// changed), whether the tree is dirty, and the failure branches that keep
// the work of an issue ralphd gave up on; and where its git data is
// (Layout, CommonDir).
//
// Paths under .beads/ are left out everywhere: bd writes there on its own,
// and that is the tracker's business, not the work's.

package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Repo is a git working tree.
type Repo struct {
	Dir string
	// run, when set, runs every git call with one drivers lookup
	// (a Runner); see inStep.
	run *Runner
}

// inStep returns r for one step of git calls that run back to back with
// no code but ralphd's running (the agent's and the checks' process trees
// ended): they share one lookup of the repository's drivers. A Repo that
// is already in a step (InStep) stays in it.
func (r Repo) inStep() Repo {
	if r.run == nil {
		r.run = NewRunner(r.Dir)
	}
	return r
}

// InStep returns r with its git calls run by run, a Runner for
// r.Dir shared with the caller's own git calls of the same step.
func (r Repo) InStep(run *Runner) Repo {
	r.run = run
	return r
}

// excludeBeads is the pathspec that leaves bd's own files out.
var excludeBeads = []string{"--", ".", ":(exclude).beads"}

// git runs git in the tree (see Runner), so that none of the
// repository's own code (hooks, filters, fsmonitor, diff drivers) runs.
func (r Repo) git(ctx context.Context, args ...string) ([]byte, error) {
	return r.gitEnv(ctx, nil, args...)
}

// Head returns the commit id of HEAD, or "" in a repository without
// commits.
func (r Repo) Head(ctx context.Context) (string, error) {
	return r.resolve(ctx, "HEAD")
}

// resolve returns the object rev names, or "" when it names none.
func (r Repo) resolve(ctx context.Context, rev string) (string, error) {
	out, err := r.git(ctx, "rev-parse", "--verify", "-q", rev)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Changed lists the paths with uncommitted changes, untracked files
// included (ignored files and .beads/ excluded).
func (r Repo) Changed(ctx context.Context) ([]string, error) {
	out, err := r.git(ctx, append([]string{"status", "--porcelain=v1", "-z", "--untracked-files=all"}, excludeBeads...)...)
	if err != nil {
		return nil, err
	}
	return parsePorcelain(out), nil
}

// parsePorcelain returns the paths of `git status --porcelain=v1 -z`
// output: records "XY path", NUL-terminated, where a rename or copy is
// followed by a record holding its source path.
func parsePorcelain(out []byte) []string {
	var paths []string
	recs := bytes.Split(out, []byte{0})
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) < 4 {
			continue
		}
		paths = append(paths, string(rec[3:]))
		if rec[0] == 'R' || rec[0] == 'C' {
			i++ // a rename's second record is its source path
		}
	}
	return paths
}

// Dirty reports whether the tree has uncommitted changes outside .beads/.
func (r Repo) Dirty(ctx context.Context) (bool, error) {
	paths, err := r.Changed(ctx)
	return len(paths) > 0, err
}

// WorkTreeID returns the id of the tree `git add -A` would stage of the
// work tree (outside .beads/, ignored files left out), built in a scratch
// index: two calls give the same id exactly when no tracked or untracked
// file changed between them. It names the work an interrupted iteration
// left (modes: treework.go).
func (r Repo) WorkTreeID(ctx context.Context) (string, error) { return r.stageTree(ctx, nil) }

// FailureBranch keeps the work done since base on a new branch called
// name, then puts the current branch and the working tree back at base.
// Work means commits made since base and uncommitted changes (outside
// .beads/); the latter are committed on top with message. The user's
// staging area is not touched until the final restore: the commit is built
// in a scratch index.
//
// Uncommitted work includes the ignored files going back would overwrite
// or remove (ignoredAtRisk): those at a path base or HEAD tracks (a file
// the agent untracked and ignored), and those ignored by a .gitignore
// that differs from base's (a rule the agent added, which the restore
// takes away, and the clean after it would then remove them). They are
// committed with the rest (add --force), whatever their size. Files
// ignored by rules base has too stay ignored and are left in place, as
// is a nested repository (committed as a gitlink when at risk; the clean
// does not remove it). later are more commits the caller will check out
// after (a worker's next base): their tracked paths are at risk too.
//
// It returns the branch's commit, or "" with no branch made when there was
// no work to keep.
func (r Repo) FailureBranch(ctx context.Context, name, message, base string, later ...string) (string, error) {
	r = r.inStep()
	head, err := r.Head(ctx)
	if err != nil {
		return "", err
	}
	if head == "" {
		return "", errors.New("the repository has no commits yet; nothing to branch from")
	}
	if base == "" {
		base = head
	}
	dirty, err := r.Dirty(ctx)
	if err != nil {
		return "", err
	}
	ignored, err := r.ignoredAtRisk(ctx, append([]string{base, head}, later...))
	if err != nil {
		return "", err
	}
	if !dirty && len(ignored) == 0 && head == base {
		return "", nil
	}
	tip := head
	if dirty || len(ignored) > 0 {
		if tip, err = r.commitWork(ctx, head, message, ignored); err != nil {
			return "", err
		}
	}
	if err := createBranch(ctx, r.Dir, name, tip, "ralphd: keep"); err != nil {
		return "", fmt.Errorf("keep the work on %s: %w", name, err)
	}
	if err := r.restore(ctx, base); err != nil {
		return tip, err
	}
	return tip, nil
}

// FreeBranchName returns name when it is free for a new branch, else the
// first of name-2, name-3, ... that is, so that two failure branches of
// one issue within the same second do not collide (see freeBranch).
func (r Repo) FreeBranchName(ctx context.Context, name string) (string, error) {
	free, _, err := freeBranch(ctx, r.Dir, name, "")
	return free, err
}

// commitWork commits the uncommitted work on top of parent, with the
// ignored paths given, without moving any branch, and returns the commit.
func (r Repo) commitWork(ctx context.Context, parent, message string, ignored []string) (string, error) {
	tree, err := r.stageTree(ctx, ignored)
	if err != nil {
		return "", err
	}
	commit, err := r.gitEnv(ctx, nil, "commit-tree", tree, "-p", parent, "-m", message)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(commit)), nil
}

// stageTree writes the tree `git add -A` stages of the work tree (outside
// .beads/), with the ignored paths given added too, in a scratch index
// (the user's is not touched), and returns its id.
func (r Repo) stageTree(ctx context.Context, ignored []string) (string, error) {
	idx, cleanup, err := r.tempIndex(ctx)
	if err != nil {
		return "", err
	}
	defer cleanup()
	env := []string{"GIT_INDEX_FILE=" + idx}
	if _, err := r.gitEnv(ctx, env, append([]string{"add", "-A"}, excludeBeads...)...); err != nil {
		return "", err
	}
	if len(ignored) > 0 {
		args := []string{"add", "-A", "--force", "--"}
		for _, p := range ignored {
			args = append(args, ":(literal)"+p)
		}
		if _, err := r.gitEnv(ctx, env, args...); err != nil {
			return "", fmt.Errorf("keep the ignored work: %w", err)
		}
	}
	tree, err := r.gitEnv(ctx, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(tree)), nil
}

// restore moves the current branch to base and makes the index and the
// working tree match it, outside .beads/: `reset --hard` would also rewind
// bd's git-tracked files, which are the tracker's, not the work's.
func (r Repo) restore(ctx context.Context, base string) error {
	if _, err := r.git(ctx, "reset", "-q", "--soft", base); err != nil {
		return fmt.Errorf("move the branch back to %s: %w", base, err)
	}
	if _, err := r.git(ctx, append([]string{"restore", "--source=" + base, "--staged", "--worktree"}, excludeBeads...)...); err != nil {
		return fmt.Errorf("restore the working tree to %s: %w", base, err)
	}
	if _, err := r.git(ctx, append([]string{"clean", "-fdq"}, excludeBeads...)...); err != nil {
		return fmt.Errorf("remove untracked work: %w", err)
	}
	return nil
}

// gitEnv is git with env added to the environment.
func (r Repo) gitEnv(ctx context.Context, env []string, args ...string) ([]byte, error) {
	run := r.run
	if run == nil {
		run = NewRunner(r.Dir)
	}
	return run.OutputEnv(ctx, env, args...)
}

// tempIndex makes a copy of the index as of HEAD in the git dir.
func (r Repo) tempIndex(ctx context.Context) (string, func(), error) {
	l, err := r.layout(ctx, false, "")
	if err != nil {
		return "", nil, err
	}
	idx := filepath.Join(l.GitDir, fmt.Sprintf("ralphd-index-%d", time.Now().UnixNano()))
	cleanup := func() { _ = os.Remove(idx) }
	if _, err := r.gitEnv(ctx, []string{"GIT_INDEX_FILE=" + idx}, "read-tree", "HEAD"); err != nil {
		cleanup()
		return "", nil, err
	}
	return idx, cleanup, nil
}

// Layout is where a work tree's git data is and what HEAD holds, from one
// git call.
type Layout struct {
	GitDir    string // the work tree's git dir, absolute
	CommonDir string // git's common dir (differs in a linked worktree), absolute
	Head      string // HEAD's commit; "" in a repository without commits
	Tree      string // the object at HEAD:<sub> (see Repo.Layout); "" when there is none
}

// CommonDir returns the absolute path of the common git directory of the
// repository whose work tree (or one of its worktrees) is dir. Unlike
// Layout, it reads no ref: it is safe before a scrub.
func CommonDir(ctx context.Context, dir string) (string, error) {
	l, err := Repo{Dir: dir}.layout(ctx, false, "")
	return l.CommonDir, err
}

// Layout returns the work tree's git dirs, HEAD, and, when sub is not
// "", the object HEAD has at sub (a path from the top of the work tree,
// such as ".ralph"), all from one git call.
func (r Repo) Layout(ctx context.Context, sub string) (Layout, error) {
	return r.layout(ctx, true, sub)
}

// layout is Layout, with HEAD and HEAD:<sub> read only when head is true.
func (r Repo) layout(ctx context.Context, head bool, sub string) (Layout, error) {
	args := []string{"rev-parse", "--absolute-git-dir", "--path-format=absolute", "--git-common-dir"}
	if head {
		// --revs-only leaves out what does not resolve, where --verify
		// takes one name only: HEAD:<sub> cannot resolve without HEAD,
		// so the number of lines says which did.
		args = append(args, "--revs-only", "HEAD")
		if sub != "" {
			args = append(args, "HEAD:"+sub)
		}
	}
	out, err := r.git(ctx, args...)
	if err != nil {
		return Layout{}, err
	}
	l, err := parseLayout(string(out), head && sub != "")
	if err != nil {
		return Layout{}, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return l, nil
}

// parseLayout reads Layout's rev-parse output: the two dirs, then HEAD
// and HEAD:<sub> when they resolve (withSub: HEAD:<sub> was asked for).
func parseLayout(out string, withSub bool) (Layout, error) {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	most := 3
	if withSub {
		most = 4
	}
	if len(lines) < 2 || len(lines) > most {
		return Layout{}, fmt.Errorf("want 2 to %d lines, got %q", most, out)
	}
	for _, d := range lines[:2] {
		if !filepath.IsAbs(d) {
			return Layout{}, fmt.Errorf("git dir %q is not absolute", d)
		}
	}
	for _, id := range lines[2:] {
		if !IsHash(id) {
			return Layout{}, fmt.Errorf("%q is not an object id", id)
		}
	}
	l := Layout{GitDir: filepath.Clean(lines[0]), CommonDir: filepath.Clean(lines[1])}
	if len(lines) > 2 {
		l.Head = lines[2]
	}
	if len(lines) > 3 {
		l.Tree = lines[3]
	}
	return l, nil
}

// ignoredAtRisk returns the ignored paths in the work tree (outside
// .beads/; a directory ignored whole as one path ending in "/") that
// going back to any of trees would lose: a path a tree tracks (its
// content would be overwritten), or one ignored by a .gitignore rule a
// tree's version of that file lacks (the restore puts that file back,
// and the path, no longer ignored, would be cleaned away). Negations and
// the order of rules are not weighed: a path that stays ignored by
// another rule is committed all the same.
func (r Repo) ignoredAtRisk(ctx context.Context, trees []string) ([]string, error) {
	out, err := r.git(ctx, append([]string{"ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"}, excludeBeads...)...)
	if err != nil {
		return nil, fmt.Errorf("list the ignored files: %w", err)
	}
	paths := splitNul(out)
	if len(paths) == 0 {
		return nil, nil
	}
	out, err = r.run.OutputIn(ctx, nil, strings.NewReader(strings.Join(paths, "\x00")+"\x00"), "check-ignore", "-v", "-z", "--stdin")
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: none is ignored after all
		return nil, fmt.Errorf("find what ignores the ignored files: %w", err)
	}
	type rule struct{ source, pattern string }
	rules := map[string]rule{} // path → the rule that ignores it
	f := splitNul(out)
	for i := 0; i+3 < len(f); i += 4 {
		rules[f[i+3]] = rule{f[i], f[i+2]}
	}
	tracked := map[string]map[string]string{} // tree → path → blob
	for _, t := range trees {
		if t == "" || tracked[t] != nil {
			continue
		}
		out, err := r.git(ctx, "ls-tree", "-r", "-z", "--full-tree", t)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", t, err)
		}
		m := map[string]string{}
		for _, e := range splitNul(out) {
			meta, path, ok := strings.Cut(e, "\t")
			if f := strings.Fields(meta); ok && len(f) == 3 {
				m[path] = f[2]
			}
		}
		tracked[t] = m
	}
	// kept reports whether every tree's version of the rule's .gitignore
	// has the rule too: then the restore leaves the path ignored. Rules
	// from elsewhere (info/exclude, which ralphd holds; the user's global
	// excludes) stay.
	lines := map[string][]string{} // blob → its lines
	kept := func(ru rule) bool {
		if filepath.Base(ru.source) != ".gitignore" || !filepath.IsLocal(ru.source) {
			return true
		}
		for _, m := range tracked {
			blob, ok := m[ru.source]
			if !ok {
				return false
			}
			if _, ok := lines[blob]; !ok {
				b, err := r.git(ctx, "cat-file", "blob", blob)
				if err != nil {
					return false
				}
				lines[blob] = strings.Split(string(b), "\n")
			}
			if !slices.ContainsFunc(lines[blob], func(l string) bool { return strings.TrimSpace(l) == ru.pattern }) {
				return false
			}
		}
		return true
	}
	var risky []string
	for _, p := range paths {
		inTree := false
		for _, m := range tracked {
			if _, ok := m[p]; ok {
				inTree = true
			} else if strings.HasSuffix(p, "/") {
				for q := range m {
					if strings.HasPrefix(q, p) {
						inTree = true
						break
					}
				}
			}
		}
		if inTree || !kept(rules[p]) {
			risky = append(risky, p)
		}
	}
	return risky, nil
}

// splitNul splits NUL-terminated records.
func splitNul(b []byte) []string {
	var out []string
	for _, f := range strings.Split(string(b), "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

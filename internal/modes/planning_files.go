package modes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/git"
)

// planningFiles is what BUILD may not change outside the tracker, held
// from before the agent starts until its checks have run: what of the
// work tree belongs to PLANNING, in the work tree and in HEAD (.ralph/,
// the configuration and prompts, and the agent CLIs' configuration:
// projectConfig), ralphd's global configuration (Loop.ConfigDirs), the
// agent CLIs' configuration in your home (guardedHold), and the git
// directory's configuration and hooks, which would run code in the
// person's next git command.
type planningFiles struct {
	config []*git.DirSnapshot // Loop.ConfigDirs
	// trackers are the tracker's directories (.beads/ of the work tree
	// and of a linked worktree's main work tree) as found (os.Lstat).
	trackers map[string]os.FileInfo
	git      *git.Snapshot
	// The work tree's git dirs as found, for the sandbox to protect; ""
	// when git could not say.
	gitDir, gitCommonDir string
	// headRef is what the work tree's HEAD file held ("ref: refs/heads/x"
	// or a commit), to write it back when it is found planted.
	headRef string
	// history is the repository's refs and objects (the single loop's;
	// a pool holds its own), nil when they could not be held.
	history *git.History
	guarded guardedHold
	project projectConfig
}

// holdPlanningFiles takes what holdPlanningFiles' restore puts back. A part
// that cannot be read is not held (and said so).
func (l *Loop) holdPlanningFiles(ctx context.Context) planningFiles {
	var p planningFiles
	var err error
	for _, d := range l.ConfigDirs {
		s, err := git.TakeDir(d)
		if err != nil {
			l.human().Warn("could not hold ralphd's configuration for the iteration", "dir", d, "err", err)
			continue
		}
		p.config = append(p.config, s)
	}
	p.guarded = holdGuarded(agent.GuardedAll(l.agentHome()).Paths)
	l.guardedAbsent = p.guarded.absent()
	p.project = holdProjectConfig(ctx, l.Dir, func(msg string, err error) { l.human().Warn(msg, "err", err) })
	p.trackers = map[string]os.FileInfo{}
	holdTracker := func(dir string) {
		if fi, err := os.Lstat(filepath.Join(dir, ".beads")); err == nil {
			p.trackers[filepath.Join(dir, ".beads")] = fi
		}
	}
	holdTracker(l.Dir)
	where, err := l.repo().Layout(ctx, "")
	if err != nil {
		l.human().Warn("could not hold the git configuration for the iteration", "err", err)
		return p
	}
	if filepath.Base(where.CommonDir) == ".git" {
		holdTracker(filepath.Dir(where.CommonDir))
	}
	p.gitDir, p.gitCommonDir = where.GitDir, where.CommonDir
	if b, err := atomicfile.Read(filepath.Join(where.GitDir, "HEAD"), git.MaxRef); err == nil {
		p.headRef = strings.TrimSpace(string(b))
	}
	if p.git, err = git.SnapshotAt(where.CommonDir); err != nil {
		l.human().Warn("could not hold the git configuration for the iteration", "err", err)
	}
	if l.seat == nil {
		p.history = l.holdHistory(ctx, strings.TrimPrefix(p.headRef, "ref: "))
	}
	return p
}

// restore puts back what the iteration changed and returns, for each
// change, a line for the violation.
func (p planningFiles) restore(ctx context.Context, dir string) (changes []string, err error) {
	var errs []error
	for _, c := range p.config {
		files, cerr := c.Restore()
		for _, f := range files {
			changes = append(changes, fmt.Sprintf("ralphd's configuration %s was changed; restored (the next run would read it)", filepath.Join(c.Dir(), f)))
		}
		if cerr != nil {
			errs = append(errs, cerr)
		}
	}
	pc, perr := p.project.restore(ctx, dir)
	changes = append(changes, pc...)
	if perr != nil {
		errs = append(errs, perr)
	}
	if p.git != nil {
		files, gerr := p.git.Restore()
		for _, f := range files {
			changes = append(changes, "the git directory's "+f+" was changed; restored ("+git.Why(f)+")")
		}
		if gerr != nil {
			errs = append(errs, gerr)
		}
	}
	if len(errs) > 0 {
		return changes, fmt.Errorf("restore PLANNING's files: %v", errs)
	}
	return changes, nil
}

// headEntry is what HEAD holds at a path: its mode, type (tree, blob) and
// object; oid is "" when HEAD has nothing there. dir says the path is
// meant as a dir (for messages).
type headEntry struct {
	path, mode, typ, oid string
	dir                  bool
}

// revertCommit commits, on top of HEAD, HEAD's tree with each of entries
// as it was (or gone), without touching the index or the work tree beyond
// their index entries. It returns the new commit. Its message says why
// each belongs to PLANNING (planningWhy).
func revertCommit(ctx context.Context, dir string, entries []headEntry) (string, error) {
	idx := filepath.Join(dir, ".git", "ralphd-revert-index")
	if gd := revParseGitDir(ctx, dir); gd != "" {
		idx = filepath.Join(gd, "ralphd-revert-index")
	}
	env := []string{"GIT_INDEX_FILE=" + idx,
		"GIT_AUTHOR_NAME=ralphd", "GIT_AUTHOR_EMAIL=ralphd@localhost",
		"GIT_COMMITTER_NAME=ralphd", "GIT_COMMITTER_EMAIL=ralphd@localhost"}
	var paths, names, whys []string
	for _, e := range entries {
		paths = append(paths, e.path)
		name := e.path
		if e.dir {
			name += "/"
		}
		names = append(names, name)
		whys = append(whys, name+": "+planningWhy(e.path)+".")
	}
	what := strings.Join(names, ", ")
	steps := [][]string{{"read-tree", "HEAD"}, append([]string{"rm", "-r", "--cached", "-q", "--ignore-unmatch", "--"}, paths...)}
	for _, e := range entries {
		switch {
		case e.oid == "":
		case e.typ == "tree":
			steps = append(steps, []string{"read-tree", "--prefix=" + e.path + "/", e.oid})
		case e.typ == "blob":
			steps = append(steps, []string{"update-index", "--add", "--cacheinfo", e.mode + "," + e.oid + "," + e.path})
		}
	}
	for _, s := range steps {
		if _, err := git.OutputEnv(ctx, dir, env, s...); err != nil {
			return "", fmt.Errorf("revert %s in a commit: %w", what, err)
		}
	}
	t, err := git.OutputEnv(ctx, dir, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("revert %s in a commit: %w", what, err)
	}
	msg := "ralphd: revert BUILD's change to " + what
	c, err := git.OutputEnv(ctx, dir, env, "commit-tree", strings.TrimSpace(string(t)), "-p", "HEAD", "-m",
		msg+"\n\n"+strings.Join(whys, "\n")+"\nA BUILD iteration may not change what belongs to PLANNING.")
	if err != nil {
		return "", fmt.Errorf("revert %s in a commit: %w", what, err)
	}
	commit := strings.TrimSpace(string(c))
	if _, err := git.Output(ctx, dir, "update-ref", "-m", msg, "HEAD", commit); err != nil {
		return "", fmt.Errorf("revert %s in a commit: %w", what, err)
	}
	// The real index follows HEAD for those paths only.
	if _, err := git.Output(ctx, dir, append([]string{"reset", "-q", "HEAD", "--"}, paths...)...); err != nil {
		return "", fmt.Errorf("revert %s in a commit: %w", what, err)
	}
	_ = os.Remove(idx)
	return commit[:min(12, len(commit))], nil
}

func revParseGitDir(ctx context.Context, dir string) string {
	out, err := git.Output(ctx, dir, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// trackerReplaced returns, for each of the tracker's directories that was
// replaced by another directory or a symlink to one, what happened. ralphd cannot judge an iteration
// against a tracker swapped under it: the forbidden changes would stay in
// the one moved away.
func (p planningFiles) trackerReplaced() []string {
	var out []string
	for path, was := range p.trackers {
		now, err := os.Lstat(path)
		switch {
		case err != nil:
			// Gone: the tracker cannot be read after the window, so the
			// baseline stays for the next start (snapshotAfter).
		case now.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			out = append(out, fmt.Sprintf("the tracker's directory %s was replaced by a symlink to %s", path, target))
		case !os.SameFile(was, now):
			out = append(out, fmt.Sprintf("the tracker's directory %s was replaced by another directory", path))
		}
	}
	slices.Sort(out)
	return out
}

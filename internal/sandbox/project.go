package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Project names the paths of one BUILD iteration that decide the layout.
type Project struct {
	// WorkTree is the git work tree the agent works in (writable).
	WorkTree string
	// GitDir and GitCommonDir are git's own dirs for the work tree (they
	// differ in a linked worktree). Their config and hooks are read-only.
	GitDir       string
	GitCommonDir string
	// StateDir is ralphd's state dir for the project (read-only).
	StateDir string
	// Scratch is the iteration's private dir (writable: the agent's TMPDIR
	// and its backend's per-iteration config, such as Codex's CODEX_HOME,
	// live there).
	Scratch string
	// ReadOnly are more read-only paths (the broker's socket dir).
	ReadOnly []string
	// AgentDirs and AgentFiles are what the agent CLI writes under the
	// user's home and XDG dirs (its config, cache and state, which its
	// backend lists: agent.Writable): writable.
	AgentDirs  []string
	AgentFiles []string
	// AgentGuarded and AgentCopies are what of the agent CLI's dirs
	// configures the CLI (agent.Guarded): the guarded paths that exist are
	// bound read-only, and each copy's file is replaced by a copy of its
	// own in Scratch.
	AgentGuarded []string
	AgentCopies  []string
	// AgentPrivate are dirs of the agent CLI's state it later executes
	// from (agent.Guarded.Private): with Cache set, each is bound to a dir
	// of ralphd's beside Cache, kept between runs.
	AgentPrivate []string
	// ProjectGuarded are the same in the work tree, relative to it
	// (agent.ProjectConfig): those that exist are read-only.
	ProjectGuarded []string
	// Cache, when set, is the agent's own cache dir, bound writable at
	// CacheDir (the user's XDG cache dir): a build cache the agent wrote
	// there would hand its objects to the user's next build. What the
	// agent needs of the real one (Keep, dirs on PATH) is bound back
	// read-only.
	Cache, CacheDir string
	// Home is the user's home dir: sockets near its top are masked, and
	// it is kept when it lies in a hidden dir (in tests).
	Home string
	// Getenv reads XDG_RUNTIME_DIR, which is hidden, and PATH, whose
	// dirs in the hidden dirs are kept.
	Getenv func(string) string
	// Shared, when set, names what of the git common dir belongs to
	// others: the agent is one of several workers in one repository.
	Shared *Shared
	// Keep are paths inside the private /tmp and /run (HiddenDirs) that
	// the agent still needs, bound back read-only: ralphd's own
	// executable, for the bd client, and whatever the backend names.
	// The dirs on PATH inside them and the file /etc/resolv.conf leads to
	// are kept without being named.
	Keep []string
	// Secrets are the user's logins the agent must not read (its forge
	// logins: agent.ForgeLogins): hidden, whether or not they lie in a
	// writable path.
	Secrets []string
}

// HiddenDirs are the dirs where programs put the unix sockets and FIFOs
// others connect to (tmux, ssh-agent, X11, D-Bus, Docker, systemd):
// inside the sandbox each is an empty private tmpfs instead.
var HiddenDirs = []string{"/tmp", "/var/tmp", "/run", "/var/run"}

// HiddenIn returns the first absolute path text names (an agent command's
// complaint) that lies in a dir the BUILD sandbox hides (HiddenDirs and
// $XDG_RUNTIME_DIR, as getenv reads it) and in no dir on $PATH, which the
// sandbox binds back; and the hidden dir. It returns "", "" when text
// names none: a file missing inside the sandbox for a reason of its own.
func HiddenIn(text string, getenv func(string) string) (path, dir string) {
	hidden := append([]string{getenv("XDG_RUNTIME_DIR")}, HiddenDirs...)
	onPath := filepath.SplitList(getenv("PATH"))
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(`:;,'"()`+"`", r) }) {
		if !filepath.IsAbs(f) {
			continue
		}
		f = filepath.Clean(f)
		kept := slices.ContainsFunc(onPath, func(d string) bool { return filepath.IsAbs(d) && within(f, d) })
		for _, h := range hidden {
			if h != "" && within(f, h) && !kept {
				return f, h
			}
		}
	}
	return "", ""
}

// Shared is what a worker's agent may write of the git common dir it
// shares with the other workers and the merge queue: its commits need the
// common dir's objects, its own branch and reflog, and its own worktree's
// HEAD and index, but the target, the other workers' branches and HEADs,
// the branches that keep work, and the target checkout's HEAD, index and
// lock files are not its to write.
//
// The common dir's top level stays read-only; objects/, refs/ and logs/
// are bound writable, then refs/heads read-only and the worker's own
// branch directory writable again; the worktrees' dir is read-only and
// the agent's own worktree dir writable again. Only directories are
// bound writable, never files: git replaces a ref, the index or HEAD by
// renaming a lock file over it, and a file replaced outside the sandbox
// (ralphd's own move of the target and its checkout) drops its binding
// inside, while a bound directory stays bound and shows its files as they
// are. A dropped binding of a file in a read-only directory leaves it
// read-only. packed-refs is read-only too, so the agent can neither
// repack nor delete a packed ref; the pool keeps every worker's branch
// loose.
type Shared struct {
	// OwnRefs is the worker's own ref directory, relative to the common
	// dir (refs/heads/ralphd/workers/w1): writable.
	OwnRefs string
}

// sharedWritable are the common dir's directories a worker's git writes:
// made when missing, and bound writable.
var sharedWritable = []string{"objects", "refs", "logs"}

// BuildLayout is the layout of a BUILD iteration: the work tree (and a
// linked worktree's git dirs), the temp dir and the agent CLI's own dirs
// are writable; the tracker (.beads/ in
// the work tree and in the main work tree of a linked worktree), .ralph/,
// git's config and hooks, and ralphd's state dir are read-only; the user's
// runtime dir ($XDG_RUNTIME_DIR, with the systemd and D-Bus sockets that
// could run a command outside the sandbox) is hidden.
func BuildLayout(p Project) Layout {
	getenv := p.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	l := Layout{
		Writable: append([]string{p.WorkTree, p.Scratch}, p.AgentFiles...),
		Dirs:     slices.Clone(p.AgentDirs),
		ReadOnly: append([]string{p.StateDir}, p.ReadOnly...),
		Sealed: []string{
			filepath.Join(p.WorkTree, ".beads"),
			filepath.Join(p.WorkTree, ".ralph"),
		},
		Hidden: append([]string{getenv("XDG_RUNTIME_DIR")}, HiddenDirs...),
	}
	l.ReadOnly = append(l.ReadOnly, p.AgentGuarded...)
	for _, r := range p.ProjectGuarded {
		l.ReadOnly = append(l.ReadOnly, filepath.Join(p.WorkTree, r))
	}
	if p.Scratch != "" {
		for i, f := range p.AgentCopies {
			l.Copies = append(l.Copies, Bind{Src: filepath.Join(p.Scratch, "home-copies", fmt.Sprintf("%d-%s", i, filepath.Base(f))), Dest: f})
		}
	}
	replaced := slices.Clone(l.Hidden)
	if p.Cache != "" && p.CacheDir != "" {
		l.Binds = append(l.Binds, Bind{Src: p.Cache, Dest: p.CacheDir})
		replaced = append(replaced, p.CacheDir)
	}
	if p.Cache != "" {
		for _, d := range p.AgentPrivate {
			if filepath.IsAbs(d) {
				l.Private = append(l.Private, Bind{Src: filepath.Join(p.Cache+".private", d), Dest: d})
			}
		}
	}
	// What lies in a hidden dir but must be seen: the user's home (in
	// tests), and a linked worktree's main work tree and common dir,
	// where git reads HEAD, config and packed refs.
	keep := append(slices.Clone(p.Keep), p.Home)
	if c := p.GitCommonDir; c != "" && filepath.Base(c) == ".git" {
		keep = append(keep, filepath.Dir(c))
	}
	keep = append(keep, p.GitCommonDir)
	for _, g := range []string{p.GitDir, p.GitCommonDir} {
		if g == "" {
			continue
		}
		ro := append(l.ReadOnly, filepath.Join(g, "config"), filepath.Join(g, "config.worktree"), filepath.Join(g, "info"))
		if g == p.GitCommonDir && p.Shared != nil {
			// Read-only but for sharedWritable (Shared). A missing hooks
			// dir cannot be made in it.
			l.ReadOnly = append(ro, filepath.Join(g, "hooks"))
			continue
		}
		if !within(g, p.WorkTree) {
			// A linked worktree's git dirs are outside it: the agent's
			// commits write objects, refs and its index there.
			l.Writable = append(l.Writable, g)
		}
		l.ReadOnly = ro
		l.Sealed = append(l.Sealed, filepath.Join(g, "hooks"))
	}
	if c := p.GitCommonDir; c != "" && p.Shared != nil {
		for _, d := range sharedWritable {
			l.Dirs = append(l.Dirs, filepath.Join(c, d))
		}
		l.ReadOnly = append(l.ReadOnly, filepath.Join(c, "refs", "heads"))
		if p.Shared.OwnRefs != "" {
			l.Writable = append(l.Writable, filepath.Join(c, filepath.FromSlash(p.Shared.OwnRefs)))
		}
		if p.GitDir != "" && filepath.Dir(p.GitDir) == filepath.Join(c, "worktrees") {
			// The other worktrees' HEADs and indexes; the agent's own
			// (p.GitDir, bound writable, deeper) stays writable.
			l.ReadOnly = append(l.ReadOnly, filepath.Join(c, "worktrees"))
		}
	}
	if p.GitCommonDir != "" && filepath.Base(p.GitCommonDir) == ".git" {
		// A linked worktree's tracker is the main work tree's .beads.
		l.Sealed = append(l.Sealed, filepath.Join(filepath.Dir(p.GitCommonDir), ".beads"))
	}
	l.ReadOnly = append(l.ReadOnly, kept(replaced, slices.Concat(l.Writable, l.Dirs), keep, getenv("PATH"))...)
	if p.Scratch != "" {
		l.Secrets = slices.Clone(p.Secrets)
		l.MaskWith = filepath.Join(p.Scratch, ".masked")
	}
	if p.Home != "" && p.Scratch != "" {
		// Sockets in the home dir (an ssh ControlMaster's, gpg-agent's,
		// an editor's server) are reachable through a read-only mount.
		// The sockets ralphd itself gives the agent (the bd broker's,
		// named in ReadOnly) are meant to be reached: never masked.
		l.Masked = Strays([]string{p.Home}, slices.Concat(l.Writable, l.Dirs, p.ReadOnly, []string{p.CacheDir}), strayDepth, strayBudget)
		l.MaskWith = filepath.Join(p.Scratch, ".masked")
	}
	return l
}

// kept returns what of the hidden dirs the agent needs back: keep, the
// dirs on path and the file /etc/resolv.conf leads to (systemd-resolved
// keeps it in /run), when inside a hidden dir but not one itself, and not
// inside a writable path (bound already, and writable).
func kept(hidden, writable, keep []string, path string) []string {
	var out []string
	writable = clean(writable)
	var want []string
	for _, p := range append(slices.Clone(keep), filepath.SplitList(path)...) {
		want = append(want, installRoots(p)...)
	}
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		want = append(want, r)
	}
	hidden = clean(hidden)
	for _, p := range clean(want) {
		if slices.ContainsFunc(hidden, func(h string) bool { return within(p, h) && p != h }) &&
			!slices.ContainsFunc(writable, func(w string) bool { return within(p, w) }) {
			out = append(out, p)
		}
	}
	return out
}

// installRoots returns what must be seen for p to work: p itself, where
// its links lead, and for a program installed by npm (anything under a
// node_modules dir, such as node_modules/.bin/claude, a link to a script
// of its package) the install prefix that holds that node_modules, since
// the program needs its whole package and dependencies.
func installRoots(p string) []string {
	if p == "" {
		return nil
	}
	out := []string{p}
	if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
		out = append(out, r)
	}
	for _, c := range slices.Clone(out) {
		if i := strings.Index(c+"/", "/node_modules/"); i > 0 {
			out = append(out, c[:i])
		}
	}
	return out
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

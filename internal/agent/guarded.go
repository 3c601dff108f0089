package agent

import "path/filepath"

// Guarded is what of an agent CLI's own dirs configures the CLI itself:
// files and dirs it reads when it starts that can run commands, load code
// or widen what it may do (settings with hooks and MCP servers, plugins,
// extensions, custom commands and agents, global instructions). The
// sandbox leaves the CLI's dirs writable (Backend.Writable), and an
// unsandboxed run of the same CLI (PLANNING, or your own session) would
// run what a BUILD agent planted there. So the sandbox binds each that
// exists read-only, and ralphd moves aside, after the iteration, one the
// agent made where there was none (modes: guardedHold).
type Guarded struct {
	// Paths are the files and dirs, absolute; unknown ones (no home) are
	// left out.
	Paths []string
	// Copies are files the CLI writes as its state that also configure it
	// (~/.claude.json holds Claude Code's MCP servers): a sandboxed agent
	// gets a copy of each, and what it writes there is dropped.
	Copies []string
	// Private are dirs of the CLI's state that a later run of it executes
	// from (Gemini CLI's checkpoint repositories, whose hooks and config
	// its git runs; Claude Code's per-session env scripts, sourced again
	// when the session is resumed): a sandboxed agent gets a dir of
	// ralphd's in each one's place, kept between its runs, and never
	// writes the user's.
	Private []string
	// ProjectDirs and ProjectFiles are the same in a project, relative to
	// its work tree (.claude/, .mcp.json): what a run of the CLI there
	// loads. They belong to PLANNING, as .ralph/ does.
	ProjectDirs, ProjectFiles []string
}

// GuardedAll is every backend's Guarded under h: what a BUILD iteration
// may not change whatever agent it runs, since PLANNING, another worker
// or your own session may run another CLI.
func GuardedAll(h Home) Guarded {
	var g Guarded
	for _, e := range registry() {
		b := e.proto.Guarded(h)
		g.Paths = append(g.Paths, b.Paths...)
		g.Copies = append(g.Copies, b.Copies...)
		g.Private = append(g.Private, b.Private...)
		g.ProjectDirs = append(g.ProjectDirs, b.ProjectDirs...)
		g.ProjectFiles = append(g.ProjectFiles, b.ProjectFiles...)
	}
	g.Paths, g.Copies, g.Private = nonEmpty(g.Paths), nonEmpty(g.Copies), nonEmpty(g.Private)
	return g
}

// ProjectConfig lists every backend's ProjectDirs and ProjectFiles: what
// of a work tree configures an agent CLI.
func ProjectConfig() (dirs, files []string) {
	g := GuardedAll(Home{})
	return g.ProjectDirs, g.ProjectFiles
}

// guardedIn joins each name to every dir that is known.
func guardedIn(dirs []string, names ...string) []string {
	var out []string
	for _, d := range nonEmpty(dirs) {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// CacheDir is the XDG cache dir ($XDG_CACHE_HOME when absolute, else
// ~/.cache), or "" when neither is known. The sandbox gives a BUILD agent
// a cache dir of its own there: a build cache the agent wrote (Go's, say)
// would hand its objects to your next build.
func (h Home) CacheDir() string { return h.xdg("XDG_CACHE_HOME", ".cache") }

package standin

import (
	"github.com/ralphd/ralphd/internal/text"
	"sort"
	"strings"
)

// recordedHelp returns real bd's --help text for a command ("" if none).
func recordedHelp(name string) string {
	b, err := helpFS.ReadFile("help/" + name + ".txt")
	if err != nil {
		return ""
	}
	return string(b)
}

// globalBlock returns the "Global Flags:" block real bd prints under every
// subcommand's usage.
func globalBlock() string {
	h := recordedHelp("ready")
	i := strings.Index(h, "\nGlobal Flags:\n")
	if i < 0 {
		return ""
	}
	return strings.TrimRight(h[i+len("\nGlobal Flags:\n"):], "\n")
}

var rootCommandLine = text.LazyRegexp(`^  ([a-z][a-z0-9-]*) +(.*)$`)

// set builds a lookup set.
func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// spec is a shorthand for a synthesised flag.
func spec(name, short, typ, def, usage string) *flagSpec {
	if def == "" {
		switch typ {
		case "bool":
			def = "false"
		case "int":
			def = "0"
		}
	}
	return &flagSpec{name: name, short: short, typ: typ, def: def, usage: usage}
}

func helpFlag(name string) *flagSpec { return spec("help", "h", "bool", "", "help for "+name) }

// buildTree assembles the command tree: recorded help where the contract
// has it, synthesised cobra-style help elsewhere, and a placeholder for
// every other bd 1.0.5 command so those fail loudly.
func buildTree() *command {
	rootHelp := recordedHelp("root")
	root := &command{name: "bd", help: rootHelp, run: runRootHelp}
	root.local = parseFlagSection(rootHelp, "Flags:")
	global := globalBlock()

	add := func(parent *command, c *command) *command {
		c.parent = parent
		parent.subs = append(parent.subs, c)
		return c
	}
	recorded := func(parent *command, name, helpName string, c *command) *command {
		c.name = name
		c.help = recordedHelp(helpName)
		c.local = parseFlagSection(c.help, "Flags:")
		return add(parent, c)
	}
	synth := func(parent *command, name string, h synthHelp, c *command) *command {
		c.name = name
		h.global = global
		h.flags = append(h.flags, helpFlag(name))
		c.parent = parent
		h.cmdPath = c.commandPath()
		h.runnable = c.run != nil
		c.help = h.render()
		c.local = h.flags
		parent.subs = append(parent.subs, c)
		return c
	}

	// Every root command real bd lists, as an unimplemented placeholder
	// until replaced below.
	placeholders := map[string]*command{}
	inCommands := false
	for _, line := range strings.Split(rootHelp, "\n") {
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			inCommands = line != "Usage:" && line != "Flags:"
			continue
		}
		if m := rootCommandLine.FindStringSubmatch(line); inCommands && m != nil {
			placeholders[m[1]] = &command{name: m[1], short: m[2]}
		}
	}

	recorded(root, "init", "init", &command{run: runInit,
		supported: set("prefix", "non-interactive", "quiet", "skip-agents", "skip-hooks", "role",
			"server", "server-host", "server-port", "external")})
	recorded(root, "create", "create", &command{aliases: []string{"new"}, run: runCreate, needsDB: true, write: true,
		supported: set("acceptance", "append-notes", "assignee", "body-file", "context", "defer", "deps", "description",
			"design", "design-file", "due", "estimate", "external-ref", "force", "id", "labels", "metadata",
			"no-inherit-labels", "notes", "parent", "priority", "silent", "skills", "spec-id", "stdin", "title", "type")})
	recorded(root, "update", "update", &command{run: runUpdate, needsDB: true, write: true,
		supported: set("acceptance", "add-label", "allow-empty-description", "append-notes", "assignee", "body-file",
			"claim", "defer", "description", "design", "design-file", "due", "estimate", "external-ref", "metadata",
			"notes", "parent", "priority", "remove-label", "session", "set-labels", "set-metadata", "spec-id",
			"status", "stdin", "title", "type", "unset-metadata")})
	recorded(root, "close", "close", &command{aliases: []string{"done"}, run: runClose, needsDB: true, write: true,
		supported: set("force", "reason", "reason-file", "session", "suggest-next")})
	recorded(root, "reopen", "reopen", &command{run: runReopen, needsDB: true, write: true, supported: set("reason")})
	recorded(root, "defer", "defer", &command{run: runDefer, needsDB: true, write: true, supported: set("until")})
	synth(root, "undefer", synthHelp{
		long: "Undefer issues: restore them to open and clear their defer date.",
		use:  "undefer [id...]",
	}, &command{run: runUndefer, needsDB: true, write: true, supported: set()})
	recorded(root, "note", "note", &command{run: runNote, needsDB: true, write: true, supported: set("file", "stdin")})
	recorded(root, "show", "show", &command{aliases: []string{"view"}, run: runShow, needsDB: true,
		supported: set("id", "include-comments", "include-dependents", "local-time", "long", "short")})
	recorded(root, "list", "list", &command{run: runList, needsDB: true,
		supported: set("all", "assignee", "created-after", "created-before", "deferred", "desc-contains",
			"empty-description", "exclude-label", "exclude-type", "flat", "id", "include-gates", "include-infra",
			"include-templates", "label", "label-any", "label-pattern", "label-regex", "limit", "no-assignee",
			"no-labels", "no-pager", "no-parent", "no-pinned", "notes-contains", "overdue", "parent", "pinned",
			"pretty", "priority", "priority-max", "priority-min", "ready", "reverse", "skip-labels", "sort", "spec",
			"status", "title", "title-contains", "tree", "type", "updated-after", "updated-before",
			"has-metadata-key", "metadata-field")})
	recorded(root, "ready", "ready", &command{run: runReady, needsDB: true,
		supported: set("assignee", "claim", "exclude-label", "exclude-type", "explain", "has-metadata-key",
			"include-deferred", "include-ephemeral", "label", "label-any", "limit", "metadata-field", "parent",
			"plain", "pretty", "priority", "sort", "type", "unassigned")})
	recorded(root, "blocked", "blocked", &command{run: runBlocked, needsDB: true, supported: set("parent")})
	recorded(root, "status", "stats", &command{aliases: []string{"stats"}, run: runStats, needsDB: true,
		supported: set("all", "assigned", "no-activity")})

	dep := recorded(root, "dep", "dep", &command{run: runDepBlocks, needsDB: true, write: true,
		supported: set("blocks", "no-cycle-check")})
	recorded(dep, "add", "dep-add", &command{run: runDepAdd, needsDB: true, write: true,
		supported: set("blocked-by", "depends-on", "no-cycle-check", "type")})
	synth(dep, "cycles", synthHelp{long: "Detect dependency cycles", use: "dep cycles"}, &command{run: runUnsupported, supported: set()})
	synth(dep, "list", synthHelp{
		long: "List dependencies or dependents of one or more issues",
		use:  "dep list [issue-id...]",
		flags: []*flagSpec{
			spec("direction", "", "string", "down", "Direction: 'down' (dependencies) or 'up' (dependents)"),
			spec("type", "t", "string", "", "Filter by dependency type"),
		},
	}, &command{run: runDepList, needsDB: true, supported: set("direction", "type")})
	synth(dep, "relate", synthHelp{long: "Create a bidirectional relates_to link between issues", use: "dep relate <id1> <id2>"}, &command{run: runUnsupported, supported: set()})
	recorded(dep, "remove", "dep-remove", &command{aliases: []string{"rm"}, run: runDepRemove, needsDB: true, write: true, supported: set()})
	recorded(dep, "tree", "dep-tree", &command{run: runDepTree, needsDB: true,
		supported: set("direction", "max-depth", "reverse", "show-all-paths", "status")})
	synth(dep, "unrelate", synthHelp{long: "Remove a relates_to link between issues", use: "dep unrelate <id1> <id2>"}, &command{run: runUnsupported, supported: set()})

	label := recorded(root, "label", "label", &command{})
	recorded(label, "add", "label-add", &command{run: runLabelAdd, needsDB: true, write: true, supported: set()})
	synth(label, "list", synthHelp{long: "List labels for an issue", use: "label list [issue-id]"},
		&command{run: runLabelList, needsDB: true, supported: set()})
	synth(label, "list-all", synthHelp{long: "List all unique labels in the database", use: "label list-all"},
		&command{run: runLabelListAll, needsDB: true, supported: set()})
	synth(label, "propagate", synthHelp{long: "Propagate a label from a parent issue to all its children", use: "label propagate"}, &command{run: runUnsupported, supported: set()})
	synth(label, "remove", synthHelp{long: "Remove a label from one or more issues", use: "label remove [issue-id...] [label]"},
		&command{run: runLabelRemove, needsDB: true, write: true, supported: set()})

	comments := recorded(root, "comments", "comments", &command{run: runComments, needsDB: true, supported: set("local-time")})
	recorded(comments, "add", "comments-add", &command{run: runCommentAdd, needsDB: true, write: true, supported: set("author", "file")})
	synth(comments, "list", synthHelp{long: "Invalid — use bd comments <issue-id> to list comments", use: "comments list"},
		&command{run: runCommentsListInvalid, supported: set()})
	synth(root, "comment", synthHelp{
		long: "Add a comment to an issue.",
		use:  "comment [issue-id] [text]",
		flags: []*flagSpec{
			spec("author", "a", "string", "", "Add author to comment"),
			spec("file", "f", "string", "", "Read comment text from file"),
		},
	}, &command{run: runCommentAdd, needsDB: true, write: true, supported: set("author", "file")})

	recorded(root, "delete", "delete", &command{run: runDelete, needsDB: true, write: true,
		supported: set("dry-run", "force", "from-file")})

	synth(root, "version", synthHelp{long: "Print version information", use: "version"}, &command{run: runVersion, supported: set()})
	synth(root, "where", synthHelp{long: "Show active beads location", use: "where"}, &command{run: runWhere, needsDB: true, supported: set()})
	synth(root, "statuses", synthHelp{long: "List valid issue statuses", use: "statuses"}, &command{run: runStatuses, supported: set()})
	synth(root, "types", synthHelp{long: "List valid issue types", use: "types"}, &command{run: runTypes, supported: set()})
	synth(root, "info", synthHelp{long: "Show database information", use: "info"}, &command{run: runInfo, needsDB: true, supported: set()})
	synth(root, "context", synthHelp{long: "Show effective backend identity and repository context", use: "context"},
		&command{run: runContext, needsDB: true, supported: set()})
	synth(root, "export", synthHelp{
		long:  "Export issues to JSONL format",
		use:   "export",
		flags: []*flagSpec{spec("output", "o", "string", "", "Output file (default: stdout)")},
	}, &command{run: runExport, needsDB: true, supported: set("output")})
	synth(root, "help", synthHelp{long: "Help provides help for any command in the application.", use: "help [command]"},
		&command{run: runHelp, hidden: true, supported: set()})
	// Recorded in the worktree session; the stand-in prints their help
	// and fails loudly on use (ralphd manages worktrees with git itself).
	recorded(root, "assign", "assign", &command{run: runUnsupported, supported: set()})
	recorded(root, "bootstrap", "bootstrap", &command{run: runUnsupported, supported: set()})
	dolt := recorded(root, "dolt", "dolt", &command{supported: set()})
	for _, sub := range []string{"set", "show", "start", "status", "stop", "test"} {
		recorded(dolt, sub, "dolt-"+sub, &command{run: runUnsupported, supported: set()})
	}
	worktree := recorded(root, "worktree", "worktree", &command{supported: set()})
	for _, sub := range []string{"create", "info", "list", "remove"} {
		recorded(worktree, sub, "worktree-"+sub, &command{run: runUnsupported, supported: set()})
	}
	recorded(root, "batch", "batch", &command{run: runUnsupported, supported: set()})
	recorded(root, "import", "import", &command{run: runUnsupported, supported: set()})

	for _, c := range root.subs {
		delete(placeholders, c.name)
	}
	for _, c := range placeholders {
		add(root, c)
	}
	sort.Slice(root.subs, func(i, j int) bool { return root.subs[i].name < root.subs[j].name })
	return root
}

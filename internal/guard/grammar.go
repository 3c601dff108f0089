package guard

import (
	"sort"
	"strings"
)

// This file holds bd 1.0.5's command-line grammar as data: every command name,
// its aliases and children, and for the commands the policy lets BUILD use,
// the exact flag set with which flags take a value. The flag lists are copied
// from `bd <command> --help` as recorded in the beads contract
// (testdata/help/*.txt; grammar_test.go checks them against those files). The
// few read-only commands without a recorded help text take their flags from
// beads' generated CLI reference.
//
// Syntax of a flags string: space-separated entries; "--name" is a boolean
// flag, "--name=" takes a value, and "-x,--name" adds the shorthand -x.

// globalFlags are bd's persistent flags, valid before and after any command.
const globalFlags = "--actor= --db= -C,--directory= --dolt-auto-commit= --global -h,--help " +
	"--ignore-schema-skew --json --profile -q,--quiet --readonly --sandbox -v,--verbose"

// opaque marks a command whose flags ralphd does not model. Any flag given to
// it is unknown, so BUILD refuses it; PLAN passes everything through anyway.
const opaque = "\x00opaque"

// commandDef is one bd command in the grammar table.
type commandDef struct {
	path    string // full command path, e.g. "dep add"
	aliases string // space-separated aliases of the last path element
	flags   string // local flags, or opaque
}

// bdCommands is the grammar of bd 1.0.5. Only the commands BUILD may use (and
// their parents) need exact flags; the rest are listed so that their names
// resolve the way bd resolves them.
var bdCommands = []commandDef{
	{path: "", flags: "-V,--version"},

	// Read-only commands with flags from the recorded help texts.
	{path: "ready", flags: "-a,--assignee= --claim --exclude-label= --exclude-type= --explain --gated " +
		"--has-metadata-key= --include-deferred --include-ephemeral -l,--label= --label-any= -n,--limit= " +
		"--metadata-field= --mol= --mol-type= --parent= --plain --pretty -p,--priority= -s,--sort= " +
		"-t,--type= -u,--unassigned"},
	{path: "show", aliases: "view", flags: "--as-of= --children --current --id= --include-comments " +
		"--include-dependents --local-time --long --refs --short --thread -w,--watch"},
	{path: "list", flags: "--all -a,--assignee= --closed-after= --closed-before= --created-after= " +
		"--created-before= --defer-after= --defer-before= --deferred --desc-contains= --due-after= " +
		"--due-before= --empty-description --exclude-label= --exclude-type= --flat --format= " +
		"--has-metadata-key= --id= --include-gates --include-infra --include-templates -l,--label= " +
		"--label-any= --label-pattern= --label-regex= -n,--limit= --long --metadata-field= --mol-type= " +
		"--no-assignee --no-labels --no-pager --no-parent --no-pinned --notes-contains= --overdue " +
		"--parent= --pinned --pretty -p,--priority= --priority-max= --priority-min= --ready -r,--reverse " +
		"--skip-labels --sort= --spec= -s,--status= --title= --title-contains= --tree -t,--type= " +
		"--updated-after= --updated-before= -w,--watch --wisp-type="},
	{path: "blocked", flags: "--parent="},
	{path: "status", aliases: "stats", flags: "--all --assigned --no-activity"},
	{path: "dep tree", flags: "--direction= --format= -d,--max-depth= --reverse --show-all-paths --status="},
	{path: "comments", flags: "--local-time"},

	// Read-only commands with flags from beads' generated CLI reference.
	{path: "search", flags: "-a,--assignee= --closed-after= --closed-before= --created-after= " +
		"--created-before= --desc-contains= --empty-description --external-contains= --has-metadata-key= " +
		"-l,--label= --label-any= -n,--limit= --long --metadata-field= --no-assignee --no-labels " +
		"--notes-contains= --priority-max= --priority-min= --query= -r,--reverse --sort= -s,--status= " +
		"-t,--type= --updated-after= --updated-before="},
	{path: "count", flags: "-a,--assignee= --by-assignee --by-label --by-priority --by-status --by-type " +
		"--closed-after= --closed-before= --created-after= --created-before= --desc-contains= " +
		"--empty-description --id= --include-infra -l,--label= --label-any= --no-assignee --no-labels " +
		"--notes-contains= -p,--priority= --priority-max= --priority-min= -s,--status= --title= " +
		"--title-contains= -t,--type= --updated-after= --updated-before="},
	{path: "children", flags: "--pretty"},
	{path: "query", flags: "-a,--all -n,--limit= --long --offset= --parse-only -r,--reverse --sort="},
	{path: "graph", flags: "--all --box --compact --dot --html"},
	{path: "graph check", flags: ""},
	{path: "history", flags: "--limit="},
	{path: "stale", flags: "-d,--days= -n,--limit= -s,--status="},
	{path: "info", flags: "--schema --thanks --whats-new"},
	{path: "prime", flags: "--export --full --hook-json --mcp --memories-only --stealth"},
	{path: "where", flags: ""},
	{path: "context", flags: ""},
	{path: "version", flags: ""},
	{path: "statuses", flags: ""},
	{path: "types", flags: ""},
	{path: "help", flags: ""},
	{path: "human", flags: ""},
	{path: "quickstart", flags: ""},
	{path: "dep list", flags: "--direction= -t,--type="},
	{path: "dep cycles", flags: ""},
	{path: "comments list", flags: ""},
	{path: "label list", flags: ""},
	{path: "label list-all", flags: ""},
	{path: "config get", flags: ""},
	{path: "config list", flags: ""},

	// Commands that write, with flags from the recorded help texts.
	{path: "create", aliases: "new", flags: "--acceptance= --append-notes= -a,--assignee= --body-file= " +
		"--context= --defer= --deps= -d,--description= --design= --design-file= --dry-run --due= " +
		"--ephemeral -e,--estimate= --event-actor= --event-category= --event-payload= --event-target= " +
		"--external-ref= -f,--file= --force --graph= --id= -l,--labels= --metadata= --mol-type= " +
		"--no-history --no-inherit-labels --notes= --parent= -p,--priority= --repo= --silent --skills= " +
		"--spec-id= --stdin --title= -t,--type= --validate --waits-for= --waits-for-gate= --wisp-type="},
	{path: "update", flags: "--acceptance= --add-label= --allow-empty-description --append-notes= " +
		"-a,--assignee= --await-id= --body-file= --claim --defer= -d,--description= --design= " +
		"--design-file= --due= --ephemeral -e,--estimate= --external-ref= --history --metadata= " +
		"--no-history --notes= --parent= --persistent -p,--priority= --remove-label= --session= " +
		"--set-labels= --set-metadata= --spec-id= -s,--status= --stdin --title= -t,--type= " +
		"--unset-metadata="},
	{path: "close", aliases: "done", flags: "--claim-next --continue -f,--force --no-auto -r,--reason= " +
		"--reason-file= --session= --suggest-next"},
	{path: "reopen", flags: "-r,--reason="},
	{path: "note", flags: "--file= --stdin"},
	{path: "comments add", flags: "-a,--author= -f,--file="},
	{path: "label", flags: ""},
	{path: "label add", flags: ""},
	{path: "dep", flags: "-b,--blocks= --no-cycle-check"},
	{path: "dep add", flags: "--blocked-by= --depends-on= --file= --no-cycle-check -t,--type="},
	{path: "dep remove", aliases: "rm", flags: ""},
	{path: "delete", flags: "--cascade --dry-run -f,--force --from-file="},
	{path: "defer", flags: "--until="},
	{path: "import", flags: "--dedup --dry-run -i,--input="},
	{path: "batch", flags: "--dry-run -f,--file= -m,--message="},
	{path: "init", flags: "--agents-file= --agents-profile= --agents-template= --backend= --contributor " +
		"--database= --debug --destroy-token= --discard-remote --external --force --from-jsonl " +
		"--non-interactive -p,--prefix= --proxied-server --proxied-server-config-path= " +
		"--proxied-server-external-host= --proxied-server-external-keep-alive= " +
		"--proxied-server-external-port= --proxied-server-external-socket-path= " +
		"--proxied-server-external-tls --proxied-server-external-tls-cert-path= " +
		"--proxied-server-external-tls-key-path= --proxied-server-external-user= " +
		"--proxied-server-log-path= --proxied-server-root-path= -q,--quiet --reinit-local --remote= " +
		"--role= --server --server-host= --server-port= --server-socket= --server-user= --setup-exclude " +
		"--shared-server --skip-agents --skip-hooks --stealth --team"},

	// Commands that write, with flags from beads' generated CLI reference.
	{path: "comment", flags: "--file= --stdin"},
	{path: "q", flags: "-l,--labels= -p,--priority= -t,--type="},
	{path: "tag", flags: ""},
	{path: "assign", flags: ""},
	{path: "link", flags: "-t,--type="},
	{path: "dep relate", flags: ""},
	{path: "dep unrelate", flags: ""},
	{path: "priority", flags: ""},
	{path: "config", flags: ""},

	// Everything else bd 1.0.5 lists; flags not modelled.
	{path: "label propagate", flags: opaque},
	{path: "label remove", flags: opaque},
	{path: "config apply", flags: opaque},
	{path: "config drift", flags: opaque},
	{path: "config set", flags: opaque},
	{path: "config set-many", flags: opaque},
	{path: "config show", flags: opaque},
	{path: "config unset", flags: opaque},
	{path: "config validate", flags: opaque},
	{path: "create-form", flags: opaque},
	{path: "edit", flags: opaque},
	{path: "gate", flags: opaque},
	{path: "merge-slot", flags: opaque},
	{path: "promote", flags: opaque},
	{path: "set-state", flags: opaque},
	{path: "state", flags: opaque},
	{path: "todo", flags: opaque},
	{path: "diff", flags: opaque},
	{path: "find-duplicates", flags: opaque},
	{path: "lint", flags: opaque},
	{path: "duplicate", flags: opaque},
	{path: "duplicates", flags: opaque},
	{path: "epic", flags: opaque},
	{path: "supersede", flags: opaque},
	{path: "swarm", flags: opaque},
	{path: "backup", flags: opaque},
	{path: "branch", flags: opaque},
	{path: "export", flags: opaque},
	{path: "federation", flags: opaque},
	{path: "restore", flags: opaque},
	{path: "vc", flags: opaque},
	{path: "bootstrap", flags: opaque},
	{path: "dolt", flags: opaque},
	{path: "forget", flags: opaque},
	{path: "hooks", flags: ""},
	{path: "hooks run", flags: ""},
	{path: "hooks list", flags: ""},
	{path: "hooks install", flags: opaque},
	{path: "hooks uninstall", flags: opaque},

	{path: "kv", flags: opaque},
	{path: "memories", flags: opaque},
	{path: "onboard", flags: opaque},
	{path: "recall", flags: opaque},
	{path: "remember", flags: opaque},
	{path: "setup", flags: opaque},
	{path: "compact", flags: opaque},
	{path: "doctor", flags: opaque},
	{path: "flatten", flags: opaque},
	{path: "gc", flags: opaque},
	{path: "migrate", flags: opaque},
	{path: "ping", flags: opaque},
	{path: "preflight", flags: opaque},
	{path: "prune", flags: opaque},
	{path: "purge", flags: opaque},
	{path: "rename-prefix", flags: opaque},
	{path: "rules", flags: opaque},
	{path: "sql", flags: opaque},
	{path: "upgrade", flags: opaque},
	{path: "worktree", flags: opaque},
	{path: "admin", flags: opaque},
	{path: "jira", flags: opaque},
	{path: "linear", flags: opaque},
	{path: "repo", flags: opaque},
	{path: "ado", flags: opaque},
	{path: "audit", flags: opaque},
	{path: "completion", flags: opaque},
	{path: "cook", flags: opaque},
	{path: "formula", flags: opaque},
	{path: "github", flags: opaque},
	{path: "gitlab", flags: opaque},
	{path: "init-safety", flags: opaque},
	{path: "mail", flags: opaque},
	{path: "mol", flags: opaque},
	{path: "notion", flags: opaque},
	{path: "orphans", flags: opaque},
	{path: "rename", flags: opaque},
	{path: "ship", flags: opaque},
	{path: "undefer", flags: opaque},
}

// flagSpec is one flag of a command.
type flagSpec struct {
	long  string
	short byte // 0 when the flag has no shorthand
	value bool // takes a value (string, int, strings, …); false for booleans
}

// command is a node of the resolved grammar tree.
type command struct {
	name     string
	path     string              // canonical path, "" for the root
	modelled bool                // flags below are the command's complete local flag set
	flags    map[string]flagSpec // local and inherited global flags
	local    map[string]bool     // names of the command's own flags
	shorts   map[byte]flagSpec
	children map[string]*command // by name and by alias
	names    []string            // canonical child names, sorted
}

// grammar is the command tree built from bdCommands. It is built once and
// never modified.
var grammar = buildGrammar(bdCommands)

// buildGrammar turns the grammar table into a tree. Parents missing from the
// table are created as opaque commands.
func buildGrammar(defs []commandDef) *command {
	root := newCommand("", "")
	global := parseFlagList(globalFlags)
	byPath := map[string]*command{"": root}
	var ensure func(path string) *command
	ensure = func(path string) *command {
		if c, ok := byPath[path]; ok {
			return c
		}
		parentPath, name := "", path
		if i := strings.LastIndexByte(path, ' '); i >= 0 {
			parentPath, name = path[:i], path[i+1:]
		}
		parent := ensure(parentPath)
		c := newCommand(name, path)
		parent.children[name] = c
		parent.names = append(parent.names, name)
		sort.Strings(parent.names)
		byPath[path] = c
		return c
	}
	for _, d := range defs {
		c := ensure(d.path)
		if d.aliases != "" && d.path != "" {
			parent := byPath[parentOf(d.path)]
			for _, a := range strings.Fields(d.aliases) {
				parent.children[a] = c
			}
		}
		if d.flags == opaque {
			continue
		}
		c.modelled = true
		for _, f := range parseFlagList(d.flags) {
			c.add(f)
			c.local[f.long] = true
		}
	}
	for _, c := range byPath {
		for _, f := range global {
			if _, ok := c.flags[f.long]; ok {
				continue // a local flag shadows the persistent one, as in cobra
			}
			if f.short != 0 {
				if _, ok := c.shorts[f.short]; ok {
					continue
				}
			}
			c.add(f)
		}
	}
	return root
}

func newCommand(name, path string) *command {
	return &command{
		name:     name,
		path:     path,
		flags:    map[string]flagSpec{},
		local:    map[string]bool{},
		shorts:   map[byte]flagSpec{},
		children: map[string]*command{},
	}
}

func (c *command) add(f flagSpec) {
	c.flags[f.long] = f
	if f.short != 0 {
		c.shorts[f.short] = f
	}
}

func parentOf(path string) string {
	if i := strings.LastIndexByte(path, ' '); i >= 0 {
		return path[:i]
	}
	return ""
}

// parseFlagList parses the flags mini-language described at the top of this
// file. The table is static, so a malformed entry is a programming error that
// grammar_test.go catches; parseFlagList skips it rather than panicking.
func parseFlagList(s string) []flagSpec {
	var out []flagSpec
	for _, tok := range strings.Fields(s) {
		var f flagSpec
		if strings.HasPrefix(tok, "-") && !strings.HasPrefix(tok, "--") {
			short, rest, ok := strings.Cut(tok, ",")
			if !ok || len(short) != 2 {
				continue
			}
			f.short = short[1]
			tok = rest
		}
		if !strings.HasPrefix(tok, "--") || len(tok) < 3 {
			continue
		}
		name := tok[2:]
		if strings.HasSuffix(name, "=") {
			f.value = true
			name = strings.TrimSuffix(name, "=")
		}
		f.long = name
		out = append(out, f)
	}
	return out
}

// lookup returns the grammar node of a canonical command path ("dep add").
func lookup(path string) *command {
	c := grammar
	for _, name := range strings.Fields(path) {
		next, ok := c.children[name]
		if !ok {
			return nil
		}
		c = next
	}
	return c
}

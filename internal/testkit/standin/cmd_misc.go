package standin

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

func runRootHelp(inv *invocation) int {
	fmt.Fprint(inv.stdout, inv.cmd.help)
	return 0
}

// runUnsupported fails loudly for commands real bd has and the stand-in
// does not implement.
func runUnsupported(inv *invocation) int { return inv.fail(unsupportedMessage(inv.cmd)) }

// unsupportedMessage names a real bd command the stand-in lacks.
func unsupportedMessage(c *command) string {
	return fmt.Sprintf("%q is a bd 1.0.5 command the bd stand-in does not implement (ralphd's test stand-in covers only what ralphd and agents use)", c.commandPath())
}

// runHelp is cobra's `help [command]`.
func runHelp(inv *invocation) int {
	root := inv.cmd
	for root.parent != nil {
		root = root.parent
	}
	c := root
	for _, a := range inv.args {
		next := c.find(a)
		if next == nil {
			fmt.Fprintf(inv.stderr, "Unknown help topic %#q\n%s", inv.args, root.usage())
			return 0
		}
		c = next
	}
	if c.help == "" {
		return inv.fail(unsupportedMessage(c))
	}
	fmt.Fprint(inv.stdout, c.help)
	return 0
}

func runVersion(inv *invocation) int {
	if inv.jsonOut {
		inv.printJSON(obj{{"branch", bdBranch}, {"build", bdBuild}, {"commit", bdCommit}, {"schema_version", 1}, {"version", bdVersion}})
		return 0
	}
	fmt.Fprintf(inv.stdout, "bd version %s (%s: %s@%s)\n", bdVersion, bdBuild, bdBranch, bdCommit[:12])
	return 0
}

func runWhere(inv *invocation) int {
	if inv.ws.server != nil {
		// Server mode names the local dolt directory and no prefix.
		if inv.jsonOut {
			o := obj{{"database_path", filepath.Join(inv.ws.beadsDir, "dolt")}, {"path", inv.ws.beadsDir}}
			if inv.ws.redirectedFrom != "" {
				o = append(o, kv{"redirected_from", inv.ws.redirectedFrom})
			}
			inv.printJSON(append(o, kv{"schema_version", 1}))
			return 0
		}
		fmt.Fprintf(inv.stdout, "%s\n  database: %s\n", inv.ws.beadsDir, filepath.Join(inv.ws.beadsDir, "dolt"))
		return 0
	}
	if inv.jsonOut {
		o := obj{{"database_path", inv.ws.doltRoot()}, {"path", inv.ws.beadsDir}, {"prefix", inv.db.Prefix}}
		if inv.ws.redirectedFrom != "" {
			o = append(o, kv{"redirected_from", inv.ws.redirectedFrom})
		}
		inv.printJSON(append(o, kv{"schema_version", 1}))
		return 0
	}
	fmt.Fprintf(inv.stdout, "%s\n  prefix: %s\n  database: %s\n", inv.ws.beadsDir, inv.db.Prefix, inv.ws.doltRoot())
	return 0
}

func runStatuses(inv *invocation) int {
	if inv.jsonOut {
		var arr []obj
		for _, s := range builtinStatuses {
			arr = append(arr, obj{{"category", s.category}, {"description", s.desc}, {"icon", s.icon}, {"name", s.name}})
		}
		inv.printJSON(obj{{"built_in_statuses", arr}, {"schema_version", 1}})
		return 0
	}
	var b strings.Builder
	b.WriteString("Built-in statuses:\n")
	for _, s := range builtinStatuses {
		fmt.Fprintf(&b, "  %s %-14s [%-6s]  %s\n", s.icon, s.name, s.category, s.desc)
	}
	b.WriteString("\nNo custom statuses configured.\n")
	b.WriteString("Configure with: bd config set status.custom \"name:category,...\"\n")
	b.WriteString("Categories: active, wip, done, frozen\n")
	fmt.Fprint(inv.stdout, b.String())
	return 0
}

func runTypes(inv *invocation) int {
	if inv.jsonOut {
		var arr []obj
		for _, t := range coreTypes {
			arr = append(arr, obj{{"description", t.desc}, {"name", t.name}})
		}
		inv.printJSON(obj{{"core_types", arr}, {"schema_version", 1}})
		return 0
	}
	var b strings.Builder
	b.WriteString("Core work types (built-in):\n")
	for _, t := range coreTypes {
		fmt.Fprintf(&b, "  %-14s %s\n", t.name, t.desc)
	}
	b.WriteString("\nNo custom types configured.\n")
	b.WriteString("Configure with: bd config set types.custom \"type1,type2,...\"\n")
	fmt.Fprint(inv.stdout, b.String())
	return 0
}

// runInfo prints the database summary; real bd prints text even with --json.
func runInfo(inv *invocation) int {
	fmt.Fprintf(inv.stdout, "\nBeads Database Information\n===========================\nDatabase: %s\nMode: direct\n\nIssue Count: %d\n\n",
		inv.ws.doltRoot(), len(inv.db.Issues))
	return 0
}

func runContext(inv *invocation) int {
	m, err := readMetadata(inv.ws.beadsDir)
	if err != nil {
		return inv.fail(err.Error())
	}
	role := gitConfig(inv.ctx, inv.ws.repoRoot(), inv.envList, `^beads\.role$`)["beads.role"]
	redirected := inv.dbPath() != "" || inv.env["BEADS_DIR"] != "" || inv.ws.redirectedFrom != ""
	mode := "embedded"
	if inv.ws.server != nil {
		mode = "server"
	}
	o := obj{
		{"backend", "dolt"},
		{"bd_version", bdVersion},
		{"beads_dir", inv.ws.beadsDir},
		{"cwd_repo_root", gitTopLevel(inv.ctx, inv.cwd, inv.envList)},
		{"database", inv.ws.dbName},
		{"dolt_mode", mode},
		{"is_redirected", redirected},
		{"is_worktree", false},
		{"project_id", m.ProjectID},
		{"repo_root", inv.ws.repoRoot()},
		{"role", role},
		{"schema_version", 1},
	}
	if s := inv.ws.server; s != nil {
		// Not recorded: bd 1.0.5's ContextInfo adds these in server mode
		// (cmd/bd/context_cmd.go), with the port as resolved at run time.
		o = append(o, kv{"server_host", s.host}, kv{"server_port", s.port})
	}
	if inv.jsonOut {
		inv.printJSON(o)
		return 0
	}
	for _, e := range o {
		if e.k != "schema_version" {
			fmt.Fprintf(inv.stdout, "%s: %v\n", e.k, e.v)
		}
	}
	return 0
}

var (
	prefixRe    = text.LazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	nonPrefixRe = text.LazyRegexp(`[^A-Za-z0-9-]+`)
)

// runInit creates .beads/ with the embedded-Dolt-shaped layout. Unlike
// real bd it writes no AGENTS.md/CLAUDE.md, installs no git hooks and
// makes no git commit; it does set `git config beads.role`.
func runInit(inv *invocation) int {
	prefix := strings.TrimRight(inv.fl.str("prefix"), "-")
	if prefix == "" {
		prefix = strings.ToLower(nonPrefixRe.ReplaceAllString(filepath.Base(inv.cwd), "-"))
		prefix = strings.Trim(prefix, "-")
	}
	if !prefixRe.MatchString(prefix) {
		return inv.fail(fmt.Sprintf("invalid prefix %q: use letters, digits, '-' and '_'", prefix))
	}
	role := inv.fl.str("role")
	if role == "" {
		role = "maintainer"
	}
	if role != "maintainer" && role != "contributor" {
		return inv.fail(fmt.Sprintf("invalid role %q (use \"maintainer\" or \"contributor\")", role))
	}
	beadsDir := filepath.Join(inv.cwd, beadsDirName)
	alreadyInit := func() int {
		return inv.fail(fmt.Sprintf("%s is already initialized; the bd stand-in does not re-initialize (remove .beads to start over)", beadsDir))
	}
	if _, err := readMetadata(beadsDir); err == nil {
		return alreadyInit()
	}
	ws := &workspace{beadsDir: beadsDir, dbName: prefix}
	if inv.fl.boolean("server") {
		if !inv.fl.boolean("external") {
			return inv.fail("the bd stand-in has no managed Dolt server: use --server with --external and a server directory under $" + serverRootEnv)
		}
		host := inv.fl.str("server-host")
		if host == "" {
			host = "127.0.0.1"
		}
		port := inv.fl.integer("server-port")
		if port <= 0 {
			port = 3307
		}
		ws.server = &serverAddr{host: host, port: port, database: prefix}
		if err := ws.connect(inv.env); err != nil {
			return inv.fail(err.Error())
		}
		if err := os.MkdirAll(filepath.Join(beadsDir, "dolt"), 0o755); err != nil {
			return inv.fail(fmt.Sprintf("init: %v", err))
		}
		if err := os.Chmod(beadsDir, 0o700); err != nil { // as real bd's server init leaves it
			return inv.fail(fmt.Sprintf("init: %v", err))
		}
		if _, err := os.Stat(ws.dataPath()); err == nil {
			return inv.fail(fmt.Sprintf("database %q already exists on the Dolt server at %s; clones share it without bd init", prefix, ws.server.hostPort()))
		}
	}
	if err := os.MkdirAll(ws.nomsDir(), 0o755); err != nil {
		return inv.fail(fmt.Sprintf("init: %v", err))
	}
	unlock, err := ws.lock(inv.ctx)
	if err != nil {
		return inv.fail(err.Error())
	}
	defer unlock()
	if _, err := readMetadata(beadsDir); err == nil {
		return alreadyInit() // another init won the race
	}
	projectID, err := newUUIDv7(inv.now, inv.rand())
	if err != nil {
		return inv.fail(err.Error())
	}
	meta := fmt.Sprintf("{\n  \"backend\": \"dolt\",\n  \"database\": %q,\n  \"dolt_mode\": \"embedded\",\n  \"project_id\": %q\n}\n", prefix, projectID)
	if ws.server != nil {
		meta = fmt.Sprintf("{\n  \"database\": \"dolt\",\n  \"backend\": \"dolt\",\n  \"dolt_mode\": \"server\",\n  \"dolt_server_host\": %q,\n  \"dolt_server_port\": %d,\n  \"dolt_database\": %q,\n  \"project_id\": %q\n}\n",
			ws.server.host, ws.server.port, prefix, projectID)
	}
	files := []struct{ name, body string }{
		{"config.yaml", "# Beads configuration (written by ralphd's bd stand-in).\n# The issue prefix lives in the database; see `bd where`.\n"},
		{".local_version", bdVersion + "\n"},
		{".gitignore", "# Local database files (not shared through git)\nembeddeddolt/\ndolt/\ndolt-server.port\nlast-touched\n.local_version\nbackup/\n"},
		{"interactions.jsonl", ""},
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(beadsDir, f.name), []byte(f.body), 0o644); err != nil {
			return inv.fail(fmt.Sprintf("init: %v", err))
		}
	}
	db := &database{Version: dataVersion, Prefix: prefix, Issues: []*issue{}, Deps: []*dep{}, Comments: []*comment{}}
	db.index()
	if err := ws.commit(db, "init"); err != nil {
		return inv.fail(fmt.Sprintf("init: %v", err))
	}
	if ws.server != nil {
		if err := atomicfile.Write(filepath.Join(beadsDir, "dolt-server.port"), []byte(strconv.Itoa(ws.server.port)), 0o644); err != nil {
			return inv.fail(fmt.Sprintf("init: %v", err))
		}
	}
	// metadata.json last: it marks the workspace as ready for discovery.
	if err := atomicfile.Write(filepath.Join(beadsDir, "metadata.json"), []byte(meta), 0o644); err != nil {
		return inv.fail(fmt.Sprintf("init: %v", err))
	}
	if gitTopLevel(inv.ctx, inv.cwd, inv.envList) != "" {
		if _, err := runGit(inv.ctx, inv.cwd, inv.envList, "config", "beads.role", role); err != nil {
			fmt.Fprintf(inv.stderr, "warning: could not set git config beads.role: %v\n", err)
		}
	}
	if inv.fl.boolean("quiet") {
		return 0
	}
	if ws.server != nil {
		fmt.Fprintf(inv.stdout, "\n✓ bd initialized successfully!\n\n  Backend: dolt\n  Mode: server\n  Server: root@%s\n  Database: %s\n  Issue prefix: %s\n  Issues will be named: %s-<hash> (e.g., %s-a3f2dd)\n\nRun bd quickstart to get started.\n\n",
			ws.server.hostPort(), prefix, prefix, prefix, prefix)
		return 0
	}
	fmt.Fprintf(inv.stdout, "\n✓ bd initialized successfully!\n\n  Backend: dolt\n  Mode: embedded\n  Database: %s\n  Issue prefix: %s\n  Issues will be named: %s-<hash> (e.g., %s-a3f2dd)\n\nRun bd quickstart to get started.\n\n",
		prefix, prefix, prefix, prefix)
	return 0
}

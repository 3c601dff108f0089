package standin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Version strings real bd 1.0.5 prints.
const (
	bdVersion = "1.0.5"
	bdBuild   = "6a3f515"
	bdCommit  = "6a3f515ced18406c189c55fff789a4925bfaa35c"
	bdBranch  = "v1.0.5"
)

// noDBMessage is what bd prints on stderr when it finds no workspace.
const noDBMessage = "Error: no beads database found\n" +
	"Hint: run 'bd where' to inspect the resolved workspace, or 'bd init' to create a new database\n" +
	"      or set BEADS_DIR to point to your .beads directory\n"

// Runner runs the stand-in. Its zero value behaves like real bd; the
// fields let tests pin the clock, the randomness and the issue ids.
type Runner struct {
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Rand supplies random bytes for comment and project UUIDs. Nil means
	// crypto/rand.
	Rand io.Reader
	// NewID, when set, proposes the id of a new top-level issue given its
	// title. Returning "" (or an id already taken) falls back to bd's
	// hash-based ids. Tests use it to give issues the ids a recording has.
	NewID func(title string) string
}

// Main runs one bd command line. args excludes the program name; env is
// the process environment ("KEY=value" entries) and cwd the working
// directory. It returns the exit code real bd would.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env []string, cwd string) int {
	return Runner{}.Main(ctx, args, stdin, stdout, stderr, env, cwd)
}

// invocation is the state of one command run.
type invocation struct {
	ctx     context.Context
	r       Runner
	cmd     *command
	fl      *flagValues
	args    []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	envList []string
	env     map[string]string
	origCwd string
	cwd     string
	now     time.Time

	jsonOut  bool
	envelope bool
	quiet    bool

	ws    *workspace
	db    *database
	dirty []string // operations that changed the database
	// claimed lists the issues this command claimed (for a lost
	// transaction's error lines).
	claimed []string
	// pendingLog holds interaction lines an optimistic transaction writes
	// only once it commits; nil outside one.
	pendingLog [][]byte
	deferLog   bool
	touched    string // id for .beads/last-touched, "" for none

	userLoaded bool
	userName   string
	userEmail  string
}

// Main runs one bd command line with the runner's settings.
func (r Runner) Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env []string, cwd string) int {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	inv := &invocation{
		ctx: ctx, r: r, stdin: stdin, stdout: stdout, stderr: stderr,
		envList: env, env: envMap(env), origCwd: cwd, cwd: cwd,
	}
	if r.Now == nil {
		inv.now = time.Now()
	} else {
		inv.now = r.Now()
	}
	return inv.dispatch(args)
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, e := range env {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}

func (inv *invocation) rand() io.Reader {
	if inv.r.Rand != nil {
		return inv.r.Rand
	}
	return rand.Reader
}

// dispatch finds the command like cobra does, parses its flags and runs it.
func (inv *invocation) dispatch(args []string) int {
	if inv.deviates(DeviateLeases) {
		if code, ok := inv.heartbeat(args); ok {
			return code
		}
	}
	root := buildTree()
	cmd, rest, unknown := lookup(root, args)
	inv.deviateCommand(cmd)
	if unknown != "" {
		fmt.Fprintf(inv.stderr, "Error: unknown command %q for \"bd\"%s\nRun 'bd --help' for usage.\n", unknown, suggestions(root, unknown))
		return 1
	}
	fs := newFlagSet(cmd.local, root.local)
	if cmd.run == nil && cmd.help == "" {
		return inv.fail(unsupportedMessage(cmd))
	}
	fl, helpAsked, err := parseFlags(fs, rest)
	if err != nil {
		fmt.Fprintf(inv.stderr, "Error: %s\n%s\n", err, cmd.usage())
		return 1
	}
	inv.cmd, inv.fl, inv.args = cmd, fl, fl.args
	if helpAsked {
		fmt.Fprint(inv.stdout, cmd.help)
		return 0
	}
	if cmd == root && fl.boolean("version") {
		fmt.Fprintf(inv.stdout, "bd version %s (%s: %s@%s)\n", bdVersion, bdBuild, bdBranch, bdCommit[:12])
		return 0
	}
	if cmd.run == nil {
		fmt.Fprint(inv.stdout, cmd.help)
		return 0
	}
	if code, ok := inv.checkUnsupported(); !ok {
		return code
	}
	inv.jsonOut = fl.boolean("json")
	inv.quiet = fl.boolean("quiet")
	switch strings.ToLower(inv.env["BD_JSON_ENVELOPE"]) {
	case "1", "true", "yes", "on":
		inv.envelope = true
	}
	if fl.changed("directory") {
		dir := fl.str("directory")
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(inv.cwd, dir)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return inv.fail(fmt.Sprintf("failed to change directory to %s: no such directory", fl.str("directory")))
		}
		inv.cwd = filepath.Clean(dir)
	}
	if v := fl.str("dolt-auto-commit"); fl.changed("dolt-auto-commit") && v != "off" && v != "on" && v != "batch" {
		return inv.fail(fmt.Sprintf("invalid --dolt-auto-commit %q (valid: off, on, batch)", v))
	}
	if fl.boolean("readonly") && (cmd.write || (cmd.name == "ready" && fl.boolean("claim"))) {
		return inv.fail(fmt.Sprintf("operation '%s' is not allowed in read-only mode", cmd.name))
	}
	if !cmd.needsDB {
		return cmd.run(inv)
	}
	return inv.withDB(cmd.run)
}

// lookup finds the command args name the way cobra's Find does, returning
// the remaining args. unknown is set when the first word names no root
// command.
func lookup(root *command, args []string) (cmd *command, rest []string, unknown string) {
	cmd, rest = root, args
	for {
		fs := newFlagSet(cmd.local, root.local)
		words := stripFlags(fs, rest)
		if len(words) == 0 {
			break
		}
		next := cmd.find(words[0])
		if next == nil {
			if cmd == root {
				return cmd, rest, words[0]
			}
			break
		}
		rest = removeFirstWord(fs, rest, words[0])
		cmd = next
	}
	return cmd, rest, ""
}

// checkUnsupported fails loudly when a flag real bd accepts is one the
// stand-in does not implement.
func (inv *invocation) checkUnsupported() (int, bool) {
	names := make([]string, 0, len(inv.fl.raw))
	for name := range inv.fl.raw {
		names = append(names, name)
	}
	for _, name := range uniqueSorted(names) {
		if name == "help" || name == "version" {
			continue
		}
		local := false
		for _, f := range inv.cmd.local {
			if f.name == name {
				local = true
			}
		}
		if local && !inv.cmd.supported[name] {
			return inv.fail(fmt.Sprintf("flag --%s of %q is not implemented by the bd stand-in", name, inv.cmd.commandPath())), false
		}
		if !local && name == "global" {
			return inv.fail("flag --global is not implemented by the bd stand-in (it has no shared server)"), false
		}
	}
	return 0, true
}

// withDB finds the workspace, takes the lock, loads the data, runs fn and
// then either commits the changes or touches the Dolt files like a read.
// Optimistic claims (see server.go) run fn without the lock and commit
// only when nobody else committed in between.
func (inv *invocation) withDB(fn func(*invocation) int) int {
	ws, err := discover(inv.cwd, inv.dbPath(), inv.env["BEADS_DIR"])
	if err != nil {
		fmt.Fprint(inv.stderr, noDBMessage)
		return 1
	}
	applyServerEnv(ws, inv.env)
	inv.ws = ws
	if err := ws.connect(inv.env); err != nil {
		return inv.failJSON(false, err.Error())
	}
	if !inv.quiet {
		inv.serverWarnings()
		role := gitConfig(inv.ctx, inv.origCwd, inv.envList, `^beads\.role$`)["beads.role"]
		if role == "" && inv.cmd.name != "show" { // recorded: show does not warn
			fmt.Fprint(inv.stderr, "warning: beads.role not configured (GH#2950).\n"+
				"  Fix: git config beads.role maintainer\n"+
				"  Or:  git config beads.role contributor\n")
		}
	}
	unlock, err := ws.lock(inv.ctx)
	if err != nil {
		return inv.fail(err.Error())
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	db, err := ws.load()
	if err != nil {
		return inv.fail(err.Error())
	}
	inv.db = db
	if !inv.optimistic() {
		return inv.finish(fn(inv))
	}

	// An optimistic transaction: snapshot, work unlocked, then commit only
	// if the snapshot is still current.
	base, _ := os.ReadFile(ws.manifestPath())
	unlock()
	locked = false
	stdout, stderr := inv.stdout, inv.stderr
	out, errOut, restore := inv.buffered()
	inv.deferLog = true
	code := fn(inv)
	restore()
	if len(inv.dirty) > 0 {
		t := time.NewTimer(inv.txnWindow())
		select {
		case <-inv.ctx.Done():
			t.Stop()
			return inv.fail(fmt.Sprintf("transaction: %v", inv.ctx.Err()))
		case <-t.C:
		}
	}
	unlock, err = ws.lock(inv.ctx)
	if err != nil {
		return inv.fail(err.Error())
	}
	locked = true
	if now, _ := os.ReadFile(ws.manifestPath()); len(inv.dirty) > 0 && !bytes.Equal(now, base) {
		return inv.serializationFailed(stdout, stderr, inv.claimed)
	}
	for _, l := range inv.pendingLog {
		if err := ws.appendInteraction(l); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}
	inv.pendingLog = nil
	code = inv.finish(code)
	_, _ = io.Copy(stdout, out)
	_, _ = io.Copy(stderr, errOut)
	return code
}

// finish commits the command's changes, or touches the Dolt files like a
// read, and records the last touched issue.
func (inv *invocation) finish(code int) int {
	ws := inv.ws
	if len(inv.dirty) > 0 {
		if err := ws.commit(inv.db, strings.Join(inv.dirty, "; ")); err != nil {
			fmt.Fprintf(inv.stderr, "Error: %v\n", err)
			return 1
		}
	} else if err := ws.touch(); err != nil {
		fmt.Fprintf(inv.stderr, "Error: %v\n", err)
		return 1
	}
	if inv.touched != "" {
		if err := ws.writeLastTouched(inv.touched); err != nil {
			fmt.Fprintf(inv.stderr, "Error: %v\n", err)
			return 1
		}
	}
	return code
}

// markDirty records that the command changed the database.
func (inv *invocation) markDirty(op string) { inv.dirty = append(inv.dirty, op) }

// fail prints "Error: msg" on stderr and returns exit code 1.
func (inv *invocation) fail(msg string) int {
	fmt.Fprintf(inv.stderr, "Error: %s\n", msg)
	return 1
}

// failJSON reports msg as bd's {"error": ...} object when --json is on
// (on stdout or stderr, as bd does for that command) and as "Error: msg"
// text on stderr otherwise.
func (inv *invocation) failJSON(toStdout bool, msg string) int {
	if !inv.jsonOut {
		return inv.fail(msg)
	}
	w := inv.stderr
	if toStdout {
		w = inv.stdout
	}
	inv.writeJSON(w, obj{{"error", msg}, {"schema_version", 1}})
	return 1
}

// printJSON prints v on stdout as bd does (2-space indent, newline),
// wrapped in {"data", "schema_version"} under BD_JSON_ENVELOPE=1.
func (inv *invocation) printJSON(v any) { inv.writeJSON(inv.stdout, v) }

func (inv *invocation) writeJSON(w io.Writer, v any) {
	if inv.deviates(DeviateRenamedField) {
		v = renameFields(v)
	}
	if inv.envelope {
		if o, ok := v.(obj); ok {
			v = o.without("schema_version")
		}
		v = obj{{"data", v}, {"schema_version", 1}}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(inv.stderr, "Error: encoding JSON: %v\n", err)
		return
	}
	fmt.Fprintf(w, "%s\n", b)
}

// actor resolves the audit actor: --actor > $BEADS_ACTOR > git user.name
// > $USER.
func (inv *invocation) actor() string {
	if a := inv.fl.str("actor"); inv.fl.changed("actor") && a != "" {
		return a
	}
	if a := inv.env["BEADS_ACTOR"]; a != "" {
		return a
	}
	if name, _ := inv.gitUser(); name != "" {
		return name
	}
	if u := inv.env["USER"]; u != "" {
		return u
	}
	return "unknown"
}

// gitUser returns git's user.name and user.email for the repository.
func (inv *invocation) gitUser() (string, string) {
	if !inv.userLoaded {
		dir := inv.cwd
		if inv.ws != nil {
			dir = inv.ws.repoRoot()
		}
		cfg := gitConfig(inv.ctx, dir, inv.envList, `^user\.(name|email)$`)
		inv.userName, inv.userEmail, inv.userLoaded = cfg["user.name"], cfg["user.email"], true
	}
	return inv.userName, inv.userEmail
}

// notFound is the error bd's id resolver returns.
func notFound(id string) error {
	return fmt.Errorf("no issue found matching %q", id)
}

// errAmbiguous is returned when a partial id matches several issues.
var errAmbiguous = errors.New("ambiguous id")

// resolve maps a full or partial id to an issue, as bd's resolver does:
// exact id, then prefix-less hash, then a unique prefix match.
func (inv *invocation) resolve(ref string) (*issue, error) {
	ref = strings.TrimSpace(ref)
	db := inv.db
	if is := db.get(ref); is != nil {
		return is, nil
	}
	if is := db.get(db.Prefix + "-" + ref); is != nil {
		return is, nil
	}
	hash := strings.TrimPrefix(ref, db.Prefix+"-")
	if hash == "" {
		return nil, notFound(ref)
	}
	var matches []string
	for _, is := range db.Issues {
		if strings.HasPrefix(strings.TrimPrefix(is.ID, db.Prefix+"-"), hash) {
			matches = append(matches, is.ID)
		}
	}
	switch len(matches) {
	case 0:
		return nil, notFound(ref)
	case 1:
		return db.get(matches[0]), nil
	}
	return nil, fmt.Errorf("%w %q matches %d issues: %s", errAmbiguous, ref, len(matches), strings.Join(uniqueSorted(matches), ", "))
}

// idsOrLastTouched returns the positional ids, or the last touched issue
// when there are none (bd's behaviour for update, close and show).
func (inv *invocation) idsOrLastTouched() []string {
	if len(inv.args) > 0 {
		return inv.args
	}
	if lt := inv.ws.lastTouched(); lt != "" {
		return []string{lt}
	}
	return nil
}

// suggestions renders cobra's "Did you mean this?" block.
func suggestions(root *command, typed string) string {
	var out []string
	for _, c := range root.subs {
		if c.hidden {
			continue
		}
		if levenshtein(strings.ToLower(typed), strings.ToLower(c.name)) <= 2 || strings.HasPrefix(strings.ToLower(c.name), strings.ToLower(typed)) {
			out = append(out, c.name)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(out, "\n\t") + "\n"
}

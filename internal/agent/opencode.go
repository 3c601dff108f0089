package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// OpencodeConfigEnv is the variable through which the opencode backend
// passes its per-run configuration: opencode merges this inline JSON over
// the global, OPENCODE_CONFIG and project configs.
const OpencodeConfigEnv = "OPENCODE_CONFIG_CONTENT"

// Opencode is the backend for opencode (`opencode run --format json`),
// with the prompt on stdin (opencode appends piped stdin to the message,
// and the message may be empty).
//
// Policy: Invocation.DenyBash is compiled into `permission.bash` rules,
// `"bd delete": "deny"` and `"bd delete *": "deny"` for each prefix, in a
// config passed inline through OPENCODE_CONFIG_CONTENT. That layer is
// merged over the user's global and project configs, so its rules come
// last and win under opencode's last-matching-rule-wins order; deny is
// enforced even with --auto. A user's own OPENCODE_CONFIG_CONTENT is
// replaced for the run. Without --auto, opencode run auto-rejects every
// permission that would ask; ralphd does not pass --auto.
//
// Usage: opencode reports input tokens without cache reads, as Claude
// does; reasoning tokens are added to OutputTokens. CostUSD is the sum of
// the steps' costs, and Turns counts steps. opencode writes cost 0 for a
// model without a price (a custom provider): a run with tokens and a cost
// of exactly 0 leaves CostUSD nil.
type Opencode struct {
	// Bin is the executable; "opencode" when empty.
	Bin string
	// Now is the clock used for reset times; time.Now when nil.
	Now func() time.Time
	// TransientBackoff overrides DefaultTransientBackoff when > 0.
	TransientBackoff time.Duration
}

// Name returns "opencode".
func (o Opencode) Name() string { return "opencode" }

// Binary returns the executable opencode needs on PATH.
func (o Opencode) Binary() string {
	if o.Bin != "" {
		return o.Bin
	}
	return "opencode"
}

// InstallHint says how to install opencode.
func (o Opencode) InstallHint() string {
	return "install opencode with `npm install -g opencode-ai`, then add a provider with `opencode auth login`"
}

// VersionArgs returns the arguments that make opencode print its version.
func (o Opencode) VersionArgs() []string { return []string{"--version"} }

// Verified pins the opencode release the end-to-end suite runs.
func (o Opencode) Verified() Verification {
	return Verification{Version: "1.18.33", Package: "opencode-ai"}
}

// Hosts returns the API hosts of the providers opencode is used with
// here, Anthropic and OpenAI, or the hosts of ANTHROPIC_BASE_URL and
// OPENAI_BASE_URL. A provider configured in opencode.json with its own
// baseURL is not seen.
func (o Opencode) Hosts(getenv func(string) string) []string {
	return []string{apiHost(getenv, "ANTHROPIC_BASE_URL", "api.anthropic.com"), apiHost(getenv, "OPENAI_BASE_URL", "api.openai.com")}
}

// Credentials finds the logins opencode keeps in
// $XDG_DATA_HOME/opencode/auth.json, or a provider's API key in the
// environment.
func (o Opencode) Credentials(h Home) Credentials {
	return found(credFile(filepath.Join(h.dataDir(), "opencode", "auth.json")), h.credEnv("ANTHROPIC_API_KEY", "OPENAI_API_KEY"))
}

// Writable returns opencode's dirs under each XDG base dir.
func (o Opencode) Writable(h Home) (dirs, files []string) {
	return []string{
		under(h.xdg("XDG_CONFIG_HOME", ".config"), "opencode"),
		under(h.xdg("XDG_DATA_HOME", ".local/share"), "opencode"),
		under(h.xdg("XDG_CACHE_HOME", ".cache"), "opencode"),
		under(h.xdg("XDG_STATE_HOME", ".local/state"), "opencode"),
	}, nil
}

// Guarded returns opencode's configuration in its config dir (its config
// files, global instructions, plugins with their node_modules, agents,
// commands, modes, tools and skills), the programs and packages it
// downloads and runs (bin/ in its data dir, the provider packages in its
// cache dir), and its snapshots: git repositories in its data dir, whose
// config and hooks git would run (BUILD runs it with snapshots off).
func (o Opencode) Guarded(h Home) Guarded {
	config := under(h.xdg("XDG_CONFIG_HOME", ".config"), "opencode")
	paths := guardedIn([]string{config},
		"opencode.json", "opencode.jsonc", "config.json", "AGENTS.md", "plugin", "plugins", "agent", "agents",
		"command", "commands", "mode", "modes", "tool", "tools", "skill", "skills", "node_modules",
		"package.json", "bun.lock", "bunfig.toml", ".npmrc")
	paths = append(paths, guardedIn([]string{under(h.xdg("XDG_DATA_HOME", ".local/share"), "opencode")}, "bin", "snapshot")...)
	paths = append(paths, guardedIn([]string{under(h.xdg("XDG_CACHE_HOME", ".cache"), "opencode")},
		"node_modules", "package.json", "bun.lock", "bin")...)
	return Guarded{Paths: paths, ProjectDirs: []string{".opencode"}, ProjectFiles: []string{"opencode.json", "opencode.jsonc"}}
}

// ScrubEnv returns nothing: opencode sets no variable that would mislead
// an agent ralphd starts.
func (o Opencode) ScrubEnv() []string { return nil }

// Command builds the opencode command line; the prompt goes on stdin.
func (o Opencode) Command(inv Invocation) (Spec, error) {
	argv := []string{o.Binary(), "run", "--format", "json"}
	if inv.Model != "" {
		argv = append(argv, "--model", inv.Model)
	}
	env := ralphEnv(inv)
	if inv.Dir != "" {
		// opencode (1.18.33) takes its project directory from $PWD, not
		// from its working directory: with ralphd's own PWD inherited, it
		// would run every command in the directory ralphd started in.
		if abs, err := filepath.Abs(inv.Dir); err == nil {
			env = append(env, "PWD="+abs)
		}
	}
	cfg, err := opencodeConfig(inv.DenyBash)
	if err != nil {
		return Spec{}, err
	}
	if cfg != nil {
		env = append(env, OpencodeConfigEnv+"="+string(cfg))
	}
	db, err := opencodeDatabase(inv)
	if err != nil {
		return Spec{}, err
	}
	if db != "" {
		env = append(env, OpencodeDBEnv+"="+db)
	}
	if inv.Resume != nil {
		argv = append(argv, "--session", inv.Resume.ID)
	}
	return Spec{Argv: argv, Env: env, Stdin: inv.Prompt}, nil
}

// Resuming an opencode session.
//
// opencode (1.18.33) keeps every session as rows of one SQLite database,
// opencode/opencode.db under $XDG_DATA_HOME, with its -wal and -shm, and
// `opencode run --session <id>` resumes one (an unknown id: "Session not
// found", exit 1, no stream). ralphd cannot copy a shared database back
// without overwriting the user's other sessions, so each BUILD run gets a
// database of its own through OPENCODE_DB:
// opencode/ralphd/issue-<issue>.db under the data dir, whose old copy
// (and -wal, -shm, -journal) is removed, never through a link, before a
// fresh run. SaveSession reads that database and its -wal (never through
// a link) as the session's files, renamed <id>.db and <id>.db-wal; the
// resume writes them back below opencode/ralphd (placeSession), removes
// any -wal, -shm or -journal it did not write (a planted -wal would be
// replayed over ralphd's copy), and points OPENCODE_DB at the restored
// file. Never --continue: with no session it starts a fresh one without
// a word.

// OpencodeDBEnv is the variable that moves opencode's database.
const OpencodeDBEnv = "OPENCODE_DB"

// opencodeDBDir is the dir of ralphd's databases below the data dir.
const opencodeDBDir = "opencode/ralphd"

// opencodeSidecars are the files SQLite keeps beside a database.
var opencodeSidecars = []string{"-wal", "-shm", "-journal"}

// opencodeDataHome is the XDG data dir the databases live under, or ""
// when the home is unknown.
func opencodeDataHome(h Home) string { return h.xdg("XDG_DATA_HOME", filepath.Join(".local", "share")) }

// opencodeDBName is the database file of a fresh BUILD run on issue: the
// issue id when it is plain letters, digits, '-' and '_', else a hash of
// it.
func opencodeDBName(issue string) string {
	plain := len(issue) <= 64
	for i := 0; i < len(issue) && plain; i++ {
		c := issue[i]
		plain = c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_'
	}
	if plain {
		return "issue-" + issue + ".db"
	}
	sum := sha256.Sum256([]byte(issue))
	return "hash-" + hex.EncodeToString(sum[:16]) + ".db"
}

// opencodeDatabase prepares the database of a BUILD run of inv and
// returns its path: a fresh one (old copies removed) or, for a resume,
// ralphd's copy of the session put back. "" when the run is not a BUILD
// run on an issue or the home is unknown (opencode's own database).
func opencodeDatabase(inv Invocation) (string, error) {
	data := opencodeDataHome(inv.Home)
	if inv.Mode != "build" || inv.IssueID == "" || data == "" {
		if inv.Resume != nil {
			return "", fmt.Errorf("resume opencode session %s: no database for a run outside BUILD or without a home", inv.Resume.ID)
		}
		return "", nil
	}
	root, err := atomicfile.MakeDirAll(data, 0o700)
	if err != nil {
		return "", fmt.Errorf("opencode database: %w", err)
	}
	defer root.Close()
	d, err := root.MakeDir(opencodeDBDir, 0o700)
	if err != nil {
		return "", fmt.Errorf("opencode database: %w", err)
	}
	defer d.Close()
	name := opencodeDBName(inv.IssueID)
	keep := map[string]bool{}
	if s := inv.Resume; s != nil {
		if err := opencodeCheckSession(*s); err != nil {
			return "", fmt.Errorf("resume opencode session: %w", err)
		}
		// The session's <id>.db and <id>.db-wal go back under the
		// issue's own name: an issue has one database, whichever run
		// made it, and DropSessionFiles finds it by the issue alone.
		for _, f := range s.Files {
			rel := name + strings.TrimPrefix(f.Rel, s.ID+".db")
			// A file, link or dir the agent put in the way is removed,
			// never followed, and the file written afresh.
			if err := removeAbsent(d, rel); err != nil {
				return "", fmt.Errorf("resume opencode session: %w", err)
			}
			if err := d.WriteFile(rel, f.Data, 0o600); err != nil {
				return "", fmt.Errorf("resume opencode session %s: %w", s.ID, err)
			}
			keep[rel] = true
		}
	} else if err := removeAbsent(d, name); err != nil {
		return "", fmt.Errorf("opencode database: %w", err)
	}
	for _, suf := range opencodeSidecars {
		if keep[name+suf] {
			continue
		}
		if err := removeAbsent(d, name+suf); err != nil {
			return "", fmt.Errorf("opencode database: %w", err)
		}
	}
	return d.Join(name), nil
}

// opencodeDBs opens opencode/ralphd under h's data dir, never through a
// link; nil and no error when it does not exist (or the home is unknown).
func opencodeDBs(h Home) (*atomicfile.Dir, error) {
	data := opencodeDataHome(h)
	if data == "" {
		return nil, nil
	}
	root, err := atomicfile.OpenDir(data)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.OpenDir(opencodeDBDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return d, err
}

// dropOpencodeDB removes the database name in d and then its sidecars,
// never through a link. The database goes first: once it is gone the
// rest is no session (SaveSession finds none, and the next run removes a
// stray -wal before opencode starts), so a removal cut short leaves
// nothing that can be used, only sidecars a later prune removes.
func dropOpencodeDB(d *atomicfile.Dir, name string) error {
	for _, n := range append([]string{name}, sidecarNames(name)...) {
		if err := removeAbsent(d, n); err != nil {
			return err
		}
	}
	return nil
}

// sidecarNames are the names of name's -wal, -shm and -journal.
func sidecarNames(name string) []string {
	out := make([]string, len(opencodeSidecars))
	for i, suf := range opencodeSidecars {
		out[i] = name + suf
	}
	return out
}

// DropSessionFiles removes the database BUILD runs on issue made below
// opencode/ralphd (and its -wal, -shm, -journal), never through a link.
// ralphd keeps its own copy of a session it resumes (state.Resume), so
// the database is only read between a run's end and the saving of its
// session, or at the next start's sweep after ralphd died.
func (o Opencode) DropSessionFiles(h Home, issue string) error {
	if issue == "" {
		return nil
	}
	d, err := opencodeDBs(h)
	if err != nil || d == nil {
		return wrapDrop(err)
	}
	defer d.Close()
	return wrapDrop(dropOpencodeDB(d, opencodeDBName(issue)))
}

// wrapDrop says which files an error of DropSessionFiles or
// PruneSessionFiles is about.
func wrapDrop(err error) error {
	if err != nil {
		return fmt.Errorf("remove opencode's databases below %s: %w", opencodeDBDir, err)
	}
	return nil
}

// PruneSessionFiles removes the databases below opencode/ralphd none of
// whose files (database, -wal, -shm, -journal) changed since cutoff,
// except those of the issues in keep; stray sidecars go the same way.
// Only the names ralphd gives (issue-*.db, hash-*.db, and ses_*.db from
// the releases that put a resumed session under its id) are touched,
// never through a link. It returns how many databases it removed.
func (o Opencode) PruneSessionFiles(h Home, cutoff time.Time, keep []string) (int, error) {
	d, err := opencodeDBs(h)
	if err != nil || d == nil {
		return 0, wrapDrop(err)
	}
	defer d.Close()
	ents, err := d.ReadDir(".")
	if err != nil {
		return 0, wrapDrop(err)
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[opencodeDBName(k)] = true
	}
	newest := map[string]time.Time{}
	for _, e := range ents {
		base := e.Name()
		for _, suf := range opencodeSidecars {
			base = strings.TrimSuffix(base, suf)
		}
		if !opencodePrunable(base) || kept[base] {
			continue
		}
		// The entry itself, never what a link points to: a link the
		// agent planted, however fresh its target, goes with its set.
		fi, err := d.Lstat(e.Name())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, wrapDrop(err)
		}
		if t, ok := newest[base]; !ok || fi.ModTime().After(t) {
			newest[base] = fi.ModTime()
		}
	}
	n := 0
	for base, t := range newest {
		if !t.Before(cutoff) {
			continue
		}
		if err := dropOpencodeDB(d, base); err != nil {
			return n, wrapDrop(err)
		}
		n++
	}
	return n, nil
}

// opencodePrunable reports whether name is a database name ralphd gives.
func opencodePrunable(name string) bool {
	if rest, ok := strings.CutSuffix(name, ".db"); ok {
		return strings.HasPrefix(rest, "issue-") && rest != "issue-" ||
			strings.HasPrefix(rest, "hash-") && rest != "hash-" ||
			validOpencodeID(rest)
	}
	return false
}

// removeAbsent removes name in d, and all below it when it is a dir,
// never through a link; a missing name is no error.
func removeAbsent(d *atomicfile.Dir, name string) error { return d.RemoveAll(name) }

// opencodeCheckSession reports what is wrong with s as an opencode
// session: its id must be opencode's, its files <id>.db and, optionally,
// <id>.db-wal.
func opencodeCheckSession(s Session) error {
	if err := s.Check(); err != nil {
		return err
	}
	if !validOpencodeID(s.ID) {
		return fmt.Errorf("session %s is not an opencode session", s.ID)
	}
	db := false
	for _, f := range s.Files {
		switch f.Rel {
		case s.ID + ".db":
			db = true
		case s.ID + ".db-wal":
		default:
			return fmt.Errorf("session %s: file %q is not an opencode database", s.ID, f.Rel)
		}
	}
	if !db || len(s.Files) > 2 {
		return fmt.Errorf("session %s: not one opencode database", s.ID)
	}
	return nil
}

// SaveSession reads back the database of a BUILD run of inv on its issue
// and its -wal, never through a link, as session id's files. A database
// that does not mention id is not kept.
func (o Opencode) SaveSession(inv Invocation, id string) (Session, error) {
	if !validOpencodeID(id) {
		return Session{}, fmt.Errorf("opencode session id %q is not an opencode session id", id)
	}
	data := opencodeDataHome(inv.Home)
	if data == "" || inv.IssueID == "" {
		return Session{}, fmt.Errorf("opencode session %s: no home dir or issue", id)
	}
	root, err := atomicfile.OpenDir(data)
	if err != nil {
		return Session{}, fmt.Errorf("opencode session %s: %w", id, err)
	}
	defer root.Close()
	d, err := root.OpenDir(opencodeDBDir)
	if err != nil {
		return Session{}, fmt.Errorf("opencode session %s: %w", id, err)
	}
	defer d.Close()
	name := opencodeDBName(inv.IssueID)
	db, err := d.ReadFile(name, MaxSessionBytes)
	if err != nil {
		return Session{}, fmt.Errorf("opencode session %s: %w", id, err)
	}
	s := Session{ID: id, Files: []SessionFile{{Rel: id + ".db", Data: db}}}
	wal, err := d.ReadFile(name+"-wal", MaxSessionBytes)
	switch {
	case err == nil:
		s.Files = append(s.Files, SessionFile{Rel: id + ".db-wal", Data: wal})
	case !errors.Is(err, fs.ErrNotExist):
		return Session{}, fmt.Errorf("opencode session %s: %w", id, err)
	}
	if !bytes.Contains(db, []byte(id)) && !bytes.Contains(wal, []byte(id)) {
		return Session{}, fmt.Errorf("opencode session %s: its database %s does not hold it", id, d.Join(name))
	}
	return s, opencodeCheckSession(s)
}

// opencodeConfig renders the inline config with the bash deny rules; nil
// when there are none. It also turns opencode's snapshots off: they are
// git repositories in its data dir (snapshot/), whose config and hooks
// git runs, so BUILD's sandbox keeps them read-only (Guarded).
func opencodeConfig(prefixes []string) ([]byte, error) {
	prefixes = denyPrefixes(prefixes)
	if len(prefixes) == 0 {
		return nil, nil
	}
	bash := make(map[string]string, 2*len(prefixes))
	for _, p := range prefixes {
		bash[p] = "deny"
		bash[p+" *"] = "deny"
	}
	cfg := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"permission": map[string]any{"bash": bash},
		"snapshot":   false,
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("render opencode config: %w", err)
	}
	return b, nil
}

// NewParser returns a parser for `opencode run --format json` output.
func (o Opencode) NewParser() Parser {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	backoff := o.TransientBackoff
	if backoff <= 0 {
		backoff = DefaultTransientBackoff
	}
	return &opencodeParser{now: now, backoff: backoff}
}

// opencodeTexts words opencode's verdicts.
var opencodeTexts = providerTexts{label: "opencode",
	login: "add the provider's credentials with `opencode auth login`, or set its API key", pkg: "opencode-ai"}

// reOpencodeDenied matches the error of a tool call opencode's permission
// system refused.
var reOpencodeDenied = text.LazyRegexp(`(?i)rule which prevents you|rejected permission|permission (?:was )?(?:denied|rejected)|auto-reject`)

// opencodeParser parses opencode's JSON event lines: envelopes
// {type, timestamp, sessionID, part|error}.
type opencodeParser struct {
	now     func() time.Time
	backoff time.Duration

	sessionID string
	initSent  bool
	tools     toolTracker
	lastText  string
	usage     Usage
	cost      float64
	haveCost  bool
	steps     int
	done      bool
	err       *opencodeError // the last error event
}

// opencodeError is an error event's payload.
type opencodeError struct {
	name      string
	message   string
	status    int64
	retryable bool
	retryIn   time.Duration // from a retry-after response header, when given
}

// Line parses one line.
func (p *opencodeParser) Line(line []byte) []Event {
	if !text.ValidJSON(line) {
		return nil
	}
	v := gjson.ParseBytes(line)
	if !v.IsObject() {
		return nil
	}
	typ := v.Get("type").String()
	switch typ {
	case "step_start", "step_finish", "text", "reasoning", "tool_use", "error", "done":
	default:
		return nil
	}
	var evs []Event
	if sid := v.Get("sessionID").String(); sid != "" {
		p.sessionID = sid
		if !p.initSent {
			p.initSent = true
			evs = append(evs, Event{Kind: EventInit, SessionID: sid})
		}
	}
	part := v.Get("part")
	switch typ {
	case "text":
		p.lastText = part.Get("text").String()
		evs = append(evs, Event{Kind: EventText, SessionID: p.sessionID, Text: p.lastText})
	case "tool_use":
		evs = append(evs, p.tool(part)...)
	case "step_finish":
		p.steps++
		// A negative step would hide the others' cost in the sum; the sum
		// goes invalid instead, and Run rejects it.
		if c := part.Get("cost"); c.Type == gjson.Number {
			if f := c.Float(); ValidCost(f) {
				p.cost += f
			} else {
				p.cost = math.NaN()
			}
			p.haveCost = true
		}
		t := part.Get("tokens")
		p.usage = p.usage.Add(Usage{
			InputTokens:      t.Get("input").Int(),
			OutputTokens:     t.Get("output").Int() + t.Get("reasoning").Int(),
			CacheReadTokens:  t.Get("cache.read").Int(),
			CacheWriteTokens: t.Get("cache.write").Int(),
		})
	case "error":
		e := opencodeErr(v.Get("error"))
		p.err = &e
		evs = append(evs, Event{Kind: EventError, SessionID: p.sessionID, Text: joinNonEmpty(": ", e.name, e.message), IsError: true})
	case "done":
		p.done = true
		evs = append(evs, Event{Kind: EventResult, SessionID: p.sessionID, Text: p.lastText})
	}
	return evs
}

// tool handles a ToolPart, which opencode emits once the call completed
// or failed.
func (p *opencodeParser) tool(part gjson.Result) []Event {
	id := part.Get("callID").String()
	if id == "" {
		id = part.Get("id").String()
	}
	name := part.Get("tool").String()
	state := part.Get("state")
	var cmd string
	if name == "bash" {
		if c := state.Get("input.command"); c.Type == gjson.String {
			cmd = c.String()
		}
	}
	var evs []Event
	if !p.tools.first(id, cmd) {
		return nil
	}
	evs = append(evs, Event{Kind: EventToolCall, SessionID: p.sessionID, Tool: name, ToolID: id, Command: cmd})
	status := state.Get("status").String()
	if status != "completed" && status != "error" {
		return evs
	}
	text := state.Get("output").String()
	if status == "error" {
		text = state.Get("error").String()
		if reOpencodeDenied.MatchString(text) {
			p.tools.deny(Denial{Tool: name, ToolID: id, Command: cmd})
		}
	}
	return append(evs, Event{Kind: EventToolResult, SessionID: p.sessionID, Tool: name, ToolID: id, Text: text, IsError: status == "error"})
}

// opencodeErr reads an error payload: {name, data{message, statusCode,
// isRetryable, responseHeaders}} (or a bare message).
func opencodeErr(e gjson.Result) opencodeError {
	if e.Type == gjson.String {
		return opencodeError{name: "Error", message: e.String()}
	}
	out := opencodeError{
		name:      e.Get("name").String(),
		message:   e.Get("data.message").String(),
		status:    e.Get("data.statusCode").Int(),
		retryable: e.Get("data.isRetryable").Bool(),
	}
	if out.message == "" {
		out.message = e.Get("message").String()
	}
	hdr := e.Get("data.responseHeaders")
	if ms, ok := retryAfter(hdr.Get("retry-after-ms").String(), time.Millisecond); ok {
		out.retryIn = ms
	} else if s, ok := retryAfter(hdr.Get("retry-after").String(), time.Second); ok {
		out.retryIn = s
	}
	return out
}

// maxRetryAfter bounds a retry-after header ralphd believes.
const maxRetryAfter = 30 * 24 * time.Hour

// retryAfter reads a retry-after header value in the given unit.
func retryAfter(v string, unit time.Duration) (time.Duration, bool) {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || n <= 0 || n*float64(unit) > float64(maxRetryAfter) {
		return 0, false
	}
	return time.Duration(n * float64(unit)), true
}

// Finish classifies the run: an error event decides by its name, HTTP
// status and text; otherwise the run is ok when opencode finished (a done
// event, or steps and exit code 0), the agent's error when it exited
// non-zero after working, and crashed when it produced no step at all.
func (p *opencodeParser) Finish(exitCode int, stderrTail string) Outcome {
	out := Outcome{
		ResultText: p.lastText,
		Usage:      p.usage,
		Turns:      p.steps,
		SessionID:  p.sessionID,
		Commands:   p.tools.commands,
		ToolCalls:  p.tools.calls,
		ExitCode:   exitCode,
		Denials:    p.tools.denials,
	}
	// opencode writes cost 0 for a model it has no price for (a custom
	// provider, say): a run that used tokens and cost exactly nothing is
	// unpriced, so its cost stays absent rather than a made-up $0.
	unpriced := p.cost == 0 && p.usage.InputTokens+p.usage.OutputTokens+p.usage.CacheReadTokens > 0
	if p.haveCost && !unpriced {
		c := p.cost
		out.CostUSD = &c
	}
	now := p.now()
	if e := p.err; e != nil {
		p.errVerdict(*e, now).apply(&out)
		return out
	}
	switch {
	case p.done || (p.steps > 0 && exitCode == 0):
		out.Status, out.Reason = StatusOK, "finished"
	case strings.Contains(stderrTail, "must provide a message"):
		out.Status = StatusFatal
		out.Reason = "opencode received no prompt: " + lastLine(stderrTail) + "; check the prompt file"
	default:
		if v, ok := opencodeTexts.usageVerdict(stderrTail); ok && p.steps == 0 {
			v.apply(&out)
			return out
		}
		if v, ok := opencodeTexts.verdict(classifyText(stderrTail), stderrTail, now, p.backoff); ok {
			v.apply(&out)
			return out
		}
		if p.steps > 0 && exitCode > 0 {
			out.Status = StatusAgentError
			out.Reason = fmt.Sprintf("opencode exited with code %d", exitCode)
			if last := lastLine(stderrTail); last != "" {
				out.Reason += ": " + last
			}
			return out
		}
		out.Status = StatusCrashed
		out.Reason = crashReason(exitCode, stderrTail)
	}
	return out
}

// errVerdict classifies an error event.
func (p *opencodeParser) errVerdict(e opencodeError, now time.Time) verdict {
	msg := joinNonEmpty(": ", e.name, e.message)
	class := classifyText(msg)
	switch {
	case e.name == "ProviderAuthError", e.status == 401, e.status == 403:
		class = classAuth
	case strings.Contains(e.name, "ModelNotFound"):
		class = classModel
	case e.status == 429:
		class = classLimit
	case e.status >= 500 && class != classLimit:
		class = classTransient
	case e.name == "MessageAbortedError":
		return verdict{status: StatusCrashed, reason: "opencode aborted the turn: " + firstText(msg)}
	}
	if v, ok := opencodeTexts.verdict(class, msg, now, p.backoff); ok {
		if v.status == StatusRateLimited && e.retryIn > 0 {
			v.resetAt, v.rounded = now.Add(e.retryIn), false
		}
		return v
	}
	if e.retryable {
		return verdict{status: StatusRateLimited, transient: true, reason: "transient API error: " + firstText(msg),
			resetAt: now.Add(max(p.backoff, e.retryIn))}
	}
	return verdict{status: StatusAgentError, reason: "opencode error " + firstText(msg)}
}

// NewLogParser returns a parser of `opencode run --format json` output
// for the run log.
func (o Opencode) NewLogParser() LogParser { return opencodeLog{} }

// opencodeLog reads opencode's JSON events for the run log.
type opencodeLog struct{}

// Log parses one line: an event of a session (with a part, or an error,
// or the end).
func (opencodeLog) Log(line []byte) ([]Event, bool) {
	v, ok := logObject(line)
	if !ok {
		return nil, false
	}
	typ := v.Get("type").String()
	part := v.Get("part")
	if !v.Get("sessionID").Exists() || (!part.Exists() && typ != "error" && typ != "done") {
		return nil, false
	}
	switch typ {
	case "text":
		return []Event{{Kind: EventText, Text: part.Get("text").String()}}, true
	case "reasoning":
		return []Event{{Kind: EventThinking, Text: part.Get("text").String()}}, true
	case "tool_use":
		st := part.Get("state")
		tool := part.Get("tool").String()
		id := firstNonEmpty(part.Get("callID").String(), part.Get("id").String())
		evs := []Event{toolCallEvent(tool, id, tool == "bash", st.Get("input"))}
		if st.Get("status").String() == "error" {
			msg := st.Get("error").String()
			return append(evs, failedToolEvent(id, msg, strings.Contains(strings.ToLower(msg), "rule"))), true
		}
		return append(evs, shellResultEvent(id, st.Get("metadata.exit"), st.Get("output").String())), true
	case "step_finish":
		t := part.Get("tokens")
		in, out := t.Get("input").Int(), t.Get("output").Int()
		ev := Event{Kind: EventUsage, Text: "step done: " + tokenWords(in, out), Tokens: &Tokens{InputTokens: in, OutputTokens: out}}
		if c := part.Get("cost"); c.Exists() {
			cost := c.Float()
			ev.CostUSD = &cost
			ev.Text += ", " + dollars(cost)
		}
		return []Event{ev}, true
	case "error":
		msg := firstNonEmpty(v.Get("error.data.message").String(), v.Get("error.name").String())
		return []Event{{Kind: EventError, IsError: true, Text: msg}}, true
	}
	return []Event{{Kind: EventNote, Verbose: true, Text: typ}}, true
}

package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// CodexHomeDir is the directory the Codex backend creates in
// Invocation.ScratchDir to hold the per-iteration CODEX_HOME.
const CodexHomeDir = "codex-home"

// CodexTmpDir is the directory the Codex backend creates in
// Invocation.ScratchDir as the agent's TMPDIR when it builds a
// per-iteration CODEX_HOME (see Codex.Command).
const CodexTmpDir = "codex-tmp"

// CodexRulesFile is the name of the execpolicy rules file the Codex
// backend writes into <ScratchDir>/codex-home/rules.
const CodexRulesFile = "ralphd.rules"

// DefaultCodexSandbox is the sandbox mode the Codex backend asks for.
const DefaultCodexSandbox = "workspace-write"

// Codex is the backend for the OpenAI Codex CLI, run as
// `codex exec --json --sandbox workspace-write --skip-git-repo-check -`
// with the prompt on stdin.
//
// Policy: Codex has no flag that loads an extra execpolicy file; it loads
// every *.rules file under the rules/ folder of each config layer
// ($CODEX_HOME/rules, /etc/codex/rules, trusted <repo>/.codex/rules). When
// Invocation.DenyBash is set, Command therefore builds a per-iteration
// CODEX_HOME in <ScratchDir>/codex-home that mirrors the user's real one
// entry by entry with symlinks (auth.json, config.toml, sessions, ... so
// logins, token refreshes and session files still reach the real home)
// and whose rules/ folder holds links to the user's own rule files plus
// ralphd.rules, one `prefix_rule(pattern=[...], decision="forbidden")` per
// denied prefix (without a justification, which older Codex releases do
// not accept; the guard explains a refusal in detail). The end-to-end
// suite checks it against Codex 0.169.0, which refuses such a command with
// "rejected: policy forbids commands starting with `bd dep remove`" as the
// tool's output. Files Codex creates new at the top of its home during the
// run stay in the scratch copy. The agent also gets TMPDIR=<ScratchDir>/
// codex-tmp: Codex will not install its sandbox helper in a CODEX_HOME
// under the temporary directory. The bd guard on PATH enforces the same
// policy regardless.
//
// Usage: Codex reports input tokens including cached ones; InputTokens is
// the uncached part (as for Claude) and CacheReadTokens the cached part.
// Codex reports no cost, so CostUSD stays nil. Turns counts completed
// turns.
type Codex struct {
	// Bin is the executable; "codex" when empty.
	Bin string
	// Home is the user's CODEX_HOME that the per-iteration home mirrors;
	// $CODEX_HOME, else ~/.codex, when empty.
	Home string
	// Sandbox is the --sandbox mode; DefaultCodexSandbox when empty.
	Sandbox string
	// Now is the clock used for reset times; time.Now when nil.
	Now func() time.Time
	// TransientBackoff overrides DefaultTransientBackoff when > 0.
	TransientBackoff time.Duration
}

// Name returns "codex".
func (c Codex) Name() string { return "codex" }

// Binary returns the executable Codex needs on PATH.
func (c Codex) Binary() string {
	if c.Bin != "" {
		return c.Bin
	}
	return "codex"
}

// InstallHint says how to install the Codex CLI.
func (c Codex) InstallHint() string {
	return "install the Codex CLI with `npm install -g @openai/codex`, " +
		"then log in with `codex login` (or set CODEX_API_KEY)"
}

// VersionArgs returns the arguments that make codex print its version.
func (c Codex) VersionArgs() []string { return []string{"--version"} }

// Verified pins the Codex release the end-to-end suite runs.
func (c Codex) Verified() Verification {
	return Verification{Version: "0.169.0", Package: "@openai/codex"}
}

// Hosts returns OpenAI's API host, or the host of OPENAI_BASE_URL, and
// chatgpt.com, which Codex logged in with a ChatGPT account talks to.
func (c Codex) Hosts(getenv func(string) string) []string {
	return []string{apiHost(getenv, "OPENAI_BASE_URL", "api.openai.com"), "chatgpt.com"}
}

// Credentials finds an API key in the environment or the login in
// $CODEX_HOME/auth.json (~/.codex when unset).
func (c Codex) Credentials(h Home) Credentials {
	codexHome := h.env("CODEX_HOME")
	if codexHome == "" {
		codexHome = filepath.Join(h.Dir, ".codex")
	}
	return found(h.credEnv("OPENAI_API_KEY", "CODEX_API_KEY"), credFile(filepath.Join(codexHome, "auth.json")))
}

// Writable returns $CODEX_HOME when absolute, else ~/.codex.
func (c Codex) Writable(h Home) (dirs, files []string) {
	if v := h.absEnv("CODEX_HOME"); v != "" {
		return []string{v}, nil
	}
	return []string{h.in(".codex")}, nil
}

// Guarded returns Codex's configuration in its home ($CODEX_HOME, else
// ~/.codex): config.toml (MCP servers, the notify command, providers),
// its execpolicy rules, global instructions, custom prompts and skills.
func (c Codex) Guarded(h Home) Guarded {
	home := h.absEnv("CODEX_HOME")
	if home == "" {
		home = h.in(".codex")
	}
	return Guarded{Paths: guardedIn([]string{home},
		"config.toml", "config.json", "managed_config.toml", "rules", "AGENTS.md", "AGENTS.override.md",
		"prompts", "skills", "hooks.json", ".env"),
		ProjectDirs: []string{".codex"}}
}

// ScrubEnv lists what Codex sets inside its sandbox: a nested codex would
// believe it is sandboxed already.
func (c Codex) ScrubEnv() []string {
	return []string{"CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED"}
}

// Command builds the codex command line; the prompt goes on stdin ("-").
// With inv.DenyBash it prepares the per-iteration CODEX_HOME described on
// Codex and points CODEX_HOME at it; that needs inv.ScratchDir.
func (c Codex) Command(inv Invocation) (Spec, error) {
	sandbox := c.Sandbox
	switch {
	case sandbox != "":
	case inv.Sandboxed:
		sandbox = "danger-full-access"
	default:
		sandbox = DefaultCodexSandbox
	}
	argv := []string{c.Binary(), "exec", "--json", "--sandbox", sandbox, "--skip-git-repo-check"}
	if sandbox == "workspace-write" {
		// Codex's sandbox refuses connect() without network access, and
		// the bd on the agent's PATH reaches ralphd over a unix socket.
		argv = append(argv, "-c", "sandbox_workspace_write.network_access=true")
	}
	if inv.Model != "" {
		argv = append(argv, "--model", inv.Model)
	}
	if inv.Resume != nil {
		root := c.realHome()
		if root == "" {
			return Spec{}, errors.New("resume codex session: no CODEX_HOME nor home dir to put it back in")
		}
		if err := placeSession(root, *inv.Resume); err != nil {
			return Spec{}, fmt.Errorf("resume codex session: %w", err)
		}
		argv = append(argv, "resume", inv.Resume.ID)
	}
	argv = append(argv, "-")
	env := ralphEnv(inv)
	rules, err := codexRules(inv.Mode, inv.DenyBash, inv.DenyWhy)
	if err != nil {
		return Spec{}, err
	}
	if rules != nil {
		if inv.ScratchDir == "" {
			return Spec{}, errors.New("codex rules: the invocation has no scratch directory for the per-iteration CODEX_HOME")
		}
		home, err := codexOverlay(inv.ScratchDir, c.realHome(), rules)
		if err != nil {
			return Spec{}, fmt.Errorf("codex rules: %w", err)
		}
		// Codex (0.169.0) will not put its sandbox helper
		// (codex-linux-sandbox, linked into CODEX_HOME/tmp) in a
		// CODEX_HOME under the temporary directory, and without it every
		// sandboxed command fails ("bwrap: execvp codex-linux-sandbox").
		// The scratch dir is in the temporary directory, so the agent
		// gets a TMPDIR of its own beside the overlay instead.
		tmp := filepath.Join(filepath.Dir(home), CodexTmpDir)
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			return Spec{}, fmt.Errorf("codex rules: %w", err)
		}
		env = append(env, "CODEX_HOME="+home, "TMPDIR="+tmp)
	}
	return Spec{Argv: argv, Env: env, Stdin: inv.Prompt}, nil
}

// realHome is the CODEX_HOME to mirror, or "" when none can be found.
func (c Codex) realHome() string {
	if c.Home != "" {
		return c.Home
	}
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".codex")
	}
	return ""
}

// codexRules renders the execpolicy rules forbidding the prefixes; nil
// when there are none. A prefix word that a prefix rule cannot express
// literally (a glob, a control character) is an error, not a silently
// dropped rule.
func codexRules(mode string, prefixes []string, why map[string]string) ([]byte, error) {
	prefixes = denyPrefixes(prefixes)
	if len(prefixes) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("# Written by ralphd for one iteration: the commands its separation of powers\n" +
		"# refuses in this mode. ralphd's bd guard enforces the same policy.\n")
	for _, p := range prefixes {
		words := strings.Fields(p)
		quoted := make([]string, len(words))
		for i, w := range words {
			if strings.ContainsAny(w, "*?[") {
				return nil, fmt.Errorf("codex rule %q: a glob cannot be expressed in an execpolicy prefix rule", p)
			}
			q, err := quoteRule(w)
			if err != nil {
				return nil, fmt.Errorf("codex rule %q: %w", p, err)
			}
			quoted[i] = q
		}
		fmt.Fprintf(&b, "\n# %s\nprefix_rule(\n    pattern = [%s],\n    decision = \"forbidden\",\n)\n",
			denyMessage(mode, p, why), strings.Join(quoted, ", "))
	}
	return []byte(b.String()), nil
}

// codexOverlay builds <scratch>/codex-home: a symlink to every entry of
// the real home except rules/, and a rules/ folder with links to the real
// rule files plus ralphd's. It returns the overlay's path.
func codexOverlay(scratch, real string, rules []byte) (string, error) {
	home, err := filepath.Abs(filepath.Join(scratch, CodexHomeDir))
	if err != nil {
		return "", fmt.Errorf("codex home: %w", err)
	}
	rulesDir := filepath.Join(home, "rules")
	if err := os.MkdirAll(rulesDir, 0o700); err != nil {
		return "", fmt.Errorf("make %s: %w", rulesDir, err)
	}
	if real != "" {
		if abs, err := filepath.Abs(real); err == nil {
			real = abs
		}
	}
	if real != "" && filepath.Clean(real) != home {
		// Sessions go to the real CODEX_HOME, never into the overlay,
		// which goes with the iteration: ralphd saves and resumes them
		// from there (SaveSession), also after a crash.
		if err := os.MkdirAll(filepath.Join(real, codexSessions), 0o700); err != nil {
			return "", fmt.Errorf("make %s: %w", filepath.Join(real, codexSessions), err)
		}
		if err := linkEntries(real, home, "rules"); err != nil {
			return "", err
		}
		if err := linkEntries(filepath.Join(real, "rules"), rulesDir, CodexRulesFile); err != nil {
			return "", err
		}
	}
	if _, err := writeScratch(rulesDir, CodexRulesFile, rules); err != nil {
		return "", err
	}
	return home, nil
}

// linkEntries symlinks every entry of src (but skip) into dst. A missing
// src is not an error; existing links are kept.
func linkEntries(src, dst, skip string) error {
	entries, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	for _, e := range entries {
		if e.Name() == skip {
			continue
		}
		err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("link %s: %w", e.Name(), err)
		}
	}
	return nil
}

// codexSessions is the dir under CODEX_HOME where Codex keeps its
// sessions, as sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl.
const codexSessions = "sessions"

// SaveSession reads back the rollout file Codex keeps of session (thread)
// id under sessions/ in CODEX_HOME: all that `codex exec resume <id>`
// needs (Codex 0.169.0 finds it by its name when its state database does
// not know the thread). Two rollouts of one id are an error.
func (c Codex) SaveSession(inv Invocation, id string) (Session, error) {
	if !validUUID(id) {
		return Session{}, fmt.Errorf("codex session id %q is not a UUID", id)
	}
	root := c.realHome()
	if root == "" && inv.ScratchDir != "" {
		root = filepath.Join(inv.ScratchDir, CodexHomeDir)
	}
	if root == "" {
		return Session{}, fmt.Errorf("codex session %s: no CODEX_HOME nor home dir", id)
	}
	d, err := atomicfile.OpenDir(root)
	if err != nil {
		return Session{}, fmt.Errorf("codex session %s: %w", id, err)
	}
	defer d.Close()
	var found []string
	// sessions/YYYY/MM/DD: three levels of dirs, never through a link.
	dirs := []string{codexSessions}
	for depth := 0; depth < 3; depth++ {
		var next []string
		for _, dir := range dirs {
			ents, err := d.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if e.IsDir() {
					next = append(next, dir+"/"+e.Name())
				}
			}
		}
		dirs = next
	}
	for _, dir := range dirs {
		names, err := findIn(root, dir, id, ".jsonl")
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, "rollout-") && strings.HasSuffix(n, "-"+id+".jsonl") {
				found = append(found, dir+"/"+n)
			}
		}
	}
	if len(found) != 1 {
		return Session{}, fmt.Errorf("codex session %s: %d rollouts under %s/%s, want one", id, len(found), root, codexSessions)
	}
	return readSession(root, found[0], id)
}

// NewParser returns a parser for `codex exec --json` output.
func (c Codex) NewParser() Parser {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	backoff := c.TransientBackoff
	if backoff <= 0 {
		backoff = DefaultTransientBackoff
	}
	return &codexParser{now: now, backoff: backoff}
}

// codexTexts words Codex's verdicts.
var codexTexts = providerTexts{label: "Codex", login: "log in with `codex login`, or set CODEX_API_KEY", pkg: "@openai/codex"}

// reCodexNotice matches top-level error events that are progress notices
// of a retry, not failures ("Reconnecting... 1/5").
var reCodexNotice = text.LazyRegexp(`(?i)^\s*re-?connecting|retrying`)

// codexParser parses `codex exec --json` lines (exec_events.rs: ThreadEvent
// and ThreadItem; older builds' item_type/assistant_message too).
type codexParser struct {
	now     func() time.Time
	backoff time.Duration

	sessionID string
	tools     toolTracker
	results   map[string]struct{} // items whose result was reported
	lastText  string              // the last agent_message
	usage     Usage
	turns     int

	completed bool   // a turn completed
	failure   string // the failure after the last completed turn, if any
}

// Line parses one line. Lines that are not JSON objects of a known type
// yield no events.
func (p *codexParser) Line(line []byte) []Event {
	if !text.ValidJSON(line) {
		return nil
	}
	v := gjson.ParseBytes(line)
	if !v.IsObject() {
		return nil
	}
	switch v.Get("type").String() {
	case "thread.started":
		if id := v.Get("thread_id").String(); id != "" {
			p.sessionID = id
		}
		return []Event{{Kind: EventInit, SessionID: p.sessionID}}
	case "turn.completed":
		u := v.Get("usage")
		in, cached := u.Get("input_tokens").Int(), u.Get("cached_input_tokens").Int()
		p.usage = p.usage.Add(Usage{
			InputTokens:     max(in-cached, 0),
			OutputTokens:    u.Get("output_tokens").Int(),
			CacheReadTokens: cached,
		})
		p.turns++
		p.completed = true
		p.failure = ""
		return []Event{{Kind: EventResult, SessionID: p.sessionID, Text: p.lastText}}
	case "turn.failed":
		msg := v.Get("error.message").String()
		if msg == "" {
			msg = "turn failed"
		}
		p.failure = msg
		return []Event{{Kind: EventError, SessionID: p.sessionID, Text: msg, IsError: true}}
	case "error":
		msg := v.Get("message").String()
		if reCodexNotice.MatchString(msg) {
			return []Event{{Kind: EventError, SessionID: p.sessionID, Text: msg}}
		}
		if msg == "" {
			msg = "error"
		}
		p.failure = msg
		return []Event{{Kind: EventError, SessionID: p.sessionID, Text: msg, IsError: true}}
	case "item.started", "item.updated":
		return p.item(v.Get("item"), false)
	case "item.completed":
		return p.item(v.Get("item"), true)
	}
	return nil
}

// item handles one ThreadItem.
func (p *codexParser) item(it gjson.Result, completed bool) []Event {
	if !it.IsObject() {
		return nil
	}
	id := it.Get("id").String()
	typ := it.Get("type").String()
	if typ == "" {
		typ = it.Get("item_type").String()
	}
	switch typ {
	case "agent_message", "assistant_message":
		if !completed {
			return nil
		}
		p.lastText = it.Get("text").String()
		return []Event{{Kind: EventText, SessionID: p.sessionID, Text: p.lastText}}
	case "error":
		return []Event{{Kind: EventError, SessionID: p.sessionID, Text: it.Get("message").String()}}
	case "command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call":
	default:
		return nil
	}
	var cmd string
	if typ == "command_execution" {
		if c := it.Get("command"); c.Type == gjson.String {
			cmd = c.String()
		} else if c.IsArray() {
			var words []string
			for _, w := range c.Array() {
				words = append(words, w.String())
			}
			cmd = strings.Join(words, " ")
		}
	}
	tool := typ
	if typ == "mcp_tool_call" {
		tool = joinNonEmpty(".", it.Get("server").String(), it.Get("tool").String())
		if tool == "" {
			tool = typ
		}
	}
	var evs []Event
	if p.tools.first(id, cmd) {
		evs = append(evs, Event{Kind: EventToolCall, SessionID: p.sessionID, Tool: tool, ToolID: id, Command: cmd})
	}
	status := it.Get("status").String()
	if status == "declined" {
		p.tools.deny(Denial{Tool: typ, ToolID: id, Command: cmd})
	}
	if !completed && status != "declined" && status != "failed" {
		return evs
	}
	if id != "" {
		if _, dup := p.results[id]; dup {
			return evs
		}
		if p.results == nil {
			p.results = make(map[string]struct{})
		}
		p.results[id] = struct{}{}
	}
	exit := it.Get("exit_code")
	isErr := status == "failed" || status == "declined" || (exit.Type == gjson.Number && exit.Int() != 0)
	text := it.Get("aggregated_output").String()
	if text == "" {
		text = it.Get("error.message").String()
	}
	return append(evs, Event{Kind: EventToolResult, SessionID: p.sessionID, Tool: tool, ToolID: id, Text: text, IsError: isErr})
}

// Finish classifies the run. Codex exits 1 on every failure, so the
// stream's last failure message decides: a failure after the last
// completed turn is classified by its text (usage limit, credentials,
// model, server error), else it is the agent's error; a completed turn
// without a later failure is ok; anything else crashed (stderr is
// searched for the same texts first).
func (p *codexParser) Finish(exitCode int, stderrTail string) Outcome {
	out := Outcome{
		ResultText: p.lastText,
		Usage:      p.usage,
		Turns:      p.turns,
		SessionID:  p.sessionID,
		Commands:   p.tools.commands,
		ToolCalls:  p.tools.calls,
		ExitCode:   exitCode,
		Denials:    p.tools.denials,
	}
	now := p.now()
	switch {
	case p.failure != "":
		if v, ok := codexTexts.verdict(classifyText(p.failure), p.failure, now, p.backoff); ok {
			v.apply(&out)
			return out
		}
		out.Status = StatusAgentError
		out.Reason = "codex turn failed: " + firstText(p.failure)
	case p.completed:
		out.Status, out.Reason = StatusOK, "finished"
	default:
		if v, ok := codexTexts.usageVerdict(stderrTail); ok && p.sessionID == "" {
			v.apply(&out)
			return out
		}
		if v, ok := codexTexts.verdict(classifyText(stderrTail), stderrTail, now, p.backoff); ok {
			v.apply(&out)
			return out
		}
		out.Status = StatusCrashed
		out.Reason = crashReason(exitCode, stderrTail)
	}
	return out
}

// NewLogParser returns a parser of `codex exec --json` output for the run
// log.
func (c Codex) NewLogParser() LogParser { return codexLog{} }

// codexLog reads `codex exec --json` lines for the run log.
type codexLog struct{}

// Log parses one line. A top-level error event counts as Codex's stream
// whatever else writes it.
func (codexLog) Log(line []byte) ([]Event, bool) {
	v, ok := logObject(line)
	if !ok {
		return nil, false
	}
	typ := v.Get("type").String()
	switch typ {
	case "thread.started":
		return []Event{{Kind: EventInit, SessionID: v.Get("thread_id").String(), Text: "codex session " + v.Get("thread_id").String()}}, true
	case "turn.completed":
		u := v.Get("usage")
		in, out := u.Get("input_tokens").Int(), u.Get("output_tokens").Int()
		return []Event{{Kind: EventUsage, Text: "turn done: " + tokenWords(in, out), Tokens: &Tokens{InputTokens: in, OutputTokens: out}}}, true
	case "turn.failed":
		return []Event{{Kind: EventError, IsError: true, Text: "turn failed: " + v.Get("error.message").String()}}, true
	case "item.started", "item.updated", "item.completed":
		return codexItemLog(typ, v.Get("item")), true
	case "turn.started":
		return []Event{{Kind: EventNote, Verbose: true, Text: typ}}, true
	}
	if ev, ok := errorLineLog(v); ok {
		return []Event{ev}, true
	}
	return nil, false
}

// codexItemLog reads one thread item: a command when it starts and when
// it ends, anything else when it is complete.
func codexItemLog(typ string, it gjson.Result) []Event {
	completed := typ == "item.completed"
	id := it.Get("id").String()
	switch kind := it.Get("type").String(); kind {
	case "command_execution":
		switch typ {
		case "item.started":
			return []Event{{Kind: EventToolCall, Tool: kind, ToolID: id, Shell: true, Command: unwrapShell(it.Get("command").String())}}
		case "item.completed":
			ev := shellResultEvent(id, it.Get("exit_code"), it.Get("aggregated_output").String())
			ev.Tool = kind
			ev.Denied = ev.Denied || it.Get("status").String() == "declined"
			return []Event{ev}
		}
	case "agent_message":
		if completed {
			return []Event{{Kind: EventText, Text: it.Get("text").String()}}
		}
	case "reasoning":
		if completed {
			return []Event{{Kind: EventThinking, Text: it.Get("text").String()}}
		}
	case "error":
		if completed {
			return []Event{{Kind: EventError, Text: it.Get("message").String()}}
		}
	default:
		if completed {
			return []Event{{Kind: EventToolCall, Tool: kind, ToolID: id}}
		}
	}
	return nil
}

// unwrapShell shows `/bin/bash -c '<cmd>'` (how Codex reports a command)
// as <cmd>, when the quoting is the simple single-quoted kind.
func unwrapShell(cmd string) string {
	for _, sh := range []string{"/bin/bash -lc '", "/bin/bash -c '", "bash -lc '", "bash -c '", "/bin/sh -c '", "sh -c '"} {
		if rest, ok := strings.CutPrefix(cmd, sh); ok && strings.HasSuffix(rest, "'") {
			inner := strings.TrimSuffix(rest, "'")
			if !strings.Contains(inner, "'") {
				return inner
			}
			return strings.ReplaceAll(inner, `'"'"'`, "'")
		}
	}
	return cmd
}

package agent

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// GeminiPolicyFile is the name of the policy file the Gemini backend
// writes into Invocation.ScratchDir.
const GeminiPolicyFile = "gemini-policy.toml"

// geminiPolicyPriority is the priority of ralphd's deny rules within the
// user tier (0-999): above the user's own rules, so a user allow rule does
// not override them.
const geminiPolicyPriority = 999

// Gemini CLI exit codes (docs/cli/headless.md, core/utils/errors.ts).
const (
	geminiExitAuth        = 41
	geminiExitInput       = 42
	geminiExitSandbox     = 44
	geminiExitConfig      = 52
	geminiExitTurnLimit   = 53
	geminiExitToolError   = 54
	geminiExitUntrusted   = 55
	geminiExitInterrupted = 130
)

// Gemini is the backend for Gemini CLI, run headless as
// `gemini --output-format stream-json --approval-mode yolo` with the
// prompt on stdin (stdin that is not a terminal makes Gemini CLI
// non-interactive; a -p text would only be appended to it, and stdin has
// no argument-length limit).
//
// Policy: Invocation.DenyBash is compiled into a policy-engine TOML file,
// one `[[rule]] toolName = "run_shell_command", commandPrefix = "bd
// delete", decision = "deny"` per prefix at priority 999, written to
// <ScratchDir>/gemini-policy.toml and loaded with --policy (the user tier,
// which outranks the built-in yolo allow rules). Gemini's BeforeTool hook
// is not used: hooks are configured only in settings files, and ralphd's
// hook expects Claude's PreToolUse event. The bd guard on PATH enforces
// the same policy regardless.
//
// Usage: InputTokens is the uncached input (stats.input), CacheReadTokens
// the cached part; Gemini reports no cost (CostUSD stays nil) and no turn
// count. The final result text is the assistant's text after its last
// tool call (the user prompt Gemini echoes is never part of it).
type Gemini struct {
	// Bin is the executable; "gemini" when empty.
	Bin string
	// Now is the clock used for reset times; time.Now when nil.
	Now func() time.Time
	// TransientBackoff overrides DefaultTransientBackoff when > 0.
	TransientBackoff time.Duration
}

// Name returns "gemini".
func (g Gemini) Name() string { return "gemini" }

// Binary returns the executable Gemini CLI needs on PATH.
func (g Gemini) Binary() string {
	if g.Bin != "" {
		return g.Bin
	}
	return "gemini"
}

// InstallHint says how to install Gemini CLI.
func (g Gemini) InstallHint() string {
	return "install Gemini CLI with `npm install -g @google/gemini-cli`, " +
		"then log in by running `gemini` once (or set GEMINI_API_KEY)"
}

// VersionArgs returns the arguments that make gemini print its version.
func (g Gemini) VersionArgs() []string { return []string{"--version"} }

// Verified pins the Gemini CLI release the end-to-end suite runs.
func (g Gemini) Verified() Verification {
	return Verification{Version: "0.61.0", Package: "@google/gemini-cli"}
}

// Hosts returns the Gemini API host, or the host of
// GOOGLE_GEMINI_BASE_URL, and the Code Assist host Gemini CLI logged in
// with a Google account talks to.
func (g Gemini) Hosts(getenv func(string) string) []string {
	return []string{apiHost(getenv, "GOOGLE_GEMINI_BASE_URL", "generativelanguage.googleapis.com"), "cloudcode-pa.googleapis.com"}
}

// Credentials finds an API key (or the Vertex AI switch) in the
// environment, or the Google login in ~/.gemini/oauth_creds.json.
func (g Gemini) Credentials(h Home) Credentials {
	return found(h.credEnv("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"),
		credFile(filepath.Join(h.Dir, ".gemini", "oauth_creds.json")))
}

// Writable returns ~/.gemini.
func (g Gemini) Writable(h Home) (dirs, files []string) {
	return []string{h.in(".gemini")}, nil
}

// Guarded returns Gemini CLI's settings (MCP servers, hooks, tool
// discovery commands), the .env it loads, trusted folders, global
// instructions, extensions, custom commands, policies, skills and agents
// in ~/.gemini.
func (g Gemini) Guarded(h Home) Guarded {
	return Guarded{Paths: guardedIn([]string{h.in(".gemini")},
		"settings.json", ".env", "trustedFolders.json", "GEMINI.md", "extensions", "commands", "policies",
		"skills", "agents", "hooks"),
		Private:     guardedIn([]string{h.in(".gemini")}, "history"),
		ProjectDirs: []string{".gemini"}}
}

// ScrubEnv lists what Gemini CLI sets for its shell commands.
func (g Gemini) ScrubEnv() []string { return []string{"GEMINI_CLI"} }

// Command builds the gemini command line; the prompt goes on stdin. With
// inv.DenyBash it writes the policy file, which needs inv.ScratchDir.
func (g Gemini) Command(inv Invocation) (Spec, error) {
	argv := []string{g.Binary(), "--output-format", "stream-json", "--approval-mode", "yolo"}
	if inv.Model != "" {
		argv = append(argv, "--model", inv.Model)
	}
	policy, err := geminiPolicy(inv.Mode, inv.DenyBash, inv.DenyWhy)
	if err != nil {
		return Spec{}, err
	}
	if policy != nil {
		path, err := writeScratch(inv.ScratchDir, GeminiPolicyFile, policy)
		if err != nil {
			return Spec{}, fmt.Errorf("gemini policy: %w", err)
		}
		argv = append(argv, "--policy", path)
	}
	if inv.Resume != nil {
		path, err := geminiPlaceSession(inv.ScratchDir, *inv.Resume)
		if err != nil {
			return Spec{}, fmt.Errorf("resume gemini session: %w", err)
		}
		argv = append(argv, "--session-file", path)
	}
	return Spec{Argv: argv, Env: ralphEnv(inv), Stdin: inv.Prompt}, nil
}

// Resuming a Gemini CLI session.
//
// Gemini CLI records a session as one JSONL file,
// tmp/<project>/chats/session-<time>-<first 8 of id>.jsonl under its dir
// (~/.gemini, or $GEMINI_CLI_HOME/.gemini), whose first line holds the
// full sessionId; <project> is a short name Gemini picks for the work
// tree in its projects.json. `gemini --resume <id>` finds a session by
// reading every session-*.json(l) file in the chats dir of the project
// that projects.json names, following links, and takes the one with the
// latest lastUpdated among those that claim the id. Every step of that
// lookup is the agent's to steer: a file planted in chats/ that claims
// the id with a later lastUpdated, a link, or projects.json pointing the
// work tree at another project dir. So ralphd does not use it: it keeps
// the session file itself and hands its own copy to
// `gemini --session-file <path>`, which loads exactly that file, before
// the agent runs anything, and goes on with its conversation (under a new
// session id, in a new file of Gemini's own).

// geminiSessionFile is the name of the saved session in a Session, and of
// the copy ralphd writes into the scratch dir for --session-file. It
// holds the full id, as Session.Check asks.
func geminiSessionFile(id string) string { return "gemini-session-" + id + ".jsonl" }

// geminiDir is Gemini CLI's dir: $GEMINI_CLI_HOME/.gemini, or ~/.gemini.
func geminiDir(h Home) string {
	if v := h.absEnv("GEMINI_CLI_HOME"); v != "" {
		return filepath.Join(v, ".gemini")
	}
	return h.in(".gemini")
}

// SaveSession reads back the file Gemini CLI recorded of session id:
// the one tmp/*/chats/session-*-<first 8 of id>.jsonl under its dir whose
// first line says sessionId id, read never through a link. None or two
// are an error (no session is kept).
func (g Gemini) SaveSession(inv Invocation, id string) (Session, error) {
	if !validUUID(id) {
		return Session{}, fmt.Errorf("gemini session id %q is not a UUID", id)
	}
	root := geminiDir(inv.Home)
	if root == "" {
		return Session{}, fmt.Errorf("gemini session %s: no home dir", id)
	}
	d, err := atomicfile.OpenDir(root)
	if err != nil {
		return Session{}, fmt.Errorf("gemini session %s: %w", id, err)
	}
	defer d.Close()
	projects, err := d.ReadDir("tmp")
	if err != nil {
		return Session{}, fmt.Errorf("gemini session %s: %w", id, err)
	}
	short := strings.ToLower(id[:8])
	var found [][]byte
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		chats := "tmp/" + p.Name() + "/chats"
		names, err := findIn(root, chats, short, ".jsonl")
		if err != nil {
			continue
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "session-") || !strings.HasSuffix(n, "-"+short+".jsonl") {
				continue
			}
			data, err := d.ReadFile(chats+"/"+n, MaxSessionBytes)
			if err != nil {
				return Session{}, fmt.Errorf("gemini session %s: %w", id, err)
			}
			if geminiFileSession(data) == id {
				found = append(found, data)
			}
		}
	}
	if len(found) != 1 {
		return Session{}, fmt.Errorf("gemini session %s: %d session files under %s/tmp/*/chats, want one", id, len(found), root)
	}
	s := Session{ID: id, Files: []SessionFile{{Rel: geminiSessionFile(id), Data: found[0]}}}
	return s, s.Check()
}

// geminiFileSession returns the sessionId of a Gemini CLI session file's
// first line (its metadata record), or "".
func geminiFileSession(data []byte) string {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if !text.ValidJSON(first) {
		return ""
	}
	v := gjson.ParseBytes(first)
	if v.Get("kind").String() == "subagent" {
		return ""
	}
	return v.Get("sessionId").String()
}

// geminiPlaceSession writes ralphd's copy of s into the scratch dir, for
// --session-file, and returns its path.
func geminiPlaceSession(scratch string, s Session) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	if len(s.Files) != 1 || s.Files[0].Rel != geminiSessionFile(s.ID) {
		return "", fmt.Errorf("session %s is not a Gemini CLI session", s.ID)
	}
	return writeScratch(scratch, s.Files[0].Rel, s.Files[0].Data)
}

// geminiPolicy renders the policy TOML; nil when nothing is denied.
func geminiPolicy(mode string, prefixes []string, why map[string]string) ([]byte, error) {
	prefixes = denyPrefixes(prefixes)
	if len(prefixes) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("# Written by ralphd for one iteration: the commands its separation of powers\n" +
		"# refuses in this mode. ralphd's bd guard enforces the same policy.\n")
	for _, p := range prefixes {
		prefix, err := quoteRule(p)
		if err != nil {
			return nil, fmt.Errorf("gemini rule %q: %w", p, err)
		}
		msg, err := quoteRule(denyMessage(mode, p, why))
		if err != nil {
			return nil, fmt.Errorf("gemini rule %q: %w", p, err)
		}
		fmt.Fprintf(&b, "\n[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = %s\ndecision = \"deny\"\npriority = %d\ndenyMessage = %s\n",
			prefix, geminiPolicyPriority, msg)
	}
	return []byte(b.String()), nil
}

// NewParser returns a parser for Gemini CLI's stream-json output.
func (g Gemini) NewParser() Parser {
	now := g.Now
	if now == nil {
		now = time.Now
	}
	backoff := g.TransientBackoff
	if backoff <= 0 {
		backoff = DefaultTransientBackoff
	}
	return &geminiParser{now: now, backoff: backoff}
}

// geminiTexts words Gemini's verdicts.
var geminiTexts = providerTexts{label: "Gemini CLI",
	login: "log in by running `gemini` once, or set GEMINI_API_KEY (GOOGLE_API_KEY for Vertex AI)", pkg: "@google/gemini-cli"}

// reGeminiTurnLimit matches the notice of an exhausted turn budget.
var reGeminiTurnLimit = text.LazyRegexp(`(?i)max(?:imum)? (?:session )?turns|turn limit`)

// reGeminiDenied matches a tool error of the policy engine.
var reGeminiDenied = text.LazyRegexp(`(?i)polic|denied|rejected|not allowed`)

// geminiParser parses Gemini CLI's stream-json events (core/output/types.ts).
type geminiParser struct {
	now     func() time.Time
	backoff time.Duration

	sessionID string
	tools     toolTracker
	calls     map[string]Denial // tool id -> the call, for denials
	text      strings.Builder   // the assistant text of the current turn
	afterTool bool              // a tool call came after the text in text
	turnLimit bool              // an error event said the turn limit was hit
	errText   string            // the last error-severity event

	haveResult bool
	status     string
	errType    string
	errMsg     string
	usage      Usage
	statCalls  int
}

// Line parses one line.
func (p *geminiParser) Line(line []byte) []Event {
	if !text.ValidJSON(line) {
		return nil
	}
	v := gjson.ParseBytes(line)
	if !v.IsObject() {
		return nil
	}
	switch v.Get("type").String() {
	case "init":
		if sid := v.Get("session_id").String(); sid != "" {
			p.sessionID = sid
		}
		return []Event{{Kind: EventInit, SessionID: p.sessionID}}
	case "message":
		if v.Get("role").String() != "assistant" {
			return nil // the echoed prompt
		}
		t := v.Get("content").String()
		if p.afterTool || !v.Get("delta").Bool() {
			p.text.Reset()
			p.afterTool = false
		}
		p.text.WriteString(t)
		return []Event{{Kind: EventText, SessionID: p.sessionID, Text: t}}
	case "tool_use":
		return p.toolUse(v)
	case "tool_result":
		return p.toolResult(v)
	case "error":
		msg := v.Get("message").String()
		isErr := v.Get("severity").String() == "error"
		if isErr {
			p.errText = msg
		}
		if reGeminiTurnLimit.MatchString(msg) {
			p.turnLimit = true
		}
		return []Event{{Kind: EventError, SessionID: p.sessionID, Text: msg, IsError: isErr}}
	case "result":
		return p.result(v)
	}
	return nil
}

func (p *geminiParser) toolUse(v gjson.Result) []Event {
	name := v.Get("tool_name").String()
	id := v.Get("tool_id").String()
	var cmd string
	if name == "run_shell_command" {
		if c := v.Get("parameters.command"); c.Type == gjson.String {
			cmd = c.String()
		}
	}
	p.afterTool = true
	if !p.tools.first(id, cmd) {
		return nil
	}
	if id != "" {
		if p.calls == nil {
			p.calls = make(map[string]Denial)
		}
		p.calls[id] = Denial{Tool: name, ToolID: id, Command: cmd}
	}
	return []Event{{Kind: EventToolCall, SessionID: p.sessionID, Tool: name, ToolID: id, Command: cmd}}
}

func (p *geminiParser) toolResult(v gjson.Result) []Event {
	id := v.Get("tool_id").String()
	isErr := v.Get("status").String() == "error"
	text := v.Get("output").String()
	if isErr {
		e := v.Get("error")
		text = joinNonEmpty(": ", e.Get("type").String(), e.Get("message").String())
		if call, ok := p.calls[id]; ok && reGeminiDenied.MatchString(text) {
			p.tools.deny(call)
		}
	}
	return []Event{{Kind: EventToolResult, SessionID: p.sessionID, ToolID: id, Text: text, IsError: isErr}}
}

func (p *geminiParser) result(v gjson.Result) []Event {
	p.haveResult = true
	p.status = v.Get("status").String()
	p.errType = v.Get("error.type").String()
	p.errMsg = v.Get("error.message").String()
	st := v.Get("stats")
	in, cached := st.Get("input_tokens").Int(), st.Get("cached").Int()
	uncached := in - cached
	if x := st.Get("input"); x.Type == gjson.Number {
		uncached = x.Int()
	}
	p.usage = Usage{
		InputTokens:     max(uncached, 0),
		OutputTokens:    st.Get("output_tokens").Int(),
		CacheReadTokens: cached,
	}
	p.statCalls = int(st.Get("tool_calls").Int())
	isErr := p.status == "error"
	text := p.text.String()
	if isErr {
		text = joinNonEmpty(": ", p.errType, p.errMsg)
	}
	return []Event{{Kind: EventResult, SessionID: p.sessionID, Text: text, IsError: isErr}}
}

// Finish classifies the run from the result event (its status and
// error.type), then Gemini's documented exit codes, then the error texts.
// A quota error is StatusRateLimited whether Gemini calls it retryable
// (per-minute) or terminal (daily): both end when the quota resets.
func (p *geminiParser) Finish(exitCode int, stderrTail string) Outcome {
	out := Outcome{
		ResultText: p.text.String(),
		Usage:      p.usage,
		SessionID:  p.sessionID,
		Commands:   p.tools.commands,
		ToolCalls:  max(p.tools.calls, p.statCalls),
		ExitCode:   exitCode,
		Denials:    p.tools.denials,
	}
	p.verdict(exitCode, stderrTail).apply(&out)
	return out
}

func (p *geminiParser) verdict(exitCode int, stderrTail string) verdict {
	now := p.now()
	if p.haveResult && p.status == "success" {
		if exitCode == geminiExitTurnLimit || p.turnLimit {
			return verdict{status: StatusAgentError, reason: "Gemini CLI reached its turn limit: " + firstText(p.errText)}
		}
		return verdict{status: StatusOK, reason: "finished"}
	}
	msg := joinNonEmpty(": ", p.errType, p.errMsg)
	if !p.haveResult {
		if v, ok := geminiTexts.usageVerdict(stderrTail); ok && p.sessionID == "" {
			return v
		}
		msg = joinNonEmpty("\n", p.errText, stderrTail)
	}
	switch t := p.errType; {
	case t == "RetryableQuotaError", t == "TerminalQuotaError":
		reset, rounded, _ := resetFromText(p.errMsg, now)
		label := "per-minute quota"
		if t == "TerminalQuotaError" {
			label = "quota exhausted"
		}
		return verdict{status: StatusRateLimited, reason: "rate limited (" + label + "): " + firstText(p.errMsg), resetAt: reset, rounded: rounded}
	case strings.Contains(t, "Authentication"), exitCode == geminiExitAuth:
		return verdict{status: StatusFatal, recoverable: true, reason: "Gemini CLI cannot authenticate: " + firstText(msg) + "; " + geminiTexts.login}
	case strings.Contains(t, "UntrustedWorkspace"), exitCode == geminiExitUntrusted:
		return verdict{status: StatusFatal, reason: "Gemini CLI does not trust the project folder: " + firstText(msg) +
			"; trust it once in an interactive `gemini` session"}
	case strings.Contains(t, "Config"), strings.Contains(t, "Sandbox"), strings.Contains(t, "Input"),
		exitCode == geminiExitConfig, exitCode == geminiExitSandbox, exitCode == geminiExitInput:
		return verdict{status: StatusFatal, reason: fmt.Sprintf("Gemini CLI refused to run (%s): %s; check its settings and ralphd's agent options",
			joinNonEmpty(", ", t, exitDescription(exitCode)), firstText(msg))}
	case strings.Contains(t, "TurnLimit"), exitCode == geminiExitTurnLimit:
		return verdict{status: StatusAgentError, reason: "Gemini CLI reached its turn limit: " + firstText(msg)}
	case strings.Contains(t, "ToolExecution"), exitCode == geminiExitToolError:
		return verdict{status: StatusAgentError, reason: "Gemini CLI tool execution failed: " + firstText(msg)}
	case strings.Contains(t, "Cancel"), exitCode == geminiExitInterrupted:
		return verdict{status: StatusCrashed, reason: "Gemini CLI was cancelled: " + firstText(msg)}
	}
	if v, ok := geminiTexts.verdict(classifyText(msg), msg, now, p.backoff); ok {
		return v
	}
	if p.haveResult {
		return verdict{status: StatusAgentError, reason: "Gemini CLI error: " + firstText(msg)}
	}
	return verdict{status: StatusCrashed, reason: crashReason(exitCode, stderrTail)}
}

// NewLogParser returns a parser of Gemini CLI's stream-json for the run
// log.
func (g Gemini) NewLogParser() LogParser { return geminiLog{} }

// geminiLog reads Gemini CLI's stream-json events for the run log.
type geminiLog struct{}

// Log parses one line: a timestamped event of a known type.
func (geminiLog) Log(line []byte) ([]Event, bool) {
	v, ok := logObject(line)
	if !ok {
		return nil, false
	}
	if ev, ok := errorLineLog(v); ok {
		return []Event{ev}, true
	}
	if v.Get("timestamp").Type != gjson.String {
		return nil, false
	}
	switch v.Get("type").String() {
	case "init":
		sid := v.Get("session_id").String()
		return []Event{{Kind: EventInit, SessionID: sid, Text: "gemini session " + sid + " · model " + v.Get("model").String()}}, true
	case "message":
		if v.Get("role").String() != "assistant" {
			return []Event{{Kind: EventPrompt, Text: v.Get("content").String()}}, true
		}
		// Deltas arrive in pieces; each is shown as it came, on its own,
		// rather than guessing where the sentence ends.
		return []Event{{Kind: EventText, Text: v.Get("content").String()}}, true
	case "tool_use":
		name := v.Get("tool_name").String()
		return []Event{toolCallEvent(name, v.Get("tool_id").String(), name == "run_shell_command", v.Get("parameters"))}, true
	case "tool_result":
		id := v.Get("tool_id").String()
		if v.Get("status").String() == "error" {
			msg := firstNonEmpty(v.Get("error.message").String(), v.Get("output").String())
			return []Event{failedToolEvent(id, msg, strings.Contains(strings.ToLower(msg), "policy"))}, true
		}
		return []Event{shellResultEvent(id, gjson.Result{}, v.Get("output").String())}, true
	case "error":
		return []Event{{Kind: EventError, IsError: true, Text: v.Get("severity").String() + " " + v.Get("message").String()}}, true
	case "result":
		st := v.Get("stats")
		in, out := st.Get("input_tokens").Int(), st.Get("output_tokens").Int()
		ev := Event{Kind: EventUsage, Text: "result: " + v.Get("status").String() + " · " + tokenWords(in, out),
			Tokens: &Tokens{InputTokens: in, OutputTokens: out}}
		if e := v.Get("error.message").String(); e != "" {
			ev.IsError = true
			ev.Text += " · " + e
		}
		return []Event{ev}, true
	}
	return nil, false
}

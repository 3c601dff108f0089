package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// DefaultTransientBackoff is how long a Claude run that failed with a
// server-side error (HTTP 5xx, 529 overloaded) waits before the next try:
// such an Outcome is StatusRateLimited with Transient set and ResetAt this
// far after the run ended.
const DefaultTransientBackoff = 30 * time.Second

// ClaudeSettingsFile is the name of the settings file the Claude backend
// writes into Invocation.ScratchDir.
const ClaudeSettingsFile = "claude-settings.json"

// DefaultClaudeTools are the tools the Claude backend grants with
// --allowedTools. Running as root, Claude Code refuses
// --dangerously-skip-permissions, so every tool an unattended run needs is
// allowed explicitly; the deny rules from Invocation.DenyBash still win
// over these (Claude evaluates deny before allow).
func DefaultClaudeTools() []string {
	return []string{
		"Bash", "Read", "Edit", "MultiEdit", "Write", "Glob", "Grep", "LS",
		"NotebookEdit", "TodoWrite", "Task", "WebFetch", "WebSearch",
	}
}

// Claude is the backend for Claude Code (`claude -p --output-format
// stream-json --verbose`), the default agent.
type Claude struct {
	// Bin is the executable; "claude" when empty.
	Bin string
	// AllowedTools overrides DefaultClaudeTools when non-nil.
	AllowedTools []string
	// Now is the clock used for reset times; time.Now when nil.
	Now func() time.Time
	// TransientBackoff overrides DefaultTransientBackoff when > 0.
	TransientBackoff time.Duration
}

// Name returns "claude".
func (c Claude) Name() string { return "claude" }

// Binary returns the executable Claude needs on PATH.
func (c Claude) Binary() string {
	if c.Bin != "" {
		return c.Bin
	}
	return "claude"
}

// VersionArgs returns the arguments that make claude print its version.
func (c Claude) VersionArgs() []string { return []string{"--version"} }

// Verified pins the Claude Code release the end-to-end suite runs.
func (c Claude) Verified() Verification {
	return Verification{Version: "2.1.197", Package: "@anthropic-ai/claude-code"}
}

// Hosts returns Anthropic's API host, or the host of ANTHROPIC_BASE_URL.
func (c Claude) Hosts(getenv func(string) string) []string {
	return []string{apiHost(getenv, "ANTHROPIC_BASE_URL", "api.anthropic.com")}
}

// Credentials finds an API key or token in the environment, the login
// Claude Code keeps in its config dir ($CLAUDE_CONFIG_DIR or ~/.claude),
// or the account recorded in ~/.claude.json.
func (c Claude) Credentials(h Home) Credentials {
	cfgDir := h.env("CLAUDE_CONFIG_DIR")
	if cfgDir == "" {
		cfgDir = filepath.Join(h.Dir, ".claude")
	}
	acct := ""
	if b, err := os.ReadFile(filepath.Join(h.Dir, ".claude.json")); err == nil && strings.Contains(string(b), `"oauthAccount"`) {
		acct = "~/.claude.json"
	}
	return found(h.credEnv("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
		credFile(filepath.Join(cfgDir, ".credentials.json")), acct)
}

// Writable returns ~/.claude (and $CLAUDE_CONFIG_DIR). ~/.claude.json and
// its backup are copies (Guarded).
func (c Claude) Writable(h Home) (dirs, files []string) {
	return []string{h.in(".claude"), h.absEnv("CLAUDE_CONFIG_DIR")}, nil
}

// Guarded returns Claude Code's settings (hooks, MCP servers, permission
// rules), global instructions, plugins, hooks, custom commands, agents,
// skills and output styles in each config dir, and ~/.claude.json (with
// its backup), which holds its state and the MCP servers of `claude mcp
// add`, as copies. In a project: .claude/ (its settings, hooks, commands,
// agents) and .mcp.json.
func (c Claude) Guarded(h Home) Guarded {
	return Guarded{
		Paths: guardedIn([]string{h.in(".claude"), h.absEnv("CLAUDE_CONFIG_DIR")},
			"settings.json", "settings.local.json", "CLAUDE.md", "plugins", "hooks", "commands", "agents",
			"skills", "output-styles", ".mcp.json"),
		Copies:       nonEmpty([]string{h.in(".claude.json"), h.in(".claude.json.backup")}),
		Private:      guardedIn([]string{h.in(".claude"), h.absEnv("CLAUDE_CONFIG_DIR")}, "session-env"),
		ProjectDirs:  []string{".claude"},
		ProjectFiles: []string{".mcp.json"},
	}
}

// ScrubEnv lists what Claude Code sets for its commands: since 2.1.39 a
// claude started with CLAUDECODE set refuses to run ("cannot be launched
// inside another Claude Code session"), so ralphd started from inside
// Claude Code would fail; CLAUDE_CODE_SSE_PORT binds a claude to the
// parent's IDE connection; CLAUDE_AGENT_SDK_VERSION marks the process as
// started by the SDK.
func (c Claude) ScrubEnv() []string {
	return []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT", "CLAUDE_AGENT_SDK_VERSION"}
}

// InstallHint says how to install Claude Code.
func (c Claude) InstallHint() string {
	return "install Claude Code with `npm install -g @anthropic-ai/claude-code`, " +
		"then log in by running `claude` once (or set ANTHROPIC_API_KEY)"
}

// Command builds the claude command line. The prompt goes on stdin. When
// inv.HookArgv or inv.DenyBash is set it writes
// <ScratchDir>/claude-settings.json (a PreToolUse hook for Bash running
// HookArgv, and the allow and deny rules) and passes it with --settings;
// without a ScratchDir the same JSON is passed inline.
func (c Claude) Command(inv Invocation) (Spec, error) {
	allowed := c.AllowedTools
	if allowed == nil {
		allowed = DefaultClaudeTools()
	}
	deny, err := claudeDenyRules(inv.DenyBash)
	if err != nil {
		return Spec{}, err
	}
	argv := []string{c.Binary(), "-p", "--output-format", "stream-json", "--verbose"}
	if inv.Resume != nil {
		if err := placeSession(claudeDir(inv.Home), *inv.Resume); err != nil {
			return Spec{}, fmt.Errorf("resume claude session: %w", err)
		}
		argv = append(argv, "--resume", inv.Resume.ID)
	}
	if inv.Model != "" {
		argv = append(argv, "--model", inv.Model)
	}
	if len(inv.HookArgv) > 0 || len(deny) > 0 {
		settings, err := claudeSettings(inv.HookArgv, allowed, deny)
		if err != nil {
			return Spec{}, err
		}
		if inv.ScratchDir != "" {
			path := filepath.Join(inv.ScratchDir, ClaudeSettingsFile)
			if err := os.MkdirAll(inv.ScratchDir, 0o700); err != nil {
				return Spec{}, fmt.Errorf("write claude settings: %w", err)
			}
			if err := atomicfile.Write(path, settings, 0o600); err != nil {
				return Spec{}, fmt.Errorf("write claude settings: %w", err)
			}
			argv = append(argv, "--settings", path)
		} else {
			argv = append(argv, "--settings", string(settings))
		}
	}
	if inv.MaxBudgetUSD > 0 {
		argv = append(argv, "--max-budget-usd", strconv.FormatFloat(inv.MaxBudgetUSD, 'f', -1, 64))
	}
	// The tool lists are variadic options: the '=' form keeps each to one
	// argument, and nothing positional follows them (the prompt is on stdin).
	if len(deny) > 0 {
		argv = append(argv, "--disallowedTools="+strings.Join(deny, ","))
	}
	if len(allowed) > 0 {
		argv = append(argv, "--allowedTools="+strings.Join(allowed, ","))
	}
	return Spec{Argv: argv, Env: ralphEnv(inv), Stdin: inv.Prompt}, nil
}

// claudeDir is Claude Code's config dir: $CLAUDE_CONFIG_DIR, or ~/.claude.
func claudeDir(h Home) string {
	if v := h.absEnv("CLAUDE_CONFIG_DIR"); v != "" {
		return v
	}
	return h.in(".claude")
}

// claudeProject is the name of the dir under projects/ where Claude Code
// keeps the sessions run in dir: every character but an ASCII letter or
// digit becomes '-'.
func claudeProject(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// SaveSession reads back the transcript Claude Code keeps of session id,
// projects/<the work tree>/<id>.jsonl under its config dir: all that
// `claude -p --resume <id>` needs. When the work tree's dir is not where
// Claude Code put it (a long path, which it shortens), the one dir under
// projects/ that holds the session is used; two are an error.
func (c Claude) SaveSession(inv Invocation, id string) (Session, error) {
	if !validUUID(id) {
		return Session{}, fmt.Errorf("claude session id %q is not a UUID", id)
	}
	root := claudeDir(inv.Home)
	if root == "" {
		return Session{}, fmt.Errorf("claude session %s: no home dir", id)
	}
	name := id + ".jsonl"
	rel := "projects/" + claudeProject(inv.Dir) + "/" + name
	if s, err := readSession(root, rel, id); err == nil {
		return s, nil
	}
	d, err := atomicfile.OpenDir(root)
	if err != nil {
		return Session{}, fmt.Errorf("claude session %s: %w", id, err)
	}
	ents, err := d.ReadDir("projects")
	_ = d.Close()
	if err != nil {
		return Session{}, fmt.Errorf("claude session %s: %w", id, err)
	}
	var found []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if names, err := findIn(root, "projects/"+e.Name(), id, ".jsonl"); err == nil && slices.Contains(names, name) {
			found = append(found, "projects/"+e.Name()+"/"+name)
		}
	}
	if len(found) != 1 {
		return Session{}, fmt.Errorf("claude session %s: %d transcripts under %s/projects, want one", id, len(found), root)
	}
	return readSession(root, found[0], id)
}

// NewParser returns a Claude stream-json parser.
func (c Claude) NewParser() Parser {
	return newClaudeParser(c.Now, c.TransientBackoff)
}

// claudeDenyRules compiles shell command prefixes into Claude permission
// rules: "bd delete" becomes "Bash(bd delete:*)".
func claudeDenyRules(prefixes []string) ([]string, error) {
	var rules []string
	for _, p := range prefixes {
		p = strings.Join(strings.Fields(p), " ")
		if p == "" {
			continue
		}
		if strings.ContainsAny(p, "(),") {
			return nil, fmt.Errorf("claude deny rule %q: parentheses and commas cannot be expressed in a Claude permission rule", p)
		}
		rules = append(rules, "Bash("+p+":*)")
	}
	return rules, nil
}

// claudeSettings renders the --settings JSON.
func claudeSettings(hookArgv, allow, deny []string) ([]byte, error) {
	type hook struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type matcher struct {
		Matcher string `json:"matcher"`
		Hooks   []hook `json:"hooks"`
	}
	type permissions struct {
		Allow []string `json:"allow,omitempty"`
		Deny  []string `json:"deny,omitempty"`
	}
	type settings struct {
		Permissions permissions          `json:"permissions"`
		Hooks       map[string][]matcher `json:"hooks,omitempty"`
	}
	s := settings{Permissions: permissions{Allow: allow, Deny: deny}}
	if len(hookArgv) > 0 {
		s.Hooks = map[string][]matcher{
			"PreToolUse": {{
				Matcher: "Bash",
				Hooks:   []hook{{Type: "command", Command: text.ShellJoin(hookArgv), Timeout: 30}},
			}},
		}
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render claude settings: %w", err)
	}
	return append(b, '\n'), nil
}

// Texts that classify a failed Claude run. Claude Code's wording changes
// between versions, so these are matched case-insensitively and only when
// the stream did not already decide.
var (
	reClaudeAuth = text.LazyRegexp(`(?i)not logged in|please run /login|invalid api key|` +
		`authentication_error|oauth token (?:has expired|revoked)`)
	reClaudeBilling   = text.LazyRegexp(`(?i)credit balance is too low`)
	reClaudeNested    = text.LazyRegexp(`(?i)cannot be launched inside another claude code session`)
	reClaudeLimit     = text.LazyRegexp(`(?i)hit your (?:usage |weekly |session )?limit|usage limit|rate limit|limit reached`)
	reClaudeTransient = text.LazyRegexp(`(?i)overloaded|internal server error|api error: 5\d\d|\b529\b`)
)

// claudeParser parses Claude Code's stream-json output (also Amp's, which
// is a subset). It keeps only what the Outcome needs.
type claudeParser struct {
	now     func() time.Time
	backoff time.Duration
	texts   claudeTexts

	sessionID string
	commands  []string
	toolIDs   map[string]struct{}
	toolCalls int
	msgUsage  map[string]Usage // per assistant message id, for runs without a result
	msgOrder  []string

	assistantErr     string // the last assistant message's top-level "error"
	assistantErrText string
	rateRejected     bool
	rateResetAt      time.Time
	sawStream        bool // a line was recognised as Claude stream-json

	haveResult bool
	res        claudeResult
}

// claudeResult is the final "result" line.
type claudeResult struct {
	subtype   string
	isError   bool
	text      string
	apiStatus int64
	errors    []string
	turns     int
	cost      *float64
	usage     Usage
	denials   []Denial
}

func newClaudeParser(now func() time.Time, backoff time.Duration) *claudeParser {
	if now == nil {
		now = time.Now
	}
	if backoff <= 0 {
		backoff = DefaultTransientBackoff
	}
	return &claudeParser{now: now, backoff: backoff, texts: claudeCodeTexts}
}

// claudeTexts words the fatal verdicts of a CLI that speaks Claude's
// stream-json (Claude Code itself, or Amp).
type claudeTexts struct {
	product string // "Claude Code"
	login   string // how to fix missing credentials
	billing string // the billing error's label
}

// claudeCodeTexts are Claude Code's.
var claudeCodeTexts = claudeTexts{
	product: "Claude Code",
	login:   "log in by running `claude` once, or set a valid ANTHROPIC_API_KEY",
	billing: "Claude billing error",
}

// Line parses one stdout line. Lines that are not JSON objects of a known
// type yield no events.
func (p *claudeParser) Line(line []byte) []Event {
	evs, _ := p.line(line)
	return evs
}

// line parses one line and reports whether it was Claude stream-json.
func (p *claudeParser) line(line []byte) ([]Event, bool) {
	if !text.ValidJSON(line) {
		return nil, false
	}
	v := gjson.ParseBytes(line)
	if !v.IsObject() {
		return nil, false
	}
	typ := v.Get("type").String()
	switch typ {
	case "system", "assistant", "user", "rate_limit_event", "result", "stream_event":
	default:
		return nil, false
	}
	p.sawStream = true
	if sid := v.Get("session_id").String(); sid != "" {
		p.sessionID = sid
	}
	switch typ {
	case "system":
		if v.Get("subtype").String() == "init" {
			return []Event{{Kind: EventInit, SessionID: p.sessionID}}, true
		}
	case "assistant":
		return p.assistant(v), true
	case "user":
		return p.user(v), true
	case "rate_limit_event":
		return p.rateLimit(v), true
	case "result":
		return p.result(v), true
	}
	return nil, true
}

func (p *claudeParser) assistant(v gjson.Result) []Event {
	msg := v.Get("message")
	if id := msg.Get("id").String(); id != "" {
		if u := msg.Get("usage"); u.IsObject() {
			if p.msgUsage == nil {
				p.msgUsage = make(map[string]Usage)
			}
			if _, seen := p.msgUsage[id]; !seen {
				p.msgOrder = append(p.msgOrder, id)
			}
			p.msgUsage[id] = claudeUsage(u)
		}
	}
	var evs []Event
	var text strings.Builder
	for _, c := range msg.Get("content").Array() {
		switch c.Get("type").String() {
		case "text":
			t := c.Get("text").String()
			text.WriteString(t)
			evs = append(evs, Event{Kind: EventText, SessionID: p.sessionID, Text: t})
		case "tool_use":
			id := c.Get("id").String()
			if id != "" {
				if _, dup := p.toolIDs[id]; dup {
					continue
				}
				if p.toolIDs == nil {
					p.toolIDs = make(map[string]struct{})
				}
				p.toolIDs[id] = struct{}{}
			}
			p.toolCalls++
			name := c.Get("name").String()
			cmd := shellCommand(name, c.Get("input"))
			if cmd != "" {
				p.commands = append(p.commands, cmd)
			}
			evs = append(evs, Event{Kind: EventToolCall, SessionID: p.sessionID, Tool: name, ToolID: id, Command: cmd})
		}
	}
	if e := v.Get("error").String(); e != "" {
		p.assistantErr = e
		p.assistantErrText = text.String()
		evs = append(evs, Event{Kind: EventError, SessionID: p.sessionID, Text: joinNonEmpty(": ", e, p.assistantErrText), IsError: true})
	}
	return evs
}

// shellCommand returns the command of a shell tool call: Claude's Bash
// input.command, or input.cmd as Amp's Bash tool names it.
func shellCommand(tool string, input gjson.Result) string {
	if tool != "Bash" {
		return ""
	}
	if c := input.Get("command"); c.Type == gjson.String {
		return c.String()
	}
	if c := input.Get("cmd"); c.Type == gjson.String {
		return c.String()
	}
	return ""
}

func (p *claudeParser) user(v gjson.Result) []Event {
	var evs []Event
	for _, c := range v.Get("message.content").Array() {
		if c.Get("type").String() != "tool_result" {
			continue
		}
		evs = append(evs, Event{
			Kind:      EventToolResult,
			SessionID: p.sessionID,
			ToolID:    c.Get("tool_use_id").String(),
			Text:      contentText(c.Get("content")),
			IsError:   c.Get("is_error").Bool(),
		})
	}
	return evs
}

// contentText flattens a tool_result content: a string or a list of
// {"type":"text","text":...} blocks.
func contentText(c gjson.Result) string {
	if !c.IsArray() {
		return c.String()
	}
	var parts []string
	for _, b := range c.Array() {
		if t := b.Get("text"); t.Exists() {
			parts = append(parts, t.String())
		}
	}
	return strings.Join(parts, "\n")
}

func (p *claudeParser) rateLimit(v gjson.Result) []Event {
	info := v.Get("rate_limit_info")
	status := info.Get("status").String()
	var reset time.Time
	if r := info.Get("resetsAt"); r.Type == gjson.Number && r.Int() > 0 {
		reset = time.Unix(r.Int(), 0)
	}
	if status == "rejected" {
		p.rateRejected = true
		if !reset.IsZero() {
			p.rateResetAt = reset
		}
	}
	return []Event{{
		Kind:      EventRateLimit,
		SessionID: p.sessionID,
		Text:      joinNonEmpty(" ", status, info.Get("rateLimitType").String()),
		IsError:   status == "rejected",
		ResetAt:   reset,
	}}
}

func (p *claudeParser) result(v gjson.Result) []Event {
	r := claudeResult{
		subtype:   v.Get("subtype").String(),
		isError:   v.Get("is_error").Bool(),
		text:      v.Get("result").String(),
		apiStatus: v.Get("api_error_status").Int(),
		turns:     int(v.Get("num_turns").Int()),
		usage:     claudeUsage(v.Get("usage")),
	}
	if c := v.Get("total_cost_usd"); c.Type == gjson.Number {
		f := c.Float()
		r.cost = &f
	}
	for _, e := range v.Get("errors").Array() {
		r.errors = append(r.errors, e.String())
	}
	// Amp puts an error result's message in a string field "error".
	if e := v.Get("error"); e.Type == gjson.String && e.String() != "" {
		r.errors = append(r.errors, e.String())
	}
	for _, d := range v.Get("permission_denials").Array() {
		tool := d.Get("tool_name").String()
		r.denials = append(r.denials, Denial{
			Tool:    tool,
			ToolID:  d.Get("tool_use_id").String(),
			Command: shellCommand(tool, d.Get("tool_input")),
		})
	}
	p.haveResult = true
	p.res = r
	return []Event{{Kind: EventResult, SessionID: p.sessionID, Text: r.text, IsError: r.isError}}
}

// claudeUsage reads a Claude usage object.
func claudeUsage(u gjson.Result) Usage {
	return Usage{
		InputTokens:      u.Get("input_tokens").Int(),
		OutputTokens:     u.Get("output_tokens").Int(),
		CacheReadTokens:  u.Get("cache_read_input_tokens").Int(),
		CacheWriteTokens: u.Get("cache_creation_input_tokens").Int(),
	}
}

// Finish classifies the run from the stream; the exit code only matters
// when the stream says nothing (no result line, no provider error).
func (p *claudeParser) Finish(exitCode int, stderrTail string) Outcome {
	out := p.outcome(exitCode)
	if v, ok := p.verdict(stderrTail); ok {
		v.apply(&out)
		return out
	}
	out.Status = StatusCrashed
	out.Reason = fmt.Sprintf("the agent exited (%s) without a final result", exitDescription(exitCode))
	if last := lastLine(stderrTail); last != "" {
		out.Reason += ": " + last
	}
	return out
}

// outcome returns the Outcome fields the stream reported, without a status.
func (p *claudeParser) outcome(exitCode int) Outcome {
	out := Outcome{
		SessionID: p.sessionID,
		Commands:  p.commands,
		ToolCalls: p.toolCalls,
		ExitCode:  exitCode,
	}
	if p.haveResult {
		out.ResultText = p.res.text
		out.CostUSD = p.res.cost
		out.Usage = p.res.usage
		out.Turns = p.res.turns
		out.Denials = p.res.denials
	} else {
		for _, id := range p.msgOrder {
			out.Usage = out.Usage.Add(p.msgUsage[id])
		}
	}
	return out
}

// verdict is a classification.
type verdict struct {
	status    Status
	reason    string
	resetAt   time.Time
	rounded   bool // resetAt was read from minute-rounded text
	transient bool
	// recoverable: see Outcome.Recoverable.
	recoverable bool
}

func (v verdict) apply(o *Outcome) {
	o.Status, o.Reason, o.ResetAt, o.Transient, o.Recoverable = v.status, v.reason, v.resetAt, v.transient, v.recoverable
	o.ResetRounded = v.rounded
}

// verdict classifies the run from the stream. stderrTail, when not empty,
// is also searched for provider messages if the stream has no result. It
// reports false when nothing in the stream or stderr decides: no result
// line and no provider error.
func (p *claudeParser) verdict(stderrTail string) (verdict, bool) {
	r := p.res
	if p.haveResult && !r.isError {
		if r.subtype == "" || r.subtype == "success" {
			return verdict{status: StatusOK, reason: "finished"}, true
		}
		return verdict{status: StatusAgentError, reason: "the agent ended with " + r.subtype}, true
	}
	if p.haveResult {
		switch r.subtype {
		case "error_max_turns", "error_max_budget_usd", "error_max_structured_output_retries":
			return verdict{status: StatusAgentError, reason: p.errorReason()}, true
		}
	}
	// The result is an error, or there is no result: look for provider
	// signals in the stream, then in the texts.
	texts := append([]string{r.text, p.assistantErrText}, r.errors...)
	if !p.haveResult {
		texts = append(texts, stderrTail)
	}
	all := strings.Join(texts, "\n")
	free := p.assistantErr == "" // no typed error: the texts may decide
	switch {
	case p.assistantErr == "authentication_failed", r.apiStatus == 401, r.apiStatus == 403,
		free && reClaudeAuth.MatchString(all):
		return verdict{status: StatusFatal, recoverable: true, reason: p.texts.product + " cannot authenticate: " + firstText(all) +
			"; " + p.texts.login}, true
	case p.assistantErr == "billing_error", r.apiStatus == 402, free && reClaudeBilling.MatchString(all):
		return verdict{status: StatusFatal, recoverable: true, reason: p.texts.billing + ": " + firstText(all) +
			"; check the account's plan or credit balance"}, true
	case free && reClaudeNested.MatchString(all):
		return verdict{status: StatusFatal, reason: "Claude Code refused to run nested: " + firstText(all) +
			"; unset CLAUDECODE in ralphd's environment"}, true
	case r.apiStatus == 429, p.assistantErr == "rate_limit", p.rateRejected,
		free && r.apiStatus == 0 && reClaudeLimit.MatchString(all):
		reset, rounded := p.rateResetAt, false
		if reset.IsZero() {
			reset, rounded, _ = parseResetText(all, p.now())
		}
		return verdict{status: StatusRateLimited, reason: "rate limited: " + firstText(all), resetAt: reset, rounded: rounded}, true
	case r.apiStatus >= 500, p.assistantErr == "server_error",
		free && reClaudeTransient.MatchString(all):
		reason := "transient API error"
		if r.apiStatus != 0 {
			reason += " " + strconv.FormatInt(r.apiStatus, 10)
		}
		return verdict{status: StatusRateLimited, transient: true, reason: reason + ": " + firstText(all),
			resetAt: p.now().Add(p.backoff)}, true
	case p.haveResult:
		return verdict{status: StatusAgentError, reason: p.errorReason()}, true
	case p.assistantErr != "":
		return verdict{status: StatusAgentError, reason: "API error " + p.assistantErr + ": " + firstText(all)}, true
	}
	return verdict{}, false
}

// errorReason describes an error result.
func (p *claudeParser) errorReason() string {
	r := p.res
	msg := strings.Join(r.errors, "; ")
	if msg == "" {
		msg = r.text
	}
	label := r.subtype
	if label == "" || label == "success" {
		label = "error"
	}
	if msg = truncate(firstLine(msg), 300); msg != "" {
		return label + ": " + msg
	}
	return label
}

// firstText returns the first non-empty line of s, shortened, or a
// placeholder.
func firstText(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return truncate(l, 300)
		}
	}
	return "(no message)"
}

// exitDescription describes an exit code.
func exitDescription(code int) string {
	if code < 0 {
		return "killed by a signal"
	}
	return "exit code " + strconv.Itoa(code)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return truncate(strings.TrimSpace(s), 300)
}

// truncate shortens s to at most n bytes on a rune boundary, adding "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}

// NewLogParser returns a parser of Claude Code's stream-json for the run
// log.
func (c Claude) NewLogParser() LogParser { return &claudeLog{} }

// maxLoggedTools bounds the tool names a claudeLog remembers, as a log is
// not trusted input.
const maxLoggedTools = 10000

// claudeLog reads Claude Code's stream-json (and Amp's, and the command
// backend's) for the run log.
type claudeLog struct {
	tools     map[string]string // tool_use id to tool name, to name a failed call
	lastError string            // the text of the last assistant error
	evs       []Event           // the last line's events, reused
}

// Log parses one line of stream-json.
func (l *claudeLog) Log(line []byte) ([]Event, bool) {
	v, ok := logObject(line)
	if !ok {
		return nil, false
	}
	clear(l.evs)
	evs := l.evs[:0]
	switch v.Get("type").String() {
	case "system":
		evs = append(evs, l.system(v))
	case "assistant":
		evs = l.assistant(evs, v)
	case "user":
		evs = l.user(evs, v)
	case "result":
		evs = append(evs, l.result(v))
	case "rate_limit_event":
		evs = append(evs, claudeRateLimitLog(v.Get("rate_limit_info")))
	case "stream_event":
		evs = append(evs, Event{Kind: EventRaw, Verbose: true})
	default:
		return nil, false
	}
	l.evs = evs
	return evs, true
}

func (l *claudeLog) system(v gjson.Result) Event {
	sub := v.Get("subtype").String()
	if sub != "init" {
		return Event{Kind: EventNote, Verbose: true, Text: "system " + sub}
	}
	ev := Event{Kind: EventInit, SessionID: v.Get("session_id").String(), Text: "init"}
	if ver := v.Get("claude_code_version").String(); ver != "" {
		ev.Text += " · claude code " + ver
	}
	if m := v.Get("model").String(); m != "" {
		ev.Text += " · " + m
	}
	if ev.SessionID != "" {
		ev.Detail = "session " + ev.SessionID
	}
	return ev
}

// assistant appends the events of an assistant message to evs.
func (l *claudeLog) assistant(evs []Event, v gjson.Result) []Event {
	content := v.Get("message.content")
	if e := v.Get("error"); e.Exists() && e.String() != "" {
		// An API error: the message's text says what went wrong.
		var text []string
		for _, blk := range content.Array() {
			if t := blk.Get("text").String(); t != "" {
				text = append(text, t)
			}
		}
		l.lastError = strings.Join(text, " ")
		return append(evs, Event{Kind: EventError, IsError: true, Text: e.String() + ": " + l.lastError})
	}
	if content.Type == gjson.String {
		return append(evs, Event{Kind: EventText, Text: content.String()})
	}
	for _, blk := range content.Array() {
		switch typ := blk.Get("type").String(); typ {
		case "text":
			evs = append(evs, Event{Kind: EventText, Text: blk.Get("text").String()})
		case "thinking":
			evs = append(evs, Event{Kind: EventThinking, Text: blk.Get("thinking").String()})
		case "tool_use", "server_tool_use":
			name, id := blk.Get("name").String(), blk.Get("id").String()
			if id != "" && len(l.tools) < maxLoggedTools {
				if l.tools == nil {
					l.tools = make(map[string]string)
				}
				l.tools[id] = name
			}
			evs = append(evs, toolCallEvent(name, id, name == "Bash", blk.Get("input")))
		default:
			evs = append(evs, Event{Kind: EventNote, Verbose: true, Text: typ})
		}
	}
	return evs
}

// user appends the events of a user message (tool results) to evs.
func (l *claudeLog) user(evs []Event, v gjson.Result) []Event {
	content := v.Get("message.content")
	if !content.IsArray() {
		return append(evs, Event{Kind: EventPrompt, Text: content.String()})
	}
	for _, blk := range content.Array() {
		if blk.Get("type").String() != "tool_result" {
			continue
		}
		id := blk.Get("tool_use_id").String()
		ev := Event{Kind: EventToolResult, ToolID: id, Text: contentText(blk.Get("content")), IsError: blk.Get("is_error").Bool()}
		if ev.IsError {
			ev.Denied = isDenial(ev.Text)
			ev.Label = l.tools[id]
		}
		evs = append(evs, ev)
	}
	return evs
}

// result reports the run's result, and words an error result unless the
// assistant's error message said the same already.
func (l *claudeLog) result(v gjson.Result) Event {
	ev := Event{Kind: EventResult, IsError: v.Get("is_error").Bool(), Turns: int(v.Get("num_turns").Int()),
		Duration: millis(v.Get("duration_ms").Int())}
	if c := v.Get("total_cost_usd"); c.Type == gjson.Number {
		cost := c.Float()
		ev.CostUSD = &cost
	}
	if !ev.IsError {
		return ev
	}
	text := v.Get("result").String()
	if text != "" && text == l.lastError {
		return ev
	}
	ev.Label = "agent error"
	if sub := v.Get("subtype").String(); sub != "" && sub != "success" {
		ev.Label += " [" + sub + "]"
	}
	if st := v.Get("api_error_status"); st.Type == gjson.Number {
		ev.Label += " (HTTP " + st.String() + ")"
	}
	if text == "" {
		var errs []string
		for _, e := range v.Get("errors").Array() {
			errs = append(errs, e.String())
		}
		text = strings.Join(errs, "; ")
	}
	ev.Text = text
	return ev
}

// millis converts a count of milliseconds to a duration, bounded.
func millis(ms int64) time.Duration {
	const most = int64(1<<63-1) / int64(time.Millisecond)
	return time.Duration(min(max(ms, -most), most)) * time.Millisecond
}

// claudeRateLimitLog is the log's event of a rate_limit_event: a limit
// that still allows is shown only in verbose mode.
func claudeRateLimitLog(info gjson.Result) Event {
	status := info.Get("status").String()
	ev := Event{Kind: EventRateLimit, Text: status, IsError: status == "rejected", Verbose: strings.HasPrefix(status, "allowed")}
	if t := info.Get("rateLimitType").String(); t != "" {
		ev.Text += " (" + t + ")"
	}
	if at := info.Get("resetsAt").Int(); at > 0 {
		ev.ResetAt = time.Unix(at, 0)
	}
	return ev
}

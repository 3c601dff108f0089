package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// This file holds what the Codex, opencode and Gemini backends share: the
// texts that classify a provider error, reset times in their messages, and
// the bookkeeping of tool calls.

// Texts that classify a provider error message of an agent without a typed
// error taxonomy. They are matched case-insensitively against error
// messages only (never against tool output), in the order auth, model,
// limit, transient.
var (
	reAuthText = text.LazyRegexp(`(?i)unauthori[sz]ed|unauthenticated|invalid[ _-]?api[ _-]?key|incorrect api key|api key not valid|` +
		`api[ _-]?key (?:is )?(?:missing|required|not set|not found)|no api key|not logged in|please (?:run )?\S*log ?in|` +
		`login required|authentication (?:failed|required|error)|invalid[ _]grant|(?:access|refresh) token|token (?:has )?expired`)
	reModelText = text.LazyRegexp(`(?i)model[_ ]?not[_ ]?found|unknown model|` +
		`model\b[^\n]{0,80}\b(?:does not exist|is not supported|not found|not available)`)
	reLimitText = text.LazyRegexp(`(?i)usage[ _]limit|hit your (?:\w+ )?limit|rate[ _-]?limit|too many requests|` +
		`quota|resource[ _]exhausted|limit[ _]reached`)
	reTransientText = text.LazyRegexp(`(?i)overloaded|internal server error|service unavailable|bad gateway|` +
		`gateway time-?out|server error|stream disconnected|connection (?:reset|refused|closed)|(?:status|http)[: ]+5\d\d\b`)
)

// textClass is what an error message says about a failed run.
type textClass int

const (
	classUnknown   textClass = iota
	classAuth                // credentials missing or rejected
	classModel               // the configured model does not exist
	classLimit               // a usage limit, quota or rate limit
	classTransient           // a server-side error worth a short backoff
)

// classifyText classifies an error message.
func classifyText(s string) textClass {
	switch {
	case s == "":
		return classUnknown
	case reAuthText.MatchString(s):
		return classAuth
	case reModelText.MatchString(s):
		return classModel
	case reLimitText.MatchString(s):
		return classLimit
	case reTransientText.MatchString(s):
		return classTransient
	}
	return classUnknown
}

// providerTexts words the verdicts of one agent CLI.
type providerTexts struct {
	label string // the product name, "Codex"
	login string // how to fix missing credentials
	pkg   string // the npm package, for upgrade advice
}

// reUnknownFlag matches an argument parser's complaint about an option
// (clap, yargs, commander wordings): an agent CLI too old for the command
// line ralphd builds.
var reUnknownFlag = text.LazyRegexp(`(?i)unknown (?:argument|option|flag)s?|unexpected argument|unrecognized (?:argument|option)`)

// usageVerdict reports a CLI that rejected ralphd's command line, judging
// from its stderr.
func (pt providerTexts) usageVerdict(stderrTail string) (verdict, bool) {
	for l := range strings.SplitSeq(stderrTail, "\n") {
		if reUnknownFlag.MatchString(l) {
			return verdict{status: StatusFatal, reason: pt.label + " rejected ralphd's command line: " + truncate(strings.TrimSpace(l), 300) +
				"; upgrade it with `npm install -g " + pt.pkg + "@latest`"}, true
		}
	}
	return verdict{}, false
}

// verdict turns a classified message into a verdict; it reports false for
// classUnknown.
func (pt providerTexts) verdict(class textClass, msg string, now time.Time, backoff time.Duration) (verdict, bool) {
	switch class {
	case classAuth:
		return verdict{status: StatusFatal, recoverable: true, reason: pt.label + " cannot authenticate: " + firstText(msg) + "; " + pt.login}, true
	case classModel:
		return verdict{status: StatusFatal, reason: pt.label + " rejected the model: " + firstText(msg) +
			`; check the model setting (--model or "model" in config)`}, true
	case classLimit:
		reset, rounded, _ := resetFromText(msg, now)
		return verdict{status: StatusRateLimited, reason: "rate limited: " + firstText(msg), resetAt: reset, rounded: rounded}, true
	case classTransient:
		return verdict{status: StatusRateLimited, transient: true, reason: "transient API error: " + firstText(msg),
			resetAt: now.Add(backoff)}, true
	}
	return verdict{}, false
}

// Reset times as the non-Claude agents phrase them.
var (
	// Codex's usage_limit_reached error body: "resets_in_seconds": 1234.
	reResetsIn = text.LazyRegexp(`"?resets_in_seconds"?\s*[:=]\s*(\d{1,9})\b`)
	// ... or "resets_at": 1795366800 (unix seconds).
	reResetsAt = text.LazyRegexp(`"?resets_at"?\s*[:=]\s*(\d{9,11})\b`)
	// Gemini: "Please retry in 32.5s.", "Your quota will reset after 17h36m21s."
	reRetryDuration = text.LazyRegexp(`(?i)(?:retry|reset|try again)\s+(?:in|after)\s+(\d[\dhms.]*)`)
)

// resetFromText finds when a limit resets in an error message: the fields
// of Codex's usage-limit error, a Go-style duration ("retry in 1h2m3s"),
// or any form parseResetText understands. rounded is as for
// parseResetText.
func resetFromText(s string, now time.Time) (reset time.Time, rounded, ok bool) {
	if m := reResetsAt.FindStringSubmatch(s); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(n, 0), false, true
		}
	}
	if m := reResetsIn.FindStringSubmatch(s); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n > 0 {
			return now.Add(time.Duration(n) * time.Second), false, true
		}
	}
	if m := reRetryDuration.FindStringSubmatch(s); m != nil {
		if d, err := time.ParseDuration(strings.TrimRight(m[1], ".")); err == nil && d > 0 {
			return now.Add(d), false, true
		}
	}
	return parseResetText(s, now)
}

// toolTracker counts tool calls and collects shell commands, each call
// once however many lines mention it.
type toolTracker struct {
	seen     map[string]struct{}
	calls    int
	commands []string
	denials  []Denial
	denied   map[string]struct{}
}

// first records the tool call id (with its shell command, if any) and
// reports whether it is new. Calls without an id always count.
func (t *toolTracker) first(id, command string) bool {
	if id != "" {
		if _, dup := t.seen[id]; dup {
			return false
		}
		if t.seen == nil {
			t.seen = make(map[string]struct{})
		}
		t.seen[id] = struct{}{}
	}
	t.calls++
	if command != "" {
		t.commands = append(t.commands, command)
	}
	return true
}

// deny records a refused tool call once.
func (t *toolTracker) deny(d Denial) {
	key := d.ToolID
	if key == "" {
		key = d.Tool + "\x00" + d.Command
	}
	if _, dup := t.denied[key]; dup {
		return
	}
	if t.denied == nil {
		t.denied = make(map[string]struct{})
	}
	t.denied[key] = struct{}{}
	t.denials = append(t.denials, d)
}

// denyPrefixes normalises the policy's command prefixes: inner whitespace
// collapsed, empty ones dropped, duplicates removed, order kept.
func denyPrefixes(prefixes []string) []string {
	var out []string
	seen := make(map[string]struct{})
	for _, p := range prefixes {
		p = strings.Join(strings.Fields(p), " ")
		if p == "" {
			continue
		}
		if _, dup := seen[p]; dup {
			continue
		}
		seen[p] = struct{}{}
		out = append(out, p)
	}
	return out
}

// denyMessage is the explanation an agent's permission system shows the
// model for a refused prefix: why[prefix], or the separation of powers'.
func denyMessage(mode, prefix string, why map[string]string) string {
	if w := why[prefix]; w != "" {
		return w
	}
	in := "in this mode"
	if mode != "" {
		in = "in " + mode + " mode"
	}
	return "ralphd: `" + prefix + "` is not allowed " + in + " (separation of powers); leave it to a planning iteration"
}

// writeScratch writes data to name in the scratch directory and returns
// its path.
func writeScratch(dir, name string, data []byte) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("write %s: the invocation has no scratch directory", name)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	path := filepath.Join(dir, name)
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return path, nil
}

// crashReason describes a run that ended without a final result.
func crashReason(exitCode int, stderrTail string) string {
	reason := fmt.Sprintf("the agent exited (%s) without a final result", exitDescription(exitCode))
	if last := lastLine(stderrTail); last != "" {
		reason += ": " + last
	}
	return reason
}

// quoteRule quotes s for a rule file ralphd writes for an agent: as a
// TOML basic string (Gemini CLI's policy) or a Starlark string literal
// (Codex's rules), which are written alike when only the quote and the
// backslash are escaped. Control characters are refused: no shell word
// of a deny prefix holds one, and neither format takes them raw.
func quoteRule(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			return "", fmt.Errorf("control character %U cannot be written in a rule", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

package scriptedapi

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Script is one scripted conversation: the model's side of one agent run
// (one ralphd iteration, one fresh claude process).
//
// Every agent request of the conversation consumes the next Turn, including
// requests the agent retries after a Fault, so a script that starts with a
// 429 Fault and then a Bash turn answers the retry with the Bash turn.
type Script struct {
	// Name labels the script in errors and in recorded requests. When
	// empty, "script N" (its position, from 0) is used.
	Name string
	// Match, when set, must accept the conversation's prompt (the text of
	// its first user message, see Request.Prompt) for the script to be
	// chosen. Unmatched scripts stay available for later conversations.
	// It runs with the server's lock held and must not call the Server.
	Match func(prompt string) bool
	// Turns are the model's replies, in order.
	Turns []Turn
	// RepeatLast keeps serving the last turn once the turns have run out
	// (for a provider that keeps failing, say). Without it a request
	// after the last turn is recorded as an error and answered with a
	// text reply that ends the conversation.
	RepeatLast bool
}

// PromptContains returns a Script.Match that accepts prompts containing s.
func PromptContains(s string) func(prompt string) bool {
	return func(prompt string) bool { return strings.Contains(prompt, s) }
}

// Turn is one scripted model reply: text, tool calls, or a Fault.
//
// A reply with tool calls ends with stop_reason "tool_use", one without
// with "end_turn". When both Text and Calls are set the text block comes
// first, as the real model writes it ("Let me check ..." then the call).
type Turn struct {
	// Text is the reply's text block; empty means none.
	Text string
	// Calls are the tool_use blocks of the reply.
	Calls []ToolCall
	// Fault, when set, answers the request with an HTTP error (or a hang)
	// instead of a message; Text and Calls are then ignored.
	Fault *Fault
	// Checks run against every tool_result the agent sends in the request
	// this turn answers (the results of the previous turn's calls). A
	// failed check, or a check with no tool_result to look at, is
	// recorded in Server.Errors; the turn is served anyway.
	Checks []Check
}

// ToolCall is one tool_use block of a reply.
type ToolCall struct {
	// Name is the tool's name, as the agent defines it ("Bash").
	Name string
	// Input is the tool's input object; it must encode as JSON.
	Input map[string]any
}

// Say returns a turn that replies with text and ends the agent's turn.
func Say(text string) Turn { return Turn{Text: text} }

// Bash returns a turn that asks the agent to run each command with its
// Bash tool, one tool_use block per command.
func Bash(commands ...string) Turn {
	t := Turn{}
	for _, c := range commands {
		t.Calls = append(t.Calls, BashCall(c))
	}
	return t
}

// BashCall returns a tool call of Claude Code's Bash tool.
func BashCall(command string) ToolCall {
	return ToolCall{Name: "Bash", Input: map[string]any{
		"command":     command,
		"description": "scripted command",
	}}
}

// Fail returns a turn that answers with the fault f.
func Fail(f Fault) Turn { return Turn{Fault: &f} }

// Saying returns a copy of t with its text block set to text.
func (t Turn) Saying(text string) Turn {
	t.Text = text
	return t
}

// Expect returns a copy of t with checks added on the tool results the
// answered request carries.
func (t Turn) Expect(checks ...Check) Turn {
	t.Checks = append(append([]Check(nil), t.Checks...), checks...)
	return t
}

// Check inspects one tool_result: its content as text and its is_error flag.
type Check func(content string, isError bool) error

// Contains checks that the tool result's content contains s.
func Contains(s string) Check {
	return func(content string, _ bool) error {
		if !strings.Contains(content, s) {
			return fmt.Errorf("tool result %q does not contain %q", clip(content), s)
		}
		return nil
	}
}

// Matches checks that the tool result's content matches the regular
// expression expr. An invalid expr fails the check; it does not panic.
func Matches(expr string) Check {
	re, err := regexp.Compile(expr)
	return func(content string, _ bool) error {
		if err != nil {
			return fmt.Errorf("compile check pattern: %w", err)
		}
		if !re.MatchString(content) {
			return fmt.Errorf("tool result %q does not match %q", clip(content), expr)
		}
		return nil
	}
}

// Succeeded checks that the tool result is not an error.
func Succeeded() Check {
	return func(content string, isError bool) error {
		if isError {
			return fmt.Errorf("tool result is an error: %q", clip(content))
		}
		return nil
	}
}

// Failed checks that the tool result is an error (a failed command, a
// refused tool call).
func Failed() Check {
	return func(content string, isError bool) error {
		if !isError {
			return fmt.Errorf("tool result is not an error: %q", clip(content))
		}
		return nil
	}
}

// clip shortens s for error messages.
func clip(s string) string {
	const limit = 300
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// Fault is an HTTP error answer, or a connection that never answers.
type Fault struct {
	// Status is the HTTP status code.
	Status int
	// Type is the Anthropic error type ("rate_limit_error", ...).
	Type string
	// Message is the error message in the JSON body.
	Message string
	// Header holds extra response headers (retry-after, x-should-retry,
	// anthropic-ratelimit-unified-reset, ...).
	Header http.Header
	// Hang holds the request open without answering until the client
	// goes away or the server is closed; the other fields are ignored.
	Hang bool
}

// RateLimited returns a 429 rate_limit_error fault whose retry-after
// header is retryAfter in whole seconds (rounded up).
//
// Claude Code 2.1.197 with an API key retries a 429 up to
// CLAUDE_CODE_MAX_RETRIES times (default 10), waiting the larger of
// retry-after and its backoff (0.5s doubling to 32s, plus up to 25%
// jitter), and emits a system/api_retry line per retry. When retry-after
// is over 60 seconds it gives up at once: exit 1, result
// "API Error: Request rejected (429) · <message>", api_error_status 429,
// and no reset time anywhere in the stream.
func RateLimited(retryAfter time.Duration) Fault {
	secs := int64((retryAfter + time.Second - 1) / time.Second)
	secs = max(secs, 0)
	return Fault{
		Status:  http.StatusTooManyRequests,
		Type:    "rate_limit_error",
		Message: "Number of request tokens has exceeded your per-minute rate limit (scripted)",
		Header:  http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}},
	}
}

// UsageLimit returns the 429 a claude.ai subscription gets at its usage
// limit: retry-after (normally the time until reset) plus the
// anthropic-ratelimit-unified-* headers with status "rejected", the reset
// time and the limit that was hit ("five_hour", "seven_day", ...).
//
// A Claude Code logged in by SubscriptionEnv retries no 429 at all; for
// this one it prints a rate_limit_event line (status "rejected", resetsAt
// in unix seconds) and the result "You've hit your session limit · resets
// <local time>" with api_error_status 429, and exits 1. (A subscriber's 429
// without these headers gives "API Error: Server is temporarily limiting
// requests (not your usage limit) · <message>".) With an API key it is an
// ordinary 429 (see RateLimited).
func UsageLimit(limit string, reset time.Time, retryAfter time.Duration) Fault {
	f := RateLimited(retryAfter)
	f.Message = "You have reached your usage limit (scripted)"
	f.Header.Set("Anthropic-Ratelimit-Unified-Status", "rejected")
	f.Header.Set("Anthropic-Ratelimit-Unified-Reset", strconv.FormatInt(reset.Unix(), 10))
	f.Header.Set("Anthropic-Ratelimit-Unified-Representative-Claim", limit)
	return f
}

// Overloaded returns a 529 overloaded_error fault.
func Overloaded() Fault {
	return Fault{Status: 529, Type: "overloaded_error", Message: "Overloaded (scripted)"}
}

// InvalidKey returns a 401 authentication_error fault.
func InvalidKey() Fault {
	return Fault{Status: http.StatusUnauthorized, Type: "authentication_error", Message: "invalid x-api-key"}
}

// ServerError returns a 500 api_error fault.
func ServerError() Fault {
	return Fault{Status: http.StatusInternalServerError, Type: "api_error", Message: "Internal server error (scripted)"}
}

// Hang returns a fault that never answers.
func Hang() Fault { return Fault{Hang: true} }

// NoRetry returns a copy of f that also sends `x-should-retry: false`,
// which Claude Code (like the Anthropic SDKs) honours by giving up on the
// request at once instead of retrying it.
func (f Fault) NoRetry() Fault {
	f.Header = f.Header.Clone()
	if f.Header == nil {
		f.Header = http.Header{}
	}
	f.Header.Set("X-Should-Retry", "false")
	return f
}

// Repeat returns n copies of t, for a fault the agent retries n times.
func Repeat(n int, t Turn) []Turn {
	out := make([]Turn, 0, max(n, 0))
	for range n {
		out = append(out, t)
	}
	return out
}

package agent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/text"
)

// This file is how `ralphd logs` reads an agent's stream: each backend
// turns its CLI's lines into Events, and the run log's renderer shows the
// events of every CLI alike. A backend with a LogParser of its own
// (NewLogParser) reports everything a person reading the log should see;
// any other backend's log is read with its Parser.

// LogParser reads an agent's stdout lines for the run log. Unlike a
// Parser it keeps nothing for an Outcome: one per iteration, and it may
// be fed any log, however long.
type LogParser interface {
	// Log parses one stdout line (without its newline) into the events a
	// person reading the log should see, in order; they are valid until
	// the next call. ok reports whether the line was the CLI's stream at
	// all; a line that was not (and gives no events) is shown as it is.
	// Log must tolerate any input.
	Log(line []byte) (evs []Event, ok bool)
}

// logParserMaker is implemented by backends whose stream the log shows
// in more detail than a Parser reports.
type logParserMaker interface {
	NewLogParser() LogParser
}

// NewLogParser returns a parser of the stream of the backend called
// name, for the run log, and false when no backend has that name. A
// backend without a LogParser of its own is read with its Parser: a line
// that gives no event is then not its stream.
func NewLogParser(name string) (LogParser, bool) {
	b, ok := Describe(name)
	if !ok {
		return nil, false
	}
	if m, ok := b.(logParserMaker); ok {
		return m.NewLogParser(), true
	}
	return parserLog{b.NewParser()}, true
}

// parserLog reads a log with a backend's Parser.
type parserLog struct{ p Parser }

func (l parserLog) Log(line []byte) ([]Event, bool) {
	evs := l.p.Line(line)
	return evs, len(evs) > 0
}

// logObject parses line as a JSON object, or reports false. It checks
// the line with jsonvalid, not gjson, whose recursion a deeply nested line
// would drive into a stack overflow.
func logObject(line []byte) (gjson.Result, bool) {
	if !text.ValidJSON(line) {
		return gjson.Result{}, false
	}
	v := gjson.ParseBytes(line)
	return v, v.IsObject()
}

// errorLineLog reads a bare {"type":"error","message":...} line, which
// Codex and Gemini CLI write alike.
func errorLineLog(v gjson.Result) (Event, bool) {
	if v.Get("type").String() != "error" || !v.Get("message").Exists() || v.Get("sessionID").Exists() {
		return Event{}, false
	}
	return Event{Kind: EventError, IsError: true, Text: v.Get("message").String()}, true
}

// isDenial reports whether a tool's error or output is a policy denial: a
// message from ralphd's guard or hook, or Claude Code's own "Permission
// to use ... has been denied" for the rules ralphd compiles into its
// settings.
func isDenial(text string) bool {
	lower := strings.ToLower(text)
	return strings.Contains(lower, "ralphd") ||
		(strings.Contains(lower, "permission to use") && strings.Contains(lower, "denied"))
}

// toolInput is the main argument of a tool call that is not a shell
// command, for the log: the first of the usual argument fields, else the
// whole input.
func toolInput(input gjson.Result) string {
	for _, key := range []string{"file_path", "path", "notebook_path", "pattern", "url", "query", "description", "prompt", "command"} {
		if v := input.Get(key); v.Type == gjson.String && v.String() != "" {
			return v.String()
		}
	}
	if input.Exists() && input.Raw != "{}" {
		return input.Raw
	}
	return ""
}

// toolCallEvent is the log's event of a call of tool with input: a
// shell call when shell is the CLI's shell tool.
func toolCallEvent(tool, id string, shell bool, input gjson.Result) Event {
	if shell {
		return Event{Kind: EventToolCall, Tool: tool, ToolID: id, Shell: true, Command: input.Get("command").String()}
	}
	return Event{Kind: EventToolCall, Tool: tool, ToolID: id, Input: toolInput(input)}
}

// shellResultEvent is the log's event of a finished tool call: its
// output, and its exit code when the CLI reports one as a number.
func shellResultEvent(id string, exit gjson.Result, output string) Event {
	ev := Event{Kind: EventToolResult, ToolID: id, Text: output, Denied: isDenial(output)}
	if exit.Type == gjson.Number {
		code := int(exit.Int())
		ev.ExitCode = &code
		ev.IsError = code != 0
	}
	return ev
}

// failedToolEvent is the log's event of a tool call that failed with
// msg; denied reports whether msg is a refusal.
func failedToolEvent(id, msg string, denied bool) Event {
	return Event{Kind: EventToolResult, ToolID: id, IsError: true, Error: msg, Denied: denied || isDenial(msg)}
}

// tokenWords words a token count for the log: "12 input tokens, 1 output
// token".
func tokenWords(in, out int64) string {
	return plural(in, "input token") + ", " + plural(out, "output token")
}

// plural words a count of a thing.
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

// dollars words a cost in US dollars, to the cent from one dollar on.
func dollars(usd float64) string {
	if usd >= 1 || usd == 0 {
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}

// firstNonEmpty returns the first of ss that is not empty.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/matryer/is"
)

// logKinds are the kinds a LogParser may report.
var logKinds = []EventKind{EventInit, EventText, EventToolCall, EventToolResult, EventRateLimit, EventError, EventResult,
	EventThinking, EventPrompt, EventUsage, EventNote, EventRaw}

// logLine parses one line with a fresh log parser of the backend name.
func logLine(t *testing.T, name, line string) ([]Event, bool) {
	t.Helper()
	p, ok := NewLogParser(name)
	if !ok {
		t.Fatalf("no backend %s", name)
	}
	return p.Log([]byte(line))
}

func TestNewLogParser(t *testing.T) {
	is := is.New(t)
	for _, name := range Names() {
		_, ok := NewLogParser(name)
		is.True(ok) // every backend's stream can be read for the log
	}
	_, ok := NewLogParser("gpt-9")
	is.True(!ok) // an unknown backend has no parser
	_, ok = NewLogParser("")
	is.True(!ok)
}

func TestLogParserEvents(t *testing.T) {
	is := is.New(t)

	evs, ok := logLine(t, "claude", `{"type":"system","subtype":"init","session_id":"s1","model":"m","claude_code_version":"2.1.197"}`)
	is.True(ok)
	is.Equal(evs, []Event{{Kind: EventInit, SessionID: "s1", Text: "init · claude code 2.1.197 · m", Detail: "session s1"}})

	evs, ok = logLine(t, "claude", `{"type":"system","subtype":"hook_started"}`)
	is.True(ok)
	is.Equal(evs, []Event{{Kind: EventNote, Verbose: true, Text: "system hook_started"}}) // understood, shown when verbose

	p, _ := NewLogParser("claude")
	p.Log([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/x.go"}}]}}`))
	evs, _ = p.Log([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"no such file"}]}}`))
	is.Equal(evs[0].Label, "Read") // a failed call is named by its tool

	evs, _ = logLine(t, "claude", `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,"duration_ms":30500,"total_cost_usd":0.04,"errors":["a","b"]}`)
	is.Equal(evs[0].Label, "agent error [error_max_turns]")
	is.Equal(evs[0].Text, "a; b")
	is.Equal(evs[0].Turns, 2)
	is.Equal(evs[0].Duration.Milliseconds(), int64(30500))
	is.Equal(*evs[0].CostUSD, 0.04)

	evs, ok = logLine(t, "codex", `{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"false","aggregated_output":"boom","exit_code":1,"status":"failed"}}`)
	is.True(ok)
	is.Equal(*evs[0].ExitCode, 1) // the exit code of a shell command
	is.True(evs[0].IsError)

	evs, _ = logLine(t, "codex", `{"type":"turn.completed","usage":{"input_tokens":400,"cached_input_tokens":300,"output_tokens":103}}`)
	is.Equal(evs[0].Kind, EventUsage)
	is.Equal(*evs[0].Tokens, Tokens{InputTokens: 400, OutputTokens: 103}) // as Codex counts them
	is.Equal(evs[0].Text, "turn done: 400 input tokens, 103 output tokens")

	evs, _ = logLine(t, "opencode", `{"type":"step_finish","sessionID":"s","part":{"cost":0.5,"tokens":{"input":10,"output":1}}}`)
	is.Equal(*evs[0].CostUSD, 0.5)
	is.Equal(evs[0].Text, "step done: 10 input tokens, 1 output token, $0.5000")

	evs, _ = logLine(t, "gemini", `{"type":"tool_result","timestamp":"t","tool_id":"x","status":"error","error":{"message":"Tool execution denied by policy."}}`)
	is.True(evs[0].Denied) // the policy engine refused it
	is.Equal(evs[0].Error, "Tool execution denied by policy.")

	_, ok = logLine(t, "gemini", `{"type":"result","status":"success"}`)
	is.True(!ok) // Gemini's events carry a timestamp
	_, ok = logLine(t, "command", "plain text")
	is.True(!ok) // the command's other lines are shown as they are
}

// FuzzLogParsers feeds arbitrary streams to every backend's log parser:
// it must never panic, report only known kinds, and report nothing of a
// line that is not its stream.
func FuzzLogParsers(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	more, _ := filepath.Glob("testdata/*/*.jsonl")
	for _, name := range append(files, more...) {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(`{"type":"item.completed","item":{"type":"command_execution","exit_code":"1","command":["bash","-lc","x"]}}`))
	f.Add([]byte(`{"type":"result","is_error":true,"duration_ms":9223372036854775807,"num_turns":-1,"total_cost_usd":"x"}`))
	f.Add([]byte(`{"type":"tool_use","sessionID":"s","part":{"state":{"status":"completed","metadata":{"exit":1e99}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range Names() {
			p, _ := NewLogParser(name)
			for line := range bytes.SplitSeq(data, []byte("\n")) {
				evs, ok := p.Log(line)
				if !ok && len(evs) > 0 {
					t.Fatalf("%s: events of a line that is not its stream: %q", name, line)
				}
				for _, ev := range evs {
					if !slices.Contains(logKinds, ev.Kind) {
						t.Fatalf("%s: kind %q from %q", name, ev.Kind, line)
					}
					if ev.Shell && ev.Input != "" {
						t.Fatalf("%s: a shell call with an input: %q", name, line)
					}
					if ev.ExitCode != nil && ev.IsError != (*ev.ExitCode != 0) {
						t.Fatalf("%s: exit code %d but error %v: %q", name, *ev.ExitCode, ev.IsError, line)
					}
				}
			}
		}
	})
}

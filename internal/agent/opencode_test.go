package agent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestOpencodeParserFixtures(t *testing.T) {
	checkFixtures(t, Opencode{Now: clock}, "opencode-*.jsonl", []fixtureCase{
		{
			file: "opencode-success.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: promiseText,
				CostUSD:    ptr(0.0214 + 0.0097),
				Usage:      Usage{InputTokens: 1203 + 152, OutputTokens: 118 + 37, CacheReadTokens: 17112 + 18412},
				Turns:      2,
				SessionID:  "ses_7a1b2c3d4e5fXyZaBcDeFgHi",
				Commands:   []string{closeCmd},
				ToolCalls:  1,
			},
			reason: "finished",
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventText, EventResult},
		},
	})
}

func TestOpencodeParserEventDetails(t *testing.T) {
	is := is.New(t)
	_, evs := parseFixture(t, Opencode{Now: clock}, "opencode-success.jsonl", 0, "")
	is.Equal(evs[0].SessionID, "ses_7a1b2c3d4e5fXyZaBcDeFgHi")
	is.Equal(evs[1].Tool, "bash")
	is.Equal(evs[1].ToolID, "call_Qm9vQmFyQmF6MDAx")
	is.Equal(evs[1].Command, closeCmd)
	is.Equal(evs[2].Text, "✓ Closed bd-a1b2: Implemented retry backoff; tests pass\n")
	is.Equal(evs[4].Text, promiseText)
}

func TestOpencodeParserClassification(t *testing.T) {
	const step = `{"type":"step_finish","sessionID":"s1","part":{"type":"step-finish","reason":"stop","cost":0.01,"tokens":{"input":1,"output":1}}}`
	errLine := func(e string) string { return `{"type":"error","timestamp":1,"sessionID":"s1","error":` + e + `}` }
	checkClasses(t, Opencode{Now: clock}, []classCase{
		{name: "429 with retry-after", exit: 1, lines: []string{errLine(
			`{"name":"APIError","data":{"message":"Too Many Requests","statusCode":429,"isRetryable":true,"responseHeaders":{"retry-after":"120"}}}`)},
			status: StatusRateLimited, reason: "rate limited", resetAt: fixedNow.Add(2 * time.Minute)},
		{name: "429 with retry-after-ms", exit: 1, lines: []string{errLine(
			`{"name":"APIError","data":{"message":"slow down","statusCode":429,"responseHeaders":{"retry-after-ms":"1500"}}}`)},
			status: StatusRateLimited, resetAt: fixedNow.Add(1500 * time.Millisecond)},
		{name: "quota text without status", exit: 1, lines: []string{errLine(
			`{"name":"UnknownError","data":{"message":"You exceeded your current quota, please check your plan"}}`)},
			status: StatusRateLimited, reason: "quota"},
		{name: "provider auth", exit: 1, lines: []string{errLine(
			`{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"credentials expired"}}`)},
			status: StatusFatal, reason: "opencode auth login"},
		{name: "401", exit: 1, lines: []string{errLine(`{"name":"APIError","data":{"message":"nope","statusCode":401}}`)},
			status: StatusFatal, reason: "cannot authenticate"},
		{name: "model not found", exit: 1, lines: []string{errLine(
			`{"name":"ProviderModelNotFoundError","data":{"providerID":"openai","modelID":"gpt-9"}}`)},
			status: StatusFatal, reason: "rejected the model"},
		{name: "server error", exit: 1, lines: []string{errLine(`{"name":"APIError","data":{"message":"upstream","statusCode":502,"isRetryable":true}}`)},
			status: StatusRateLimited, transient: true, resetAt: fixedNow.Add(DefaultTransientBackoff)},
		{name: "retryable without status", exit: 1, lines: []string{errLine(`{"name":"APIError","data":{"message":"hiccup","isRetryable":true}}`)},
			status: StatusRateLimited, transient: true, resetAt: fixedNow.Add(DefaultTransientBackoff)},
		{name: "bad request is the agent's", exit: 1, lines: []string{step, errLine(
			`{"name":"APIError","data":{"message":"prompt is too long","statusCode":400,"isRetryable":false}}`)},
			status: StatusAgentError, reason: "opencode error APIError: prompt is too long"},
		{name: "aborted", exit: 1, lines: []string{errLine(`{"name":"MessageAbortedError","data":{"message":"Aborted"}}`)},
			status: StatusCrashed, reason: "aborted"},
		{name: "bare error string", exit: 1, lines: []string{errLine(`"boom"`)},
			status: StatusAgentError, reason: "boom"},
		{name: "steps and exit 0 without done", lines: []string{step}, status: StatusOK},
		{name: "steps then a non-zero exit", exit: 1, lines: []string{step}, stderr: "Error: session failed\n",
			status: StatusAgentError, reason: "exited with code 1: Error: session failed"},
		{name: "no prompt", exit: 1, stderr: "Error: You must provide a message or a command\n",
			status: StatusFatal, reason: "no prompt"},
		{name: "no api key on stderr", exit: 1, stderr: "Error: No API key found for provider anthropic\n",
			status: StatusFatal, reason: "cannot authenticate"},
		{name: "too old for the command line", exit: 1, stderr: "Unknown argument: format\n",
			status: StatusFatal, reason: "npm install -g opencode-ai@latest"},
		{name: "killed before any step", exit: -1, lines: []string{`{"type":"step_start","sessionID":"s1","part":{}}`},
			status: StatusCrashed, reason: "killed by a signal"},
		{name: "garbage", exit: 2, lines: []string{"x", `{"type":"future"}`, `{"type":"tool_use","part":7}`},
			status: StatusCrashed, reason: "exit code 2"},
	})
}

func TestOpencodeParserTools(t *testing.T) {
	is := is.New(t)
	tool := func(id, name, status, input, extra string) string {
		return `{"type":"tool_use","sessionID":"s1","part":{"type":"tool","callID":"` + id + `","tool":"` + name +
			`","state":{"status":"` + status + `","input":` + input + extra + `}}}`
	}
	got := feed(Opencode{Now: clock}.NewParser(), 0, "",
		tool("c1", "bash", "error", `{"command":"bd delete bd-1"}`,
			`,"error":"The user has specified a rule which prevents you from using this specific tool call."`),
		tool("c1", "bash", "error", `{"command":"bd delete bd-1"}`, `,"error":"again"`), // the same call again
		tool("c2", "read", "completed", `{"filePath":"a.go"}`, `,"output":"package a"`),
		tool("c3", "bash", "error", `{"command":"false"}`, `,"error":"exit 1"`),
		`{"type":"step_finish","sessionID":"s1","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":5,"cache":{"read":6,"write":7}}}}`,
	)
	is.Equal(got.Status, StatusOK)
	is.Equal(got.Commands, []string{"bd delete bd-1", "false"})
	is.Equal(got.ToolCalls, 3)
	is.Equal(got.Denials, []Denial{{Tool: "bash", ToolID: "c1", Command: "bd delete bd-1"}})
	is.Equal(got.Usage, Usage{InputTokens: 3, OutputTokens: 9, CacheReadTokens: 6, CacheWriteTokens: 7})
	is.True(got.CostUSD == nil) // no step reported a cost
	is.Equal(got.SessionID, "s1")
}

func TestOpencodeCommand(t *testing.T) {
	is := is.New(t)
	inv := Invocation{Mode: "build", IssueID: "bd-1", Iteration: 1, Attempt: 1, Prompt: "go", Model: "anthropic/claude-sonnet-4-5",
		DenyBash: []string{"bd delete", "bd  dep remove", "bd delete"}}
	spec, err := Opencode{}.Command(inv)
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"opencode", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5"})
	is.Equal(spec.Stdin, "go")
	is.Equal(spec.Env[:4], []string{"RALPH_MODE=build", "RALPH_ISSUE_ID=bd-1", "RALPH_ITERATION=1", "RALPH_ATTEMPT=1"})
	is.Equal(len(spec.Env), 5)
	cfg, ok := strings.CutPrefix(spec.Env[4], OpencodeConfigEnv+"=")
	is.True(ok)
	var parsed struct {
		Permission struct{ Bash map[string]string }
	}
	is.NoErr(json.Unmarshal([]byte(cfg), &parsed))
	is.Equal(parsed.Permission.Bash, map[string]string{
		"bd delete": "deny", "bd delete *": "deny", "bd dep remove": "deny", "bd dep remove *": "deny",
	})

	// opencode takes its project directory from $PWD: the run's
	// directory is passed there, so ralphd's own PWD never leaks in.
	dir := t.TempDir()
	inv.Dir = dir
	spec, err = Opencode{}.Command(inv)
	is.NoErr(err)
	is.True(slices.Contains(spec.Env, "PWD="+dir))

	// Nothing denied: no config.
	spec, err = Opencode{Bin: "/opt/opencode"}.Command(Invocation{Mode: "plan", Prompt: "p"})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"/opt/opencode", "run", "--format", "json"})
	is.True(!slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, OpencodeConfigEnv) }))
}

func FuzzOpencodeParser(f *testing.F) {
	fuzzParser(f, func() Parser { return Opencode{Now: clock}.NewParser() }, false,
		`{"type":"error","error":{"name":"APIError","data":{"statusCode":429,"responseHeaders":{"retry-after":"1e300"}}}}`,
		`{"type":"step_finish","part":{"cost":"x","tokens":{"input":-5}}}`,
	)
}

func BenchmarkOpencodeParser(b *testing.B) {
	benchParser(b, Opencode{Now: clock}, "opencode-success.jsonl")
}

// TestOpencodeUnpricedCost: opencode 1.18.33 writes "cost":0 on every
// step for a model without a price (a custom provider, as in the
// end-to-end tests): tokens were spent, so the cost is unknown, not $0.
func TestOpencodeUnpricedCost(t *testing.T) {
	is := is.New(t)
	p := Opencode{Now: clock}.NewParser()
	p.Line([]byte(`{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"total":111,"input":100,"output":11,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}`))
	o := p.Finish(0, "")
	is.True(o.CostUSD == nil)                 // absent, not invented
	is.Equal(o.Usage.InputTokens, int64(100)) // tokens are still read
	is.Equal(o.Usage.OutputTokens, int64(11))

	p = Opencode{Now: clock}.NewParser()
	p.Line([]byte(`{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":100,"output":11},"cost":0.25}}`))
	o = p.Finish(0, "")
	is.True(o.CostUSD != nil && *o.CostUSD == 0.25) // a priced run keeps its cost
}

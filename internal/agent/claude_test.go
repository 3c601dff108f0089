package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // reset-time tests name zones; keep them hermetic

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/text"
)

// fixedNow is the clock of the parser tests: 2026-11-21 10:00 UTC, before
// the reset time in claude-rate-limited.jsonl (15:00 Berlin = 14:00 UTC).
var fixedNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func clock() time.Time { return fixedNow }

func ptr(f float64) *float64 { return &f }

// parseFile feeds a fixture to a fresh Claude parser.
func parseFile(t *testing.T, name string, exitCode int, stderr string) (Outcome, []Event) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := Claude{Now: clock}.NewParser()
	var evs []Event
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		evs = append(evs, p.Line(line)...)
	}
	return p.Finish(exitCode, stderr), evs
}

func kinds(evs []Event) []EventKind {
	var k []EventKind
	for _, e := range evs {
		k = append(k, e.Kind)
	}
	return k
}

func TestClaudeParserFixtures(t *testing.T) {
	closeCmd := `bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"`
	type fixtureCase struct {
		file   string
		exit   int
		want   Outcome
		reason string // a substring of Outcome.Reason
		events []EventKind
	}
	tests := []fixtureCase{
		{
			file: "claude-success.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: "Closed bd-a1b2. All tasks in the plan are done.\n\n<promise>COMPLETE</promise>",
				CostUSD:    ptr(0.0871345),
				Usage:      Usage{InputTokens: 10, OutputTokens: 412, CacheReadTokens: 32224, CacheWriteTokens: 2990},
				Turns:      3,
				SessionID:  "3f1c9a2e-7b4d-4e8a-9c21-5d6e7f809a1b",
				Commands:   []string{closeCmd},
				ToolCalls:  1,
			},
			events: []EventKind{EventInit, EventText, EventToolCall, EventToolResult, EventText, EventResult},
		},
		{
			file: "claude-error-max-turns.jsonl",
			exit: 1,
			want: Outcome{
				Status:    StatusAgentError,
				CostUSD:   ptr(0.0412),
				Usage:     Usage{InputTokens: 8, OutputTokens: 233, CacheReadTokens: 29414, CacheWriteTokens: 3021},
				Turns:     2,
				SessionID: "8d2e4f60-1a3b-4c5d-8e7f-90a1b2c3d4e5",
				Commands:  []string{"go test ./..."},
				ToolCalls: 1,
				ExitCode:  1,
			},
			reason: "error_max_turns: Reached maximum number of turns (2)",
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventResult},
		},
		{
			file: "claude-permission-denied.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: "Deleting issues is not permitted in this mode; I marked bd-c3d4 as a duplicate in my notes instead.",
				CostUSD:    ptr(0.0123),
				Usage:      Usage{InputTokens: 6, OutputTokens: 95, CacheReadTokens: 15100, CacheWriteTokens: 400},
				Turns:      2,
				SessionID:  "c6d7e8f9-a0b1-4c2d-8e3f-4a5b6c7d8e9f",
				Commands:   []string{"bd delete bd-c3d4 --force"},
				ToolCalls:  1,
				Denials:    []Denial{{Tool: "Bash", ToolID: "toolu_01DenyA", Command: "bd delete bd-c3d4 --force"}},
			},
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventText, EventResult},
		},
		{
			file: "claude-rate-limited.jsonl",
			want: Outcome{
				Status:     StatusRateLimited,
				ResultText: "You've hit your limit · resets 3pm (Europe/Berlin)",
				CostUSD:    ptr(0),
				Turns:      1,
				SessionID:  "a4b5c6d7-e8f9-4a0b-8c1d-2e3f4a5b6c7d",
				ResetAt:    time.Unix(1795366800, 0),
			},
			reason: "You've hit your limit",
			events: []EventKind{EventInit, EventRateLimit, EventText, EventError, EventResult},
		},
		{
			file: "claude-api-error-429.jsonl",
			want: Outcome{
				Status:     StatusRateLimited,
				ResultText: "API Error: Rate limit reached",
				CostUSD:    ptr(0),
				Turns:      1,
				SessionID:  "b5c6d7e8-f9a0-4b1c-8d2e-3f4a5b6c7d8e",
			},
			reason: "Rate limit reached",
			events: []EventKind{EventInit, EventText, EventError, EventResult},
		},
		{
			file: "real-claude-2.1.197-not-logged-in.jsonl",
			exit: 1,
			want: Outcome{
				Status:     StatusFatal,
				ResultText: "Not logged in · Please run /login",
				CostUSD:    ptr(0),
				Turns:      1,
				SessionID:  "697ce5a3-0b7a-47b8-98cb-026686262384",
				ExitCode:   1,
			},
			reason: "Not logged in",
			events: []EventKind{EventInit, EventText, EventError, EventResult},
		},
		{
			file: "real-claude-2.1.197-scripted-api-tool-use.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: "All done. <promise>COMPLETE</promise>",
				CostUSD:    ptr(0.000525),
				Usage:      Usage{InputTokens: 20, OutputTokens: 10},
				Turns:      2,
				SessionID:  "67bb101f-9a16-4ce6-a96b-d71ce6342ed7",
				Commands:   []string{"echo hello-from-tool > /tmp/touched; echo done"},
				ToolCalls:  1,
			},
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventText, EventResult},
		},
		{
			// Amp speaks the Claude subset: no cost, Bash input key "cmd".
			file: "amp-success.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: "Closed bd-a1b2. All tasks in the plan are done.\n\n<promise>COMPLETE</promise>",
				Turns:      2,
				SessionID:  "T-019a7c41-2e3f-7a4b-9c5d-6e7f8a9b0c1d",
				Commands:   []string{closeCmd},
				ToolCalls:  1,
			},
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventText, EventResult},
		},
	}

	// Every Claude fixture must have a row.
	files, _ := filepath.Glob("testdata/claude-*.jsonl")
	real, _ := filepath.Glob("testdata/real-claude-*.jsonl") // the other CLIs': TestRealCLIStreams
	for _, f := range append(files, real...) {
		if !slices.ContainsFunc(tests, func(tt fixtureCase) bool { return tt.file == filepath.Base(f) }) {
			t.Errorf("fixture %s has no expected outcome", f)
		}
	}

	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			got, evs := parseFile(t, tt.file, tt.exit, "")
			is.Equal(got.Status, tt.want.Status)
			is.True(strings.Contains(got.Reason, tt.reason)) // reason
			is.Equal(got.ResultText, tt.want.ResultText)
			if tt.want.CostUSD == nil {
				is.True(got.CostUSD == nil) // no cost invented
			} else {
				is.True(got.CostUSD != nil)
				is.Equal(*got.CostUSD, *tt.want.CostUSD)
			}
			is.Equal(got.Usage, tt.want.Usage)
			is.Equal(got.Turns, tt.want.Turns)
			is.Equal(got.SessionID, tt.want.SessionID)
			is.True(got.ResetAt.Equal(tt.want.ResetAt)) // reset time
			is.Equal(got.Commands, tt.want.Commands)
			is.Equal(got.ToolCalls, tt.want.ToolCalls)
			is.Equal(got.Denials, tt.want.Denials)
			is.Equal(got.ExitCode, tt.want.ExitCode)
			is.Equal(got.Transient, false)
			is.Equal(kinds(evs), tt.events)
		})
	}
}

func TestClaudeParserEventDetails(t *testing.T) {
	is := is.New(t)
	_, evs := parseFile(t, "claude-success.jsonl", 0, "")
	is.Equal(evs[0].SessionID, "3f1c9a2e-7b4d-4e8a-9c21-5d6e7f809a1b")
	is.Equal(evs[2].Tool, "Bash")
	is.Equal(evs[2].ToolID, "toolu_01XyZaBcDeFgHiJkLmNoPq01")
	is.Equal(evs[2].Command, `bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"`)
	is.Equal(evs[3].ToolID, "toolu_01XyZaBcDeFgHiJkLmNoPq01")
	is.Equal(evs[3].Text, "✓ Closed bd-a1b2: Implemented retry backoff; tests pass")
	is.True(!evs[3].IsError)

	_, evs = parseFile(t, "claude-rate-limited.jsonl", 0, "")
	is.Equal(evs[1].Text, "rejected five_hour")
	is.True(evs[1].IsError)
	is.True(evs[1].ResetAt.Equal(time.Unix(1795366800, 0)))

	_, evs = parseFile(t, "claude-permission-denied.jsonl", 0, "")
	is.True(evs[2].IsError) // the denied tool_result
}

// feed passes lines to p and finishes it.
func feed(p Parser, exit int, stderr string, lines ...string) Outcome {
	for _, l := range lines {
		p.Line([]byte(l))
	}
	return p.Finish(exit, stderr)
}

func TestClaudeParserClassification(t *testing.T) {
	const (
		initLine = `{"type":"system","subtype":"init","session_id":"s1"}`
		errLine  = `{"type":"result","subtype":"success","is_error":true,"result":%q,"api_error_status":%s,"session_id":"s1"}`
	)
	result := func(text, status string) string {
		b, _ := json.Marshal(text)
		return strings.Replace(strings.Replace(errLine, "%q", string(b), 1), "%s", status, 1)
	}
	tests := []struct {
		name      string
		lines     []string
		exit      int
		stderr    string
		status    Status
		reason    string
		transient bool
		resetAt   time.Time
	}{
		{
			name:   "no result, invalid key on stderr",
			lines:  []string{initLine},
			exit:   1,
			stderr: "Error: Invalid API key · Please run /login\n",
			status: StatusFatal, reason: "Invalid API key",
		},
		{
			name:   "no output at all, killed",
			exit:   -1,
			status: StatusCrashed, reason: "killed by a signal",
		},
		{
			name:   "no result, exit 0",
			lines:  []string{initLine, `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"working"}]}}`},
			stderr: "something broke\nTypeError: x is undefined\n",
			status: StatusCrashed, reason: "exit code 0) without a final result: TypeError: x is undefined",
		},
		{
			name:   "nested session refusal",
			exit:   1,
			stderr: "Error: Claude Code cannot be launched inside another Claude Code session.\n",
			status: StatusFatal, reason: "unset CLAUDECODE",
		},
		{
			name:   "overloaded 529",
			lines:  []string{initLine, result("API Error: 529 Overloaded", "529")},
			status: StatusRateLimited, reason: "transient API error 529", transient: true,
			resetAt: fixedNow.Add(DefaultTransientBackoff),
		},
		{
			name:   "server error 500 by text only",
			lines:  []string{initLine, result("API Error: 500 Internal server error", "null")},
			status: StatusRateLimited, reason: "transient API error", transient: true,
			resetAt: fixedNow.Add(DefaultTransientBackoff),
		},
		{
			name: "billing error",
			lines: []string{initLine,
				`{"type":"assistant","message":{"id":"m1","model":"<synthetic>","content":[{"type":"text","text":"Credit balance is too low"}]},"error":"billing_error"}`,
				result("Credit balance is too low", "null")},
			exit:   1,
			status: StatusFatal, reason: "billing",
		},
		{
			name:   "401 status",
			lines:  []string{result("API Error: 401 invalid x-api-key", "401")},
			status: StatusFatal, reason: "authenticate",
		},
		{
			name:   "error during execution",
			lines:  []string{`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["tool crashed"]}`},
			status: StatusAgentError, reason: "error_during_execution: tool crashed",
		},
		{
			name:   "max budget",
			lines:  []string{`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":1.5}`},
			status: StatusAgentError, reason: "error_max_budget_usd",
		},
		{
			name:   "bad request is the agent's failure",
			lines:  []string{result("API Error: 400 prompt is too long", "400")},
			status: StatusAgentError, reason: "prompt is too long",
		},
		{
			name:   "plan limit by text with zone",
			lines:  []string{result("You've hit your limit · resets 3pm (Europe/Berlin)", "null")},
			status: StatusRateLimited, reason: "hit your limit",
			resetAt: time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC),
		},
		{
			name: "rejected rate limit event, then crash",
			lines: []string{initLine,
				`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795400000}}`},
			exit:   1,
			status: StatusRateLimited, resetAt: time.Unix(1795400000, 0),
		},
		{
			name: "allowed warning does not limit a success",
			lines: []string{initLine,
				`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1795400000}}`,
				`{"type":"result","subtype":"success","is_error":false,"result":"done"}`},
			status: StatusOK,
		},
		{
			name:   "success even with exit 1",
			lines:  []string{`{"type":"result","subtype":"success","is_error":false,"result":"done"}`},
			exit:   1,
			status: StatusOK,
		},
		{
			name:   "garbage only",
			lines:  []string{"not json", `{"type":`, `[1,2]`, `{"type":"unknown_future_type"}`, ""},
			exit:   2,
			status: StatusCrashed, reason: "exit code 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := feed(Claude{Now: clock}.NewParser(), tt.exit, tt.stderr, tt.lines...)
			is.Equal(got.Status, tt.status)
			is.True(strings.Contains(got.Reason, tt.reason)) // reason contains the expected text
			is.Equal(got.Transient, tt.transient)
			is.True(got.ResetAt.Equal(tt.resetAt)) // reset time
		})
	}
}

func TestClaudeParserCountsAndUsageWithoutResult(t *testing.T) {
	is := is.New(t)
	p := Claude{Now: clock}.NewParser()
	got := feed(p, -1, "",
		// One message split over two lines repeats its usage: count it once.
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":5,"output_tokens":2}}}`,
		// The same tool call seen twice counts once.
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":5,"output_tokens":2}}}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"x"}},{"type":"tool_use","id":"t3","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":100}}}`,
	)
	is.Equal(got.Status, StatusCrashed)
	is.Equal(got.Commands, []string{"ls", "go test ./..."})
	is.Equal(got.ToolCalls, 3)
	is.Equal(got.Usage, Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 100})
	is.True(got.CostUSD == nil)
}

func TestClaudeCommand(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	inv := Invocation{
		Mode: "build", IssueID: "bd-1", Iteration: 4, Attempt: 2,
		Prompt: "do the work", Dir: dir, Model: "opus",
		ScratchDir:   filepath.Join(dir, "scratch"),
		DenyBash:     []string{"bd delete", " bd  dep remove "},
		HookArgv:     []string{"/usr/local/bin/ralphd", "hook", "pre-tool-use", "it's"},
		MaxBudgetUSD: 2.5,
	}
	spec, err := Claude{}.Command(inv)
	is.NoErr(err)
	settings := filepath.Join(inv.ScratchDir, ClaudeSettingsFile)
	is.Equal(spec.Argv, []string{
		"claude", "-p", "--output-format", "stream-json", "--verbose",
		"--model", "opus",
		"--settings", settings,
		"--max-budget-usd", "2.5",
		"--disallowedTools=Bash(bd delete:*),Bash(bd dep remove:*)",
		"--allowedTools=" + strings.Join(DefaultClaudeTools(), ","),
	})
	is.Equal(spec.Stdin, "do the work")
	is.Equal(spec.Env, []string{"RALPH_MODE=build", "RALPH_ISSUE_ID=bd-1", "RALPH_ITERATION=4", "RALPH_ATTEMPT=2"})

	raw, err := os.ReadFile(settings)
	is.NoErr(err)
	var s struct {
		Permissions struct{ Allow, Deny []string }
		Hooks       map[string][]struct {
			Matcher string
			Hooks   []struct {
				Type, Command string
				Timeout       int
			}
		}
	}
	is.NoErr(json.Unmarshal(raw, &s))
	is.Equal(s.Permissions.Deny, []string{"Bash(bd delete:*)", "Bash(bd dep remove:*)"})
	is.Equal(s.Permissions.Allow, DefaultClaudeTools())
	is.Equal(len(s.Hooks["PreToolUse"]), 1)
	h := s.Hooks["PreToolUse"][0]
	is.Equal(h.Matcher, "Bash")
	is.Equal(h.Hooks[0].Type, "command")
	is.Equal(h.Hooks[0].Command, `/usr/local/bin/ralphd hook pre-tool-use 'it'\''s'`)

	// No scratch dir: the same settings go inline.
	inv.ScratchDir = ""
	inv.Model = ""
	inv.MaxBudgetUSD = 0
	spec, err = Claude{Bin: "/opt/claude", AllowedTools: []string{"Read"}}.Command(inv)
	is.NoErr(err)
	is.Equal(spec.Argv[0], "/opt/claude")
	is.Equal(spec.Argv[5], "--settings")
	is.True(json.Valid([]byte(spec.Argv[6])))
	is.Equal(spec.Argv[len(spec.Argv)-1], "--allowedTools=Read")

	// Nothing to enforce: no settings at all.
	spec, err = Claude{}.Command(Invocation{Prompt: "p"})
	is.NoErr(err)
	is.True(!slices.Contains(spec.Argv, "--settings"))

	// A rule that cannot be expressed is refused, not silently dropped.
	_, err = Claude{}.Command(Invocation{DenyBash: []string{"bd (x)"}})
	is.True(err != nil)
}

func TestShellJoin(t *testing.T) {
	is := is.New(t)
	is.Equal(text.ShellJoin([]string{"/bin/ralphd", "hook", "pre-tool-use"}), "/bin/ralphd hook pre-tool-use")
	is.Equal(text.ShellJoin([]string{"/a b/ralphd", "", "$X", "a;b"}), `'/a b/ralphd' '' '$X' 'a;b'`)
}

func TestParseResetText(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want time.Time // zero: none found
	}{
		{"You've hit your limit · resets 3pm (Europe/Berlin)", time.Date(2026, 11, 21, 15, 0, 0, 0, berlin)},
		// 9am Berlin already passed at 10:00 UTC: the next day.
		{"You've hit your limit · resets 9am (Europe/Berlin)", time.Date(2026, 11, 22, 9, 0, 0, 0, berlin)},
		{"limit · resets 12am (Europe/Berlin)", time.Date(2026, 11, 22, 0, 0, 0, 0, berlin)},
		{"resets 12pm (UTC)", time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)},
		{"resets at 3:30 pm", time.Date(2026, 11, 21, 15, 30, 0, 0, time.UTC)},
		{"resets 17:05", time.Date(2026, 11, 21, 17, 5, 0, 0, time.UTC)},
		{"weekly limit · resets Nov 24, 3pm (Europe/Berlin)", time.Date(2026, 11, 24, 15, 0, 0, 0, berlin)},
		{"resets Jan 2 at 9am (UTC)", time.Date(2027, 1, 2, 9, 0, 0, 0, time.UTC)},
		{"resets 3pm (Mars/Olympus)", time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)}, // unknown zone: now's zone
		{"Claude AI usage limit reached|1795366800", time.Unix(1795366800, 0)},
		{"try again in 4 days 20 hours", fixedNow.Add(116 * time.Hour)},
		{"Please retry in 30s.", fixedNow.Add(30 * time.Second)},
		{"try again at 3:04 PM.", time.Date(2026, 11, 21, 15, 4, 0, 0, time.UTC)},
		// Rounded down to the minute and read just after: now, not tomorrow.
		{"You’ve hit your usage limit. Try again at 10:00 AM.", fixedNow},
		{"You’ve hit your usage limit. Try again at 9:59 AM.", fixedNow.Add(-time.Minute)},
		{"You’ve hit your usage limit. Try again at 9:58 AM.", fixedNow.Add(24*time.Hour - 2*time.Minute)},
		// Codex names the year when the reset is on another day.
		{"You’ve hit your usage limit. Try again at Nov 22nd, 2026 12:10 AM.", time.Date(2026, 11, 22, 0, 10, 0, 0, time.UTC)},
		{"Try again at Jan 3rd, 2027 9:05 PM.", time.Date(2027, 1, 3, 21, 5, 0, 0, time.UTC)},
		{"Try again at Nov 22nd, 1999 12:10 AM.", time.Time{}},
		{"API Error: Rate limit reached", time.Time{}},
		{"resets 5", time.Time{}},
		{"resets 13pm", time.Time{}},
		{"resets 25:00", time.Time{}},
		{"", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			is := is.New(t)
			got, _, ok := parseResetText(tt.text, fixedNow)
			is.Equal(ok, !tt.want.IsZero())
			is.True(got.Equal(tt.want)) // reset time
		})
	}
}

// FuzzClaudeParser feeds arbitrary streams to the Claude parser: it must
// never panic and always produce a known status.
func FuzzClaudeParser(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, 0)
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(line, 1)
		}
	}
	f.Add([]byte(`{"type":"result","is_error":true,"api_error_status":"x","total_cost_usd":"1"}`), -1)
	valid := []Status{StatusOK, StatusAgentError, StatusRateLimited, StatusFatal, StatusCrashed}
	f.Fuzz(func(t *testing.T, data []byte, exit int) {
		for _, b := range []Backend{Claude{Now: clock}, Command{Line: "x", Now: clock}} {
			p := b.NewParser()
			for line := range bytes.SplitSeq(data, []byte("\n")) {
				for _, ev := range p.Line(line) {
					if ev.Kind == "" {
						t.Fatalf("event without kind from %q", line)
					}
				}
			}
			out := p.Finish(exit, string(data))
			if !slices.Contains(valid, out.Status) {
				t.Fatalf("%s: status %q", b.Name(), out.Status)
			}
			if out.Reason == "" {
				t.Fatalf("%s: empty reason", b.Name())
			}
		}
	})
}

// FuzzParseResetText checks the reset reading of Claude Code's texts (and
// of every other agent's, which resetFromText hands on): see checkReset.
func FuzzParseResetText(f *testing.F) {
	addResetSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkReset(t, parseResetText, s)
	})
}

func BenchmarkClaudeParser(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "claude-success.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		p := Claude{Now: clock}.NewParser()
		for _, l := range lines {
			p.Line(l)
		}
		p.Finish(0, "")
	}
}

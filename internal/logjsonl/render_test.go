package logjsonl

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

func renderString(t *testing.T, in []byte, opts RenderOptions) string {
	t.Helper()
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	var out bytes.Buffer
	if err := Render(&out, bytes.NewReader(in), opts); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return out.String()
}

// hasLines checks that out holds each of want as a whole line, in order.
func hasLines(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, w := range want {
		for i < len(lines) && lines[i] != w {
			i++
		}
		if i == len(lines) {
			t.Fatalf("missing line (or out of order) %q in:\n%s", w, out)
		}
		i++
	}
}

func TestRenderRun(t *testing.T) {
	is := is.New(t)
	log, err := os.ReadFile(writeSampleRun(t, t.TempDir()))
	is.NoErr(err)
	out := renderString(t, log, RenderOptions{})
	hasLines(t, out,
		"▶ run 2026-01-28 15:30:00 · build · claude · ralphd v0.1.0 · max 5 iterations · project abc123def456",
		"━━ iteration 1 · bd-a1b2 \"Add retry backoff\" · attempt 2/3 ━━",
		"  The tests pass. Closing the issue in beads.",
		"  $ bd close bd-a1b2 --reason \"Implemented retry backoff; tests pass\"",
		"  Closed bd-a1b2. All tasks in the plan are done.",
		"",
		"  <promise>COMPLETE</promise>",
		"  stderr: npm warn deprecated something",
		"└ iteration 1: ok · 45s · 3 turns · $0.0871 · issue closed",
		"━━ iteration 2 · bd-c3d4 \"Fix flaky test\" · attempt 1/3 ━━",
		"  $ go test ./...",
		"  ✗ Bash: --- FAIL: TestBackoff (0.00s)",
		"  ✗ agent error [error_max_turns]: Reached maximum number of turns (2)",
		"  ⛔ ralphd denied: bd delete bd-c3d4 --force — BUILD may not delete issues",
		"  ⛔ violation: priority_changed: priority 2 -> 0 [bd update bd-c3d4 --priority 0]",
		"└ iteration 2: agent_error · exit 1 · 30s · 2 turns · $0.0412 — max turns",
		"━━ iteration 3 · bd-c3d4 · attempt 2/3 ━━",
		"  ! authentication_failed: Not logged in · Please run /login",
		"└ iteration 3: fatal_config · exit 1 · 12s · 1 turn · $0.00 — Not logged in",
		"■ run end: error · 3 iterations · 1m27s — agent is not logged in",
	)
	is.True(!strings.Contains(out, "\x1b"))               // no colour unless asked
	is.True(!strings.Contains(out, "bd: bd close"))       // allowed bd calls only in verbose mode
	is.True(!strings.Contains(out, "agent result"))       // iteration_end shows the result, once
	is.True(!strings.Contains(out, "hello-from-tool"))    // (sanity: other fixtures are not mixed in)
	is.True(!strings.Contains(out, `"type":"assistant"`)) // stream-json is rendered, not dumped

	verbose := renderString(t, log, RenderOptions{Verbose: true})
	hasLines(t, verbose,
		"    → ✓ Closed bd-a1b2: Implemented retry backoff; tests pass",
		`  bd: bd close bd-a1b2 --reason "Implemented retry backoff; tests pass" (exit 0)`,
	)
}

func TestRenderColour(t *testing.T) {
	is := is.New(t)
	log, err := os.ReadFile(writeSampleRun(t, t.TempDir()))
	is.NoErr(err)
	out := renderString(t, log, RenderOptions{Color: true})
	hasLines(t, out,
		"\x1b[1m━━ iteration 1 · bd-a1b2 \"Add retry backoff\" · attempt 2/3 ━━\x1b[0m",
		"\x1b[36m  $ bd close bd-a1b2 --reason \"Implemented retry backoff; tests pass\"\x1b[0m",
		"\x1b[32m└ iteration 1: ok · 45s · 3 turns · $0.0871 · issue closed\x1b[0m",
		"\x1b[1;31m  ⛔ ralphd denied: bd delete bd-c3d4 --force — BUILD may not delete issues\x1b[0m",
		"\x1b[1;31m  ⛔ violation: priority_changed: priority 2 -> 0 [bd update bd-c3d4 --priority 0]\x1b[0m",
		"\x1b[31m└ iteration 2: agent_error · exit 1 · 30s · 2 turns · $0.0412 — max turns\x1b[0m",
	)
}

func TestRenderFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		want    []string
	}{
		{"claude-success.jsonl", []string{
			"  · init · claude code 2.1.240 · claude-sonnet-4-5-20250929",
			"  The tests pass. Closing the issue in beads.",
			`  $ bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"`,
			"  <promise>COMPLETE</promise>",
			"└ agent result: ok · 48s · 3 turns · $0.0871",
		}},
		{"claude-permission-denied.jsonl", []string{
			"  $ bd delete bd-c3d4 --force",
			"  ⛔ denied: Permission to use Bash with command bd delete bd-c3d4 --force has been denied.",
			"  Deleting issues is not permitted in this mode; I marked bd-c3d4 as a duplicate in my notes instead.",
			"└ agent result: ok · 9s · 2 turns · $0.0123",
		}},
		{"claude-error-max-turns.jsonl", []string{
			"  $ go test ./...",
			"  ✗ Bash: --- FAIL: TestBackoff (0.00s)",
			"  ✗ agent error [error_max_turns]: Reached maximum number of turns (2)",
			"└ agent result: error · 31s · 2 turns · $0.0412",
		}},
		{"claude-rate-limited.jsonl", []string{
			"  ⏳ rate limit: rejected (five_hour), resets 2026-11-22 17:00:00",
			"  ! rate_limit: You've hit your limit · resets 3pm (Europe/Berlin)",
			"└ agent result: error · 1s · 1 turn · $0.00",
		}},
		{"claude-api-error-429.jsonl", []string{
			"  ! rate_limit: API Error: Rate limit reached",
			"└ agent result: error · 2s · 1 turn · $0.00",
		}},
		{"real-claude-2.1.197-not-logged-in.jsonl", []string{
			"  · init · claude code 2.1.197 · claude-opus-4-8[1m]",
			"  ! authentication_failed: Not logged in · Please run /login",
			"└ agent result: error · 0s · 1 turn · $0.00",
		}},
		{"real-claude-2.1.197-scripted-api-tool-use.jsonl", []string{
			"  $ echo hello-from-tool > /tmp/touched; echo done",
			"  All done. <promise>COMPLETE</promise>",
			"└ agent result: ok · 1s · 2 turns · $0.0005",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			is := is.New(t)
			in, err := os.ReadFile(filepath.Join("testdata", tt.fixture))
			is.NoErr(err)
			out := renderString(t, in, RenderOptions{})
			hasLines(t, out, tt.want...)
			is.Equal(strings.Count(out, "└ agent result"), 1) // one result line per run
		})
	}
}

func TestRenderFallback(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opts RenderOptions
		want []string
	}{
		{"not JSON", "plain text from a bash loop\n", RenderOptions{},
			[]string{"  plain text from a bash loop"}},
		{"JSON of an unknown agent", `{"type":"thread.begun","thread_id":"t1"}` + "\n", RenderOptions{},
			[]string{`  {"type":"thread.begun","thread_id":"t1"}`}},
		{"codex", `{"type":"thread.started","thread_id":"t1"}` + "\n" +
			`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -c 'bd close e2e-a --reason \"x\"'","aggregated_output":"","exit_code":null,"status":"in_progress"}}` + "\n" +
			`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -c 'false'","aggregated_output":"boom\nmore","exit_code":1,"status":"failed"}}` + "\n" +
			`{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Done."}}` + "\n" +
			`{"type":"turn.completed","usage":{"input_tokens":400,"cached_input_tokens":0,"output_tokens":103}}` + "\n" +
			`{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}` + "\n", RenderOptions{},
			[]string{"  · codex session t1", `  $ bd close e2e-a --reason "x"`, "  ✗ exit 1: boom", "  Done.",
				"  · turn done: 400 input tokens, 103 output tokens", "  ! turn failed: unexpected status 401 Unauthorized"}},
		{"opencode", `{"type":"tool_use","timestamp":1,"sessionID":"ses_1","part":{"type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"bd show x"},"output":"ok","metadata":{"exit":0}}}}` + "\n" +
			`{"type":"tool_use","timestamp":1,"sessionID":"ses_1","part":{"type":"tool","tool":"bash","state":{"status":"error","input":{"command":"bd delete x"},"error":"The user has specified a rule which prevents you from using this specific tool call."}}}` + "\n" +
			`{"type":"text","timestamp":1,"sessionID":"ses_1","part":{"type":"text","text":"All done."}}` + "\n" +
			`{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"type":"step-finish","cost":0.5,"tokens":{"input":10,"output":2}}}` + "\n", RenderOptions{},
			[]string{"  $ bd show x", "  $ bd delete x", "  ⛔ denied: The user has specified a rule which prevents you from using this specific tool call.",
				"  All done.", "  · step done: 10 input tokens, 2 output tokens, $0.5000"}},
		{"gemini", `{"type":"init","timestamp":"2026-11-23T20:28:57.910Z","session_id":"s1","model":"auto"}` + "\n" +
			`{"type":"tool_use","timestamp":"2026-11-23T20:30:29.261Z","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"bd show e2e-a --json"}}` + "\n" +
			`{"type":"tool_result","timestamp":"2026-11-23T20:30:29.539Z","tool_id":"t1","status":"error","error":{"type":"policy","message":"Tool execution denied by policy."}}` + "\n" +
			`{"type":"message","timestamp":"2026-11-23T20:30:30.188Z","role":"assistant","content":"Closed.","delta":true}` + "\n" +
			`{"type":"result","timestamp":"2026-11-23T20:30:30.2Z","status":"success","stats":{"input_tokens":7,"output_tokens":3}}` + "\n", RenderOptions{},
			[]string{"  · gemini session s1 · model auto", "  $ bd show e2e-a --json", "  ⛔ denied: Tool execution denied by policy.", "  Closed.",
				"  · result: success · 7 input tokens, 3 output tokens"}},
		{"a truncated last line", `{"type":"assistant","message":{"content":[{"type":"te`, RenderOptions{},
			[]string{`  {"type":"assistant","message":{"content":[{"type":"te`}},
		{"a long line is cut", `{"type":"x","s":"` + strings.Repeat("a", 100) + `"}` + "\n", RenderOptions{MaxText: 20},
			[]string{`  {"type":"x","s":"aaa… (119 bytes)`}},
		{"a multi-line tool command on one line", `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"cd x &&\nmake"}}]}}` + "\n", RenderOptions{},
			[]string{"  $ cd x && ⏎ make"}},
		{"other tools show their main argument", `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"/p/main.go"}},{"type":"tool_use","id":"u","name":"TodoWrite","input":{"todos":[]}}]}}` + "\n", RenderOptions{},
			[]string{"  ▸ Read /p/main.go", `  ▸ TodoWrite {"todos":[]}`}},
		{"a tool error naming ralphd is a denial", `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true,"content":[{"type":"text","text":"ralphd: BUILD mode may not run bd delete\nmore"}]}]}}` + "\n", RenderOptions{},
			[]string{"  ⛔ denied: ralphd: BUILD mode may not run bd delete"}},
		{"terminal escapes are neutralised", `{"type":"assistant","message":{"content":[{"type":"text","text":"\u001b[2Jcleared \u202eevil"}]}}` + "\n", RenderOptions{},
			[]string{"  �[2Jcleared �evil"}},
		{"wrapped chunks", `{"type":"agent_output","stream":"stderr","chunk":2,"final":true,"line":"tail"}` + "\n", RenderOptions{},
			[]string{"  stderr [chunk 2]: tail"}},
		{"unknown events", `{"type":"loop_meta","event":"plan_changes","timestamp":"2026-01-28T15:30:00Z","data":{"created":2}}` + "\n", RenderOptions{},
			[]string{`· plan_changes {"created":2}`}},
		{"stuck and quota", `{"type":"loop_meta","event":"stuck","timestamp":"2026-01-28T15:30:00Z","data":{"issue_id":"bd-x","attempts":3,"max_attempts":3,"action":"noted"}}` + "\n" +
			`{"type":"loop_meta","event":"quota_wait_start","timestamp":"2026-01-28T15:30:00Z","data":{"reset_at":"2026-01-28T17:00:00Z","wait_seconds":5460}}` + "\n" +
			`{"type":"loop_meta","event":"quota_wait_end","timestamp":"2026-01-28T17:01:00Z","data":{"waited_seconds":5460}}` + "\n", RenderOptions{},
			[]string{"⚠ stuck: bd-x after 3/3 attempts · noted", "⏳ waiting for the quota until 2026-01-28 17:00:00 (1h31m0s)", "⏳ quota wait over after 1h31m0s"}},
		{"a refused connection", `{"type":"loop_meta","event":"network_refused","timestamp":"2026-01-28T15:30:00Z","data":{"iteration":2,"issue_id":"bd-x","host":"evil.example:443"}}` + "\n", RenderOptions{},
			[]string{"  🚫 network: refused evil.example:443 (not on the sandbox's allowlist: the agent's model API hosts and network_allow)"}},
		{"a bash loop log", `{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-28T15:30:00+01:00","data":{"iteration":1,"issue_id":"none","mode":"plan"}}` + "\n" +
			`{"type":"loop_meta","event":"iteration_end","timestamp":"2026-01-28T15:31:00+01:00","data":{"iteration":1,"exit_code":2,"duration_seconds":60}}` + "\n", RenderOptions{},
			[]string{"━━ iteration 1 · plan ━━", "└ iteration 1: failed · exit 2 · 1m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := renderString(t, []byte(tt.in), tt.opts)
			hasLines(t, out, tt.want...)
		})
	}
}

func TestRenderRaw(t *testing.T) {
	is := is.New(t)
	log, err := os.ReadFile(writeSampleRun(t, t.TempDir()))
	is.NoErr(err)
	log = append(log, "garbage \x1b tail"...)
	out := renderString(t, log, RenderOptions{Raw: true, Color: true})
	is.Equal(out, string(log)) // raw is the JSONL as it is
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("closed terminal") }

func TestRenderWriteError(t *testing.T) {
	is := is.New(t)
	log, err := os.ReadFile(writeSampleRun(t, t.TempDir()))
	is.NoErr(err)
	err = Render(errWriter{}, bytes.NewReader(bytes.Repeat(log, 200)), RenderOptions{})
	is.True(err != nil && strings.Contains(err.Error(), "closed terminal")) // the write error is returned
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// appendFile appends s to the file at path.
func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls until out contains s; the test's own deadline bounds it.
func waitFor(t *testing.T, out *syncBuffer, s string) {
	t.Helper()
	for !strings.Contains(out.String(), s) {
		select {
		case <-t.Context().Done():
			t.Fatalf("never saw %q in:\n%s", s, out.String())
		case <-time.After(time.Millisecond):
		}
	}
}

func TestFollow(t *testing.T) {
	for _, raw := range []bool{false, true} {
		name := "rendered"
		if raw {
			name = "raw"
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			log, err := os.ReadFile(writeSampleRun(t, t.TempDir()))
			is.NoErr(err)
			// Split the finished log: the first half is there when Follow
			// starts, the rest arrives later, a line cut in two, then more
			// after run_end that Follow must not show.
			lines := bytes.SplitAfter(log, []byte("\n"))
			half := bytes.Join(lines[:len(lines)/2], nil)
			rest := bytes.Join(lines[len(lines)/2:], nil)
			cutAt := bytes.LastIndex(rest, []byte(`"event":"iteration_end"`))
			is.True(cutAt > 0)

			path := filepath.Join(t.TempDir(), "run.log")
			is.NoErr(os.WriteFile(path, half, 0o600))
			var out syncBuffer
			done := make(chan error, 1)
			opts := RenderOptions{Raw: raw, Poll: time.Millisecond, Location: time.UTC}
			go func() { done <- Follow(t.Context(), path, &out, opts) }()

			firstHalf := "━━ iteration 1"
			if raw {
				firstHalf = string(lines[len(lines)/2-1])
			}
			waitFor(t, &out, firstHalf)
			appendFile(t, path, string(rest[:cutAt]))
			if !raw {
				waitFor(t, &out, "  ! authentication_failed")
				is.True(!strings.Contains(out.String(), "└ iteration 3")) // a half-written line waits
			}
			appendFile(t, path, string(rest[cutAt:]))
			appendFile(t, path, `{"type":"loop_meta","event":"after","timestamp":"2026-01-28T15:30:00Z","data":{}}`+"\n")
			is.NoErr(<-done) // Follow stops by itself after run_end

			if raw {
				is.Equal(out.String(), string(log)) // exactly the log, up to and including run_end
				return
			}
			is.Equal(out.String(), renderString(t, log, RenderOptions{})) // the same as rendering the finished log
		})
	}
}

func TestFollowStopsOnCancel(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "run.log")
	is.NoErr(os.WriteFile(path, []byte(`{"type":"loop_meta","event":"run_start","timestamp":"2026-01-28T15:30:00Z","data":{"mode":"build"}}`+"\n"), 0o600))
	ctx, cancel := context.WithCancel(t.Context())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, path, &out, RenderOptions{Poll: time.Millisecond}) }()
	waitFor(t, &out, "▶ run")
	cancel()
	is.True(errors.Is(<-done, context.Canceled)) // stops when asked

	err := Follow(t.Context(), filepath.Join(t.TempDir(), "missing.log"), &out, RenderOptions{})
	is.True(err != nil) // a missing log is an error, not an endless wait
}

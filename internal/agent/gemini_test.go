package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestGeminiParserFixtures(t *testing.T) {
	checkFixtures(t, Gemini{Now: clock}, "gemini-*.jsonl", []fixtureCase{
		{
			file: "gemini-success.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: promiseText, // the text after the last tool call, without the echoed prompt
				Usage:      Usage{InputTokens: 6670, OutputTokens: 440, CacheReadTokens: 18200},
				SessionID:  "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
				Commands:   []string{closeCmd},
				ToolCalls:  1,
			},
			reason: "finished",
			events: []EventKind{EventInit, EventText, EventToolCall, EventToolResult, EventText, EventText, EventResult},
		},
		{
			file: "gemini-error-quota.jsonl",
			exit: 1,
			want: Outcome{
				Status:    StatusRateLimited,
				SessionID: "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
				ExitCode:  1,
			},
			reason: "quota exhausted",
			events: []EventKind{EventInit, EventResult},
		},
	})
}

func TestGeminiParserEventDetails(t *testing.T) {
	is := is.New(t)
	_, evs := parseFixture(t, Gemini{Now: clock}, "gemini-success.jsonl", 0, "")
	is.Equal(evs[2].Tool, "run_shell_command")
	is.Equal(evs[2].ToolID, "run_shell_command-1795360005123-1")
	is.Equal(evs[2].Command, closeCmd)
	is.Equal(evs[3].ToolID, "run_shell_command-1795360005123-1")
	is.True(!evs[3].IsError)
	is.Equal(evs[6].Text, promiseText)

	_, evs = parseFixture(t, Gemini{Now: clock}, "gemini-error-quota.jsonl", 1, "")
	is.True(evs[1].IsError)
	is.Equal(evs[1].Text, "TerminalQuotaError: You have exhausted your daily quota on this model.")
}

func TestGeminiParserClassification(t *testing.T) {
	const initLine = `{"type":"init","session_id":"s1","model":"gemini-2.5-pro"}`
	result := func(typ, msg string) string {
		return `{"type":"result","status":"error","error":{"type":"` + typ + `","message":` + jsonString(msg) + `},"stats":{}}`
	}
	const success = `{"type":"result","status":"success","stats":{"input_tokens":5,"output_tokens":1}}`
	checkClasses(t, Gemini{Now: clock}, []classCase{
		{name: "retryable quota with delay", exit: 1, lines: []string{initLine, result("RetryableQuotaError", "Quota exceeded. Please retry in 32.5s.")},
			status: StatusRateLimited, reason: "per-minute quota", resetAt: fixedNow.Add(32500 * time.Millisecond)},
		{name: "terminal quota with reset", exit: 1, lines: []string{initLine, result("TerminalQuotaError", "Daily quota exhausted. Your quota will reset after 2h30m0s.")},
			status: StatusRateLimited, reason: "quota exhausted", resetAt: fixedNow.Add(150 * time.Minute)},
		{name: "auth by type", exit: 41, lines: []string{initLine, result("FatalAuthenticationError", "Failed to login")},
			status: StatusFatal, reason: "GEMINI_API_KEY"},
		{name: "auth by exit code only", exit: 41, stderr: "Error authenticating\n",
			status: StatusFatal, reason: "cannot authenticate"},
		{name: "invalid key by text", exit: 1, lines: []string{initLine, result("Error", "API key not valid. Please pass a valid API key.")},
			status: StatusFatal, reason: "cannot authenticate"},
		{name: "untrusted folder", exit: 55, stderr: "folder is not trusted\n",
			status: StatusFatal, reason: "trust"},
		{name: "config error", exit: 52, lines: []string{initLine, result("FatalConfigError", "bad settings.json")},
			status: StatusFatal, reason: "FatalConfigError"},
		{name: "input error", exit: 42, stderr: "No input provided via stdin.\n",
			status: StatusFatal, reason: "exit code 42"},
		{name: "sandbox error", exit: 44, status: StatusFatal, reason: "exit code 44"},
		{name: "turn limit by exit code", exit: 53, lines: []string{initLine,
			`{"type":"error","severity":"error","message":"Reached max session turns for this session."}`, success},
			status: StatusAgentError, reason: "turn limit: Reached max session turns"},
		{name: "turn limit notice with exit 0", lines: []string{initLine,
			`{"type":"error","severity":"warning","message":"Maximum session turns exceeded"}`, success},
			status: StatusAgentError, reason: "turn limit"},
		{name: "turn limit result", exit: 53, lines: []string{initLine, result("FatalTurnLimitedError", "max turns")},
			status: StatusAgentError, reason: "turn limit"},
		{name: "tool execution", exit: 54, lines: []string{initLine, result("FatalToolExecutionError", "shell crashed")},
			status: StatusAgentError, reason: "tool execution failed"},
		{name: "cancelled", exit: 130, lines: []string{initLine, result("FatalCancellationError", "Operation cancelled.")},
			status: StatusCrashed, reason: "cancelled"},
		{name: "server error", exit: 1, lines: []string{initLine, result("Error", "[API Error: got status: 503 Service Unavailable]")},
			status: StatusRateLimited, transient: true, resetAt: fixedNow.Add(DefaultTransientBackoff)},
		{name: "429 without a quota type", exit: 1, lines: []string{initLine, result("Error", "got status: 429 Too Many Requests")},
			status: StatusRateLimited},
		{name: "other error is the agent's", exit: 1, lines: []string{initLine, result("Error", "something broke")},
			status: StatusAgentError, reason: "Gemini CLI error: Error: something broke"},
		{name: "no result, exit 0", lines: []string{initLine}, status: StatusCrashed, reason: "exit code 0"},
		{name: "no result, quota on stderr", exit: 1, lines: []string{initLine}, stderr: "RESOURCE_EXHAUSTED: Quota exceeded\n",
			status: StatusRateLimited},
		{name: "too old for the command line", exit: 1, stderr: "Usage: gemini [options]\nUnknown arguments: policy\n",
			status: StatusFatal, reason: "rejected ralphd's command line: Unknown arguments: policy; upgrade it"},
		{name: "killed", exit: -1, status: StatusCrashed, reason: "killed by a signal"},
		{name: "success", lines: []string{initLine, success}, status: StatusOK},
		{name: "garbage", exit: 1, lines: []string{"{", `{"type":"result","status":7}`, `"x"`}, status: StatusAgentError},
	})
}

func TestGeminiParserResultText(t *testing.T) {
	msg := func(text string, delta bool) string {
		d := ""
		if delta {
			d = `,"delta":true`
		}
		return `{"type":"message","role":"assistant","content":` + jsonString(text) + d + `}`
	}
	const tool = `{"type":"tool_use","tool_name":"read_file","tool_id":"t1","parameters":{"absolute_path":"/a"}}`
	const success = `{"type":"result","status":"success","stats":{}}`
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"text after the tool wins", []string{msg("before ", true), tool, msg("after ", true), msg("<promise>X</promise>", true), success},
			"after <promise>X</promise>"},
		{"no text after the tool keeps the text before", []string{msg("done <promise>X</promise>", true), tool, success},
			"done <promise>X</promise>"},
		{"a whole message replaces", []string{msg("one", false), msg("two", false), success}, "two"},
		{"the echoed prompt is never the result", []string{`{"type":"message","role":"user","content":"say <promise>X</promise>"}`, success}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := feed(Gemini{Now: clock}.NewParser(), 0, "", tt.lines...)
			is.Equal(got.ResultText, tt.want)
		})
	}
}

func TestGeminiParserDenials(t *testing.T) {
	is := is.New(t)
	got := feed(Gemini{Now: clock}.NewParser(), 0, "",
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"bd delete bd-1"}}`,
		`{"type":"tool_result","tool_id":"t1","status":"error","error":{"type":"policy_violation","message":"Tool execution denied by policy."}}`,
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t2","parameters":{"command":"false"}}`,
		`{"type":"tool_result","tool_id":"t2","status":"error","error":{"type":"shell_error","message":"exit 1"}}`,
		`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t2","parameters":{"command":"false"}}`,
		`{"type":"result","status":"success","stats":{"tool_calls":5}}`,
	)
	is.Equal(got.Status, StatusOK)
	is.Equal(got.Commands, []string{"bd delete bd-1", "false"})
	is.Equal(got.Denials, []Denial{{Tool: "run_shell_command", ToolID: "t1", Command: "bd delete bd-1"}})
	is.Equal(got.ToolCalls, 5) // stats count calls the stream did not show
	is.True(got.CostUSD == nil)
}

func TestGeminiCommand(t *testing.T) {
	is := is.New(t)
	scratch := filepath.Join(t.TempDir(), "scratch")
	inv := Invocation{Mode: "build", IssueID: "bd-1", Prompt: "go", Model: "gemini-2.5-pro", ScratchDir: scratch,
		DenyBash: []string{"bd delete", ` bd  x"y\z `}}
	spec, err := Gemini{}.Command(inv)
	is.NoErr(err)
	policy := filepath.Join(scratch, GeminiPolicyFile)
	is.Equal(spec.Argv, []string{"gemini", "--output-format", "stream-json", "--approval-mode", "yolo",
		"--model", "gemini-2.5-pro", "--policy", policy})
	is.Equal(spec.Stdin, "go")
	is.Equal(spec.Env, []string{"RALPH_MODE=build", "RALPH_ISSUE_ID=bd-1", "RALPH_ITERATION=0", "RALPH_ATTEMPT=0"})
	data, err := os.ReadFile(policy)
	is.NoErr(err)
	is.Equal(string(data), `# Written by ralphd for one iteration: the commands its separation of powers
# refuses in this mode. ralphd's bd guard enforces the same policy.

[[rule]]
toolName = "run_shell_command"
commandPrefix = "bd delete"
decision = "deny"
priority = 999
denyMessage = "ralphd: `+"`bd delete`"+` is not allowed in build mode (separation of powers); leave it to a planning iteration"

[[rule]]
toolName = "run_shell_command"
commandPrefix = "bd x\"y\\z"
decision = "deny"
priority = 999
denyMessage = "ralphd: `+"`bd x\\\"y\\\\z`"+` is not allowed in build mode (separation of powers); leave it to a planning iteration"
`)

	// Nothing denied: no policy.
	spec, err = Gemini{Bin: "/opt/gemini"}.Command(Invocation{Mode: "plan", Prompt: "p", ScratchDir: t.TempDir()})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"/opt/gemini", "--output-format", "stream-json", "--approval-mode", "yolo"})
	is.True(!slices.Contains(spec.Argv, "--policy"))

	// A policy needs a scratch directory; control characters are refused.
	_, err = Gemini{}.Command(Invocation{DenyBash: []string{"bd delete"}})
	is.True(err != nil)
	_, err = Gemini{}.Command(Invocation{ScratchDir: t.TempDir(), DenyBash: []string{"bd \x7f"}})
	is.True(err != nil)
}

func FuzzGeminiParser(f *testing.F) {
	fuzzParser(f, func() Parser { return Gemini{Now: clock}.NewParser() }, true,
		`{"type":"result","status":"error","error":{"type":"RetryableQuotaError","message":"retry in 99999999999999h"}}`,
		`{"type":"message","role":"assistant","content":{"x":1},"delta":"yes"}`,
	)
}

func BenchmarkGeminiParser(b *testing.B) {
	benchParser(b, Gemini{Now: clock}, "gemini-success.jsonl")
}

// geminiHome makes a home with Gemini CLI's session file of testSession,
// as Gemini 0.61.0 names it, and returns the home and the file's path.
func geminiHome(t *testing.T) (Home, string) {
	t.Helper()
	home := t.TempDir()
	p := filepath.Join(home, ".gemini", "tmp", "repo", "chats", "session-2026-11-28T04-11-"+testSession[:8]+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	data := `{"sessionId":"` + testSession + `","projectHash":"x","kind":"main"}` + "\n" + `{"id":"m1","type":"user","content":"hi"}` + "\n"
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return Home{Dir: home, Getenv: func(string) string { return "" }}, p
}

func TestGeminiSavesAndResumesASession(t *testing.T) {
	is := is.New(t)
	h, p := geminiHome(t)
	want, err := os.ReadFile(p)
	is.NoErr(err)
	inv := Invocation{Mode: "build", Dir: "/w/repo", Home: h, ScratchDir: t.TempDir()}
	var g Gemini
	is.True(CanResume(g))
	s, err := g.SaveSession(inv, testSession)
	is.NoErr(err)
	is.Equal(s.ID, testSession)
	is.Equal(len(s.Files), 1)
	is.Equal(string(s.Files[0].Data), string(want))

	// Between the runs the agent rewrites the session file and plants
	// another that claims the id: the resume hands Gemini ralphd's copy,
	// not any file in Gemini's dir.
	is.NoErr(os.WriteFile(p, []byte("planted\n"), 0o600))
	inv.Resume, inv.Prompt = &s, "go on"
	spec, err := g.Command(inv)
	is.NoErr(err)
	is.True(!slices.Contains(spec.Argv, "--resume"))
	i := slices.Index(spec.Argv, "--session-file")
	is.True(i > 0)
	is.Equal(filepath.Dir(spec.Argv[i+1]), inv.ScratchDir)
	got, err := os.ReadFile(spec.Argv[i+1])
	is.NoErr(err)
	is.Equal(string(got), string(want))
	is.Equal(spec.Stdin, "go on")

	// A fresh run has no --session-file.
	inv.Resume = nil
	spec, err = g.Command(inv)
	is.NoErr(err)
	is.True(!slices.Contains(spec.Argv, "--session-file"))

	// GEMINI_CLI_HOME moves Gemini's dir.
	other := t.TempDir()
	is.NoErr(os.Rename(filepath.Join(h.Dir, ".gemini"), filepath.Join(other, ".gemini")))
	h.Getenv = func(k string) string {
		if k == "GEMINI_CLI_HOME" {
			return other
		}
		return ""
	}
	is.NoErr(os.WriteFile(filepath.Join(other, ".gemini", "tmp", "repo", "chats", filepath.Base(p)), want, 0o600))
	_, err = g.SaveSession(Invocation{Home: h}, testSession)
	is.NoErr(err)
}

// The agent's tries at making ralphd keep, or resume, something other
// than its own session file: each leaves nothing to resume.
func TestGeminiSaveSessionRefusesPlants(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, h Home, p string)
		id    string
	}{
		{"session file is a link to a secret", func(t *testing.T, h Home, p string) {
			secret := filepath.Join(h.Dir, "secret")
			_ = os.WriteFile(secret, []byte(`{"sessionId":"`+testSession+`"}`), 0o600)
			_ = os.Remove(p)
			_ = os.Symlink(secret, p)
		}, testSession},
		{"session file is a hard link", func(t *testing.T, h Home, p string) {
			_ = os.Link(p, filepath.Join(h.Dir, "other"))
		}, testSession},
		{"chats dir is a link", func(t *testing.T, h Home, p string) {
			d := filepath.Dir(p)
			elsewhere := filepath.Join(h.Dir, "elsewhere")
			_ = os.Rename(d, elsewhere)
			_ = os.Symlink(elsewhere, d)
		}, testSession},
		{"tmp dir is a link", func(t *testing.T, h Home, p string) {
			d := filepath.Join(h.Dir, ".gemini", "tmp")
			elsewhere := filepath.Join(h.Dir, "elsewhere")
			_ = os.Rename(d, elsewhere)
			_ = os.Symlink(elsewhere, d)
		}, testSession},
		{"a second file claims the id in another project", func(t *testing.T, h Home, p string) {
			q := filepath.Join(h.Dir, ".gemini", "tmp", "evil", "chats", "session-2026-11-28T05-00-"+testSession[:8]+".jsonl")
			_ = os.MkdirAll(filepath.Dir(q), 0o700)
			_ = os.WriteFile(q, []byte(`{"sessionId":"`+testSession+`"}`+"\n"), 0o600)
		}, testSession},
		{"the file claims another id", func(t *testing.T, h Home, p string) {
			_ = os.WriteFile(p, []byte(`{"sessionId":"`+testSession[:35]+`0"}`+"\n"), 0o600)
		}, testSession},
		{"a subagent's file", func(t *testing.T, h Home, p string) {
			_ = os.WriteFile(p, []byte(`{"sessionId":"`+testSession+`","kind":"subagent"}`+"\n"), 0o600)
		}, testSession},
		{"an id that is a path", func(t *testing.T, h Home, p string) {}, "../../../../etc/passwd"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p := geminiHome(t)
			c.plant(t, h, p)
			if s, err := (Gemini{}).SaveSession(Invocation{Dir: "/w/repo", Home: h}, c.id); err == nil {
				t.Fatalf("SaveSession kept %+v", s)
			}
		})
	}
}

// A session that is not one Gemini's SaveSession made is not handed to
// the CLI, and nothing is written outside the scratch dir.
func TestGeminiCommandRefusesForeignSessions(t *testing.T) {
	for _, s := range []Session{
		{ID: testSession, Files: []SessionFile{{Rel: "../" + geminiSessionFile(testSession), Data: []byte("x")}}},
		{ID: testSession, Files: []SessionFile{{Rel: "projects/-w/" + testSession + ".jsonl", Data: []byte("x")}}},
		{ID: testSession, Files: []SessionFile{{Rel: geminiSessionFile(testSession)}, {Rel: geminiSessionFile(testSession)}}},
		{ID: "x", Files: []SessionFile{{Rel: geminiSessionFile("x")}}},
	} {
		scratch := t.TempDir()
		if _, err := (Gemini{}).Command(Invocation{Mode: "build", ScratchDir: scratch, Resume: &s}); err == nil {
			t.Errorf("Command resumed %+v", s)
		}
		if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
			t.Errorf("Command wrote %v for %+v", ents, s)
		}
	}
}

func FuzzGeminiFileSession(f *testing.F) {
	f.Add([]byte(`{"sessionId":"` + testSession + `"}` + "\n{}"))
	f.Add([]byte(`{"sessionId":"x","kind":"subagent"}`))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		id := geminiFileSession(data)
		first, _, _ := bytes.Cut(data, []byte("\n"))
		if id != "" && !bytes.Contains(first, []byte("sessionId")) {
			t.Fatalf("geminiFileSession(%q) = %q from a line without a sessionId", data, id)
		}
	})
}

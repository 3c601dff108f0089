package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestCodexParserFixtures(t *testing.T) {
	checkFixtures(t, Codex{Now: clock}, "codex-*.jsonl", []fixtureCase{
		{
			file: "codex-success.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: promiseText,
				// 48213 input tokens of which 40960 cached.
				Usage:     Usage{InputTokens: 7253, OutputTokens: 1377, CacheReadTokens: 40960},
				Turns:     1,
				SessionID: "019a7c3e-5b2d-7f10-9a4c-2b3d4e5f6a7b",
				Commands:  []string{`bash -lc 'bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"'`},
				ToolCalls: 2, // the command and the file change
			},
			reason: "finished",
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventToolCall, EventToolResult, EventText, EventResult},
		},
		{
			file: "codex-usage-limit.jsonl",
			exit: 1,
			want: Outcome{
				Status:    StatusRateLimited,
				SessionID: "019a7c40-0c1d-7e22-8b3a-4c5d6e7f8091",
				ResetAt:   time.Date(2026, 11, 21, 15, 4, 0, 0, time.UTC), // "try again at 3:04 PM"
				ExitCode:  1,
			},
			reason: "You've hit your usage limit",
			events: []EventKind{EventInit, EventError, EventError},
		},
	})
}

func TestCodexParserEventDetails(t *testing.T) {
	is := is.New(t)
	_, evs := parseFixture(t, Codex{Now: clock}, "codex-success.jsonl", 0, "")
	is.Equal(evs[0].SessionID, "019a7c3e-5b2d-7f10-9a4c-2b3d4e5f6a7b")
	is.Equal(evs[1].Tool, "command_execution")
	is.Equal(evs[1].ToolID, "item_1")
	is.True(strings.Contains(evs[1].Command, "bd close bd-a1b2"))
	is.Equal(evs[2].Text, "✓ Closed bd-a1b2: Implemented retry backoff; tests pass\n")
	is.True(!evs[2].IsError)
	is.Equal(evs[3].Tool, "file_change")
	is.Equal(evs[6].Text, promiseText) // the result carries the final text
}

func TestCodexParserClassification(t *testing.T) {
	const started = `{"type":"thread.started","thread_id":"t1"}`
	failed := func(msg string) string { return `{"type":"turn.failed","error":{"message":` + jsonString(msg) + `}}` }
	errorLine := func(msg string) string { return `{"type":"error","message":` + jsonString(msg) + `}` }
	const completed = `{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":2}}`
	checkClasses(t, Codex{Now: clock}, []classCase{
		{name: "401", lines: []string{started, failed("unexpected status 401 Unauthorized: Missing bearer authentication")},
			exit: 1, status: StatusFatal, reason: "codex login"},
		{name: "refresh token reused", lines: []string{started, errorLine("Your access token could not be refreshed because your refresh token was already used. Please log out and sign in again.")},
			exit: 1, status: StatusFatal, reason: "cannot authenticate"},
		{name: "unknown model", lines: []string{started, failed("The model `gpt-9` does not exist or you do not have access to it.")},
			exit: 1, status: StatusFatal, reason: "rejected the model"},
		{name: "429 retries exhausted", lines: []string{started, failed("exceeded retry limit, last status: 429 Too Many Requests")},
			exit: 1, status: StatusRateLimited, reason: "429"},
		{name: "usage limit error body", lines: []string{started, failed(`usage_limit_reached: {"type":"usage_limit_reached","resets_in_seconds":3600}`)},
			exit: 1, status: StatusRateLimited, resetAt: fixedNow.Add(time.Hour)},
		{name: "usage limit in days", lines: []string{started, failed("You've hit your usage limit. Try again in 4 days 20 hours.")},
			exit: 1, status: StatusRateLimited, resetAt: fixedNow.Add(116 * time.Hour)},
		{name: "server error", lines: []string{started, failed("stream disconnected before completion: 500 Internal Server Error")},
			exit: 1, status: StatusRateLimited, transient: true, reason: "transient", resetAt: fixedNow.Add(DefaultTransientBackoff)},
		{name: "other failure is the agent's", lines: []string{started, failed("tool call failed: patch rejected")},
			exit: 1, status: StatusAgentError, reason: "codex turn failed: tool call failed"},
		{name: "reconnect notices then success", lines: []string{started, errorLine("Reconnecting... 1/5"), errorLine("Re-connecting... 2/5"), completed},
			status: StatusOK},
		{name: "error retried, then success", lines: []string{started, errorLine("stream error: 503"), completed},
			status: StatusOK},
		{name: "second turn failed after a completed one", lines: []string{started, completed, failed("You've hit your usage limit.")},
			exit: 1, status: StatusRateLimited},
		{name: "success even with exit 1", lines: []string{started, completed}, exit: 1, status: StatusOK},
		{name: "no stream, auth on stderr", exit: 1, stderr: "Error: Not logged in. Run `codex login`.\n",
			status: StatusFatal, reason: "Not logged in"},
		{name: "no stream, panic", exit: 101, stderr: "thread 'main' panicked at core/src/lib.rs\n",
			status: StatusCrashed, reason: "exit code 101) without a final result: thread 'main' panicked"},
		{name: "too old for the command line", exit: 2,
			stderr: "error: unexpected argument '--skip-git-repo-check' found\n\nUsage: codex exec [OPTIONS] [PROMPT]\n",
			status: StatusFatal, reason: "npm install -g @openai/codex@latest"},
		{name: "killed mid-turn", lines: []string{started, `{"type":"turn.started"}`}, exit: -1,
			status: StatusCrashed, reason: "killed by a signal"},
		{name: "exit 0 without a turn", lines: []string{started}, status: StatusCrashed, reason: "exit code 0"},
		{name: "garbage", lines: []string{"not json", `[1]`, `{"type":"future.event"}`, `{"type":"item.completed","item":"x"}`, ""},
			exit: 1, status: StatusCrashed},
	})
}

func TestCodexParserItems(t *testing.T) {
	is := is.New(t)
	p := Codex{Now: clock}.NewParser()
	got := feed(p, 0, "",
		`{"type":"thread.started","thread_id":"t1"}`,
		// Declined by the execpolicy: a denial, and the command still counts.
		`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"bash -lc 'bd delete bd-1'","aggregated_output":"","exit_code":null,"status":"declined"}}`,
		// started, updated, completed: one call.
		`{"type":"item.started","item":{"id":"i2","type":"command_execution","command":"go test ./...","status":"in_progress"}}`,
		`{"type":"item.updated","item":{"id":"i2","type":"command_execution","command":"go test ./...","status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"go test ./...","exit_code":1,"status":"failed"}}`,
		// An argv command, as some builds print it.
		`{"type":"item.completed","item":{"id":"i3","type":"command_execution","command":["ls","-la"],"exit_code":0,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i4","type":"mcp_tool_call","server":"github","tool":"get_issue","status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i5","type":"todo_list","items":[]}}`,
		// Older builds: item_type and assistant_message.
		`{"type":"item.completed","item":{"id":"i6","item_type":"assistant_message","text":"old <promise>COMPLETE</promise>"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":2}}`,
		`{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}`,
	)
	is.Equal(got.Status, StatusOK)
	is.Equal(got.Commands, []string{"bash -lc 'bd delete bd-1'", "go test ./...", "ls -la"})
	is.Equal(got.ToolCalls, 4)
	is.Equal(got.Denials, []Denial{{Tool: "command_execution", ToolID: "i1", Command: "bash -lc 'bd delete bd-1'"}})
	is.Equal(got.ResultText, "old <promise>COMPLETE</promise>")
	is.Equal(got.Usage, Usage{InputTokens: 11, OutputTokens: 3, CacheReadTokens: 4})
	is.Equal(got.Turns, 2)
	is.True(got.CostUSD == nil)

	p = Codex{Now: clock}.NewParser()
	var evs []Event
	for _, l := range []string{
		`{"type":"item.started","item":{"id":"i2","type":"command_execution","command":"go test","status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"go test","exit_code":2,"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"i2","type":"command_execution","command":"go test","exit_code":2,"status":"completed"}}`,
	} {
		evs = append(evs, p.Line([]byte(l))...)
	}
	is.Equal(kinds(evs), []EventKind{EventToolCall, EventToolResult}) // a repeated completion is reported once
	is.True(evs[1].IsError)                                           // non-zero exit code
}

func TestCodexCommand(t *testing.T) {
	is := is.New(t)
	// The user's real CODEX_HOME.
	real := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(real, "auth.json"), []byte(`{"tokens":"old"}`), 0o600))
	is.NoErr(os.WriteFile(filepath.Join(real, "config.toml"), []byte("model = \"o3\"\n"), 0o600))
	is.NoErr(os.Mkdir(filepath.Join(real, "sessions"), 0o700))
	is.NoErr(os.Mkdir(filepath.Join(real, "rules"), 0o700))
	is.NoErr(os.WriteFile(filepath.Join(real, "rules", "default.rules"), []byte("# user rules\n"), 0o600))

	scratch := filepath.Join(t.TempDir(), "scratch")
	inv := Invocation{
		Mode: "build", IssueID: "bd-1", Iteration: 4, Attempt: 2, Prompt: "do the work", Model: "gpt-5-codex",
		ScratchDir: scratch, DenyBash: []string{"bd delete", " bd  dep remove ", `bd x"y`},
	}
	spec, err := Codex{Home: real}.Command(inv)
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check",
		"-c", "sandbox_workspace_write.network_access=true", "--model", "gpt-5-codex", "-"})
	is.Equal(spec.Stdin, "do the work")
	home := filepath.Join(scratch, CodexHomeDir)
	// TMPDIR moves the temporary directory off the scratch dir, or Codex
	// refuses to install its sandbox helper in the CODEX_HOME there.
	is.Equal(spec.Env, []string{"RALPH_MODE=build", "RALPH_ISSUE_ID=bd-1", "RALPH_ITERATION=4", "RALPH_ATTEMPT=2",
		"CODEX_HOME=" + home, "TMPDIR=" + filepath.Join(scratch, CodexTmpDir)})
	tmpInfo, err := os.Stat(filepath.Join(scratch, CodexTmpDir))
	is.NoErr(err)
	is.True(tmpInfo.IsDir())

	rules, err := os.ReadFile(filepath.Join(home, "rules", CodexRulesFile))
	is.NoErr(err)
	is.True(strings.Contains(string(rules), "\n# ralphd: `bd delete` is not allowed in build mode (separation of powers); "+
		"leave it to a planning iteration\nprefix_rule(\n    pattern = [\"bd\", \"delete\"],\n    decision = \"forbidden\",\n)\n"))
	is.True(strings.Contains(string(rules), `pattern = ["bd", "dep", "remove"],`))
	is.True(strings.Contains(string(rules), `pattern = ["bd", "x\"y"],`)) // quotes are escaped
	is.Equal(strings.Count(string(rules), "prefix_rule("), 3)

	// Every entry of the real home is linked, the user's rules too.
	for _, name := range []string{"auth.json", "config.toml", "sessions", filepath.Join("rules", "default.rules")} {
		target, err := os.Readlink(filepath.Join(home, name))
		is.NoErr(err)
		is.Equal(target, filepath.Join(real, name))
	}
	fi, err := os.Lstat(filepath.Join(home, "rules"))
	is.NoErr(err)
	is.True(fi.IsDir()) // rules is ralphd's own folder, not a link
	// A token refresh through the overlay reaches the real file.
	is.NoErr(os.WriteFile(filepath.Join(home, "auth.json"), []byte(`{"tokens":"new"}`), 0o600))
	data, err := os.ReadFile(filepath.Join(real, "auth.json"))
	is.NoErr(err)
	is.Equal(string(data), `{"tokens":"new"}`)

	// Preparing the same iteration again keeps working.
	_, err = Codex{Home: real}.Command(inv)
	is.NoErr(err)
}

func TestCodexCommandVariants(t *testing.T) {
	is := is.New(t)
	// Nothing denied: no CODEX_HOME, no files.
	scratch := t.TempDir()
	spec, err := Codex{Bin: "/opt/codex", Sandbox: "danger-full-access"}.Command(Invocation{Mode: "plan", Prompt: "p", ScratchDir: scratch})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"/opt/codex", "exec", "--json", "--sandbox", "danger-full-access", "--skip-git-repo-check", "-"})
	for _, kv := range spec.Env {
		is.True(!strings.HasPrefix(kv, "CODEX_HOME="))
	}
	entries, err := os.ReadDir(scratch)
	is.NoErr(err)
	is.Equal(len(entries), 0)

	// The real home comes from CODEX_HOME; a missing one is made, with
	// the sessions dir the overlay links (so sessions outlive the
	// iteration, for ralphd to resume them).
	absent := filepath.Join(t.TempDir(), "absent")
	t.Setenv("CODEX_HOME", absent)
	spec, err = Codex{}.Command(Invocation{Mode: "build", ScratchDir: scratch, DenyBash: []string{"bd delete"}})
	is.NoErr(err)
	is.Equal(spec.Env[len(spec.Env)-2], "CODEX_HOME="+filepath.Join(scratch, CodexHomeDir))
	entries, err = os.ReadDir(filepath.Join(scratch, CodexHomeDir))
	is.NoErr(err)
	is.Equal(len(entries), 2) // rules/ and the link to the real sessions/
	link, err := os.Readlink(filepath.Join(scratch, CodexHomeDir, "sessions"))
	is.NoErr(err)
	is.Equal(link, filepath.Join(absent, "sessions"))

	// Inside ralphd's sandbox Codex's own is off (they cannot nest as
	// root); outside it, workspace-write lets the bd client reach ralphd's
	// socket.
	spec, err = Codex{Bin: "/opt/codex"}.Command(Invocation{Prompt: "p", Sandboxed: true})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"/opt/codex", "exec", "--json", "--sandbox", "danger-full-access", "--skip-git-repo-check", "-"})
	spec, err = Codex{Bin: "/opt/codex"}.Command(Invocation{Prompt: "p"})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"/opt/codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check",
		"-c", "sandbox_workspace_write.network_access=true", "-"})

	// Rules need a scratch directory, and a glob cannot be a prefix rule.
	_, err = Codex{}.Command(Invocation{DenyBash: []string{"bd delete"}})
	is.True(err != nil)
	_, err = Codex{}.Command(Invocation{ScratchDir: t.TempDir(), DenyBash: []string{"bd update * --priority"}})
	is.True(err != nil)
	_, err = Codex{}.Command(Invocation{ScratchDir: t.TempDir(), DenyBash: []string{"bd \x01x"}})
	is.True(err != nil)
}

func FuzzCodexParser(f *testing.F) {
	fuzzParser(f, func() Parser { return Codex{Now: clock}.NewParser() }, true,
		`{"type":"item.completed","item":{"id":"a","type":"command_execution","command":["x",1],"status":"declined"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":"x","cached_input_tokens":99}}`,
		`{"type":"turn.failed","error":{"message":"resets_at: 99999999999 resets_in_seconds: 999999999"}}`,
	)
}

func BenchmarkCodexParser(b *testing.B) {
	benchParser(b, Codex{Now: clock}, "codex-success.jsonl")
}

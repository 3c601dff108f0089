package scriptedapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

// The end-to-end tests run the real Claude Code CLI against the server.
// They skip when claude is not installed (scripts/install-claude puts it in
// .tools/claude) unless CI is set, in which case a missing claude fails.

// claudeForTest returns the claude binary, or skips (fails under CI).
func claudeForTest(t *testing.T) string {
	t.Helper()
	bin, err := FindClaude(".")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("skipping end-to-end test with the real Claude Code: %v (with CI set this is a failure)", err)
		}
		t.Fatalf("CI is set, so the end-to-end tests must run, but claude is missing: %v", err)
	}
	return bin
}

// pinnedClaudeForTest is claudeForTest for tests of behaviour specific to
// the Claude Code version the claude backend pins (agent.Claude.Verified) (retry counts, error texts): another version skips them
// (fails under CI, where scripts/install-claude pins the version).
func pinnedClaudeForTest(t *testing.T) string {
	t.Helper()
	bin := claudeForTest(t)
	out, err := exec.CommandContext(t.Context(), bin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	pinned := agent.Claude{}.Verified().Version
	if v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); v != pinned {
		if os.Getenv("CI") == "" {
			t.Skipf("skipping: these checks are for Claude Code %s, %s is %s (run scripts/install-claude)", pinned, bin, v)
		}
		t.Fatalf("CI is set: want Claude Code %s, %s is %s", pinned, bin, v)
	}
	return bin
}

// claudeRun is what one claude process printed.
type claudeRun struct {
	Exit  int
	Lines []map[string]any
}

// result returns the stream's result line.
func (r claudeRun) result(t *testing.T) map[string]any {
	t.Helper()
	for _, l := range r.Lines {
		if l["type"] == "result" {
			return l
		}
	}
	t.Fatal("the stream has no result line")
	return nil
}

// find returns the lines with the given type and subtype ("" for any).
func (r claudeRun) find(typ, subtype string) []map[string]any {
	var out []map[string]any
	for _, l := range r.Lines {
		if l["type"] == typ && (subtype == "" || l["subtype"] == subtype) {
			out = append(out, l)
		}
	}
	return out
}

// runClaude runs `claude -p --output-format stream-json --verbose
// --allowedTools=Bash` with prompt on stdin in a fresh directory and HOME,
// with only PATH from the test's environment plus env.
func runClaude(t *testing.T, bin, prompt string, env ...string) claudeRun {
	t.Helper()
	// A safety net for a broken claude, not a timing assertion.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--output-format", "stream-json", "--verbose", "--allowedTools=Bash")
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Stdin = strings.NewReader(prompt)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("run claude: %v (stderr: %s)", err, stderr.String())
	}
	run := claudeRun{Exit: cmd.ProcessState.ExitCode()}
	t.Logf("claude exit %d, stdout:\n%s\nstderr:\n%s", run.Exit, stdout.String(), stderr.String())
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stream line is not JSON: %q", line)
		}
		run.Lines = append(run.Lines, m)
	}
	return run
}

// agentRequests counts the requests that played script turns.
func agentRequests(srv *Server) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Kind == KindAgent {
			n++
		}
	}
	return n
}

// TestE2EIterations plays two iterations, one claude process each, with
// scripts chosen by the issue id in the prompt: real Bash commands run,
// their results come back to the server, and the stream reports success.
func TestE2EIterations(t *testing.T) {
	bin := claudeForTest(t)
	is := is.New(t)
	work := t.TempDir()
	marker1 := filepath.Join(work, "rd-1.touched")
	marker2 := filepath.Join(work, "rd-2.txt")
	missing := filepath.Join(work, "no-such-dir")

	srv := New(
		// Listed first but played second: scripts match on the prompt.
		Script{Name: "rd-2", Match: PromptContains("issue rd-2"), Turns: []Turn{
			Bash("echo fixed-rd-2 > " + marker2 + " && cat " + marker2),
			Say("Closed rd-2. <promise>COMPLETE</promise>").Expect(Contains("fixed-rd-2"), Succeeded()),
		}},
		Script{Name: "rd-1", Match: PromptContains("issue rd-1"), Turns: []Turn{
			Bash("touch "+marker1+" && echo touched-rd-1", "ls "+missing).Saying("Let me look around."),
			Bash("echo closing rd-1").Expect(Matches(`touched-rd-1|No such file`)),
			Say("DONE").Expect(Contains("closing rd-1"), Succeeded()),
		}},
	)
	is.NoErr(srv.Start())
	defer srv.Close()

	run1 := runClaude(t, bin, "Work on issue rd-1 and close it.", srv.Env()...)
	is.Equal(run1.Exit, 0)
	res1 := run1.result(t)
	is.Equal(res1["is_error"], false)
	// num_turns is not the number of API requests (3 here): claude 2.1.197
	// counts one turn more than there were tool results (3 here).
	is.Equal(res1["num_turns"], float64(4))
	is.Equal(res1["result"], "DONE")
	_, err := os.Stat(marker1)
	is.NoErr(err) // the first Bash command really ran

	run2 := runClaude(t, bin, "Work on issue rd-2 and close it.", srv.Env()...)
	is.Equal(run2.Exit, 0)
	res2 := run2.result(t)
	is.Equal(res2["is_error"], false)
	is.Equal(res2["num_turns"], float64(2))
	is.Equal(res2["result"], "Closed rd-2. <promise>COMPLETE</promise>")
	is.True(res1["session_id"] != res2["session_id"])
	got, err := os.ReadFile(marker2)
	is.NoErr(err)
	is.Equal(string(got), "fixed-rd-2\n")

	is.NoErr(srv.Verify()) // every turn played, every check passed
	is.Equal(agentRequests(srv), 5)

	trs := srv.ToolResults()
	is.Equal(len(trs), 4)
	is.Equal(trs[0].Script, "rd-1")
	is.Equal(trs[0].Content, "touched-rd-1")
	is.Equal(trs[0].IsError, false)
	is.Equal(trs[1].Script, "rd-1")
	is.True(strings.Contains(trs[1].Content, "No such file")) // the failing ls
	is.Equal(trs[1].IsError, true)
	is.Equal(trs[2].Content, "closing rd-1")
	is.Equal(trs[3].Script, "rd-2")
	is.Equal(trs[3].Content, "fixed-rd-2")

	// The stream shows the tool calls the server scripted.
	var cmds []string
	for _, l := range run1.find("assistant", "") {
		msg, _ := l["message"].(map[string]any)
		content, _ := msg["content"].([]any)
		for _, c := range content {
			if b, _ := c.(map[string]any); b["type"] == "tool_use" {
				in, _ := b["input"].(map[string]any)
				cmd, _ := in["command"].(string)
				cmds = append(cmds, cmd)
			}
		}
	}
	is.Equal(cmds, []string{"touch " + marker1 + " && echo touched-rd-1", "ls " + missing, "echo closing rd-1"})
}

// TestE2EFaults records how Claude Code 2.1.197 reacts to API errors.
func TestE2EFaults(t *testing.T) {
	bin := pinnedClaudeForTest(t)
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	tests := []struct {
		name         string
		script       Script
		subscription bool     // log in as a subscriber instead of with an API key
		env          []string // extra environment
		wantExit     int
		wantIsError  bool
		wantStatus   any // result.api_error_status (float64 or nil)
		wantResult   string
		wantError    string // the synthetic assistant message's "error"
		wantRequests int    // agent requests, retries included
		wantRetries  int    // system/api_retry lines
	}{
		{
			name:   "401 with retries off",
			script: Script{Turns: []Turn{Fail(InvalidKey())}, RepeatLast: true},
			env:    []string{"CLAUDE_CODE_MAX_RETRIES=0"},
			// By default claude retries a 401 ten times over about three minutes.
			wantExit: 1, wantIsError: true, wantStatus: float64(401),
			wantResult: "Invalid API key", wantError: "authentication_failed", wantRequests: 1,
		},
		{
			name:     "401 with x-should-retry false",
			script:   Script{Turns: []Turn{Fail(InvalidKey().NoRetry())}, RepeatLast: true},
			wantExit: 1, wantIsError: true, wantStatus: float64(401),
			wantResult: "Invalid API key", wantError: "authentication_failed", wantRequests: 1,
		},
		{
			name:     "429 retried inside claude, then success",
			script:   Script{Turns: []Turn{Fail(RateLimited(0)), Say("after the limit")}},
			wantExit: 0, wantIsError: false, wantStatus: nil,
			wantResult: "after the limit", wantRequests: 2, wantRetries: 1,
		},
		{
			name:     "429 with retry-after over a minute gives up at once",
			script:   Script{Turns: []Turn{Fail(RateLimited(2 * time.Minute))}, RepeatLast: true},
			wantExit: 1, wantIsError: true, wantStatus: float64(429),
			wantResult: "API Error: Request rejected (429)", wantError: "rate_limit", wantRequests: 1,
		},
		{
			name:         "subscription usage limit",
			script:       Script{Turns: []Turn{Fail(UsageLimit("five_hour", reset, time.Hour))}, RepeatLast: true},
			subscription: true,
			wantExit:     1, wantIsError: true, wantStatus: float64(429),
			wantResult: "You've hit your session limit · resets", wantError: "rate_limit", wantRequests: 1,
		},
		{
			name:     "529 three times",
			script:   Script{Turns: []Turn{Fail(Overloaded())}, RepeatLast: true},
			wantExit: 1, wantIsError: true, wantStatus: nil,
			wantResult: "API Error: Repeated 529 Overloaded errors", wantError: "server_error", wantRequests: 3, wantRetries: 2,
		},
		{
			name:     "hang until API_TIMEOUT_MS",
			script:   Script{Turns: []Turn{Fail(Hang())}, RepeatLast: true},
			env:      []string{"API_TIMEOUT_MS=1000", "CLAUDE_CODE_MAX_RETRIES=0"},
			wantExit: 1, wantIsError: true, wantStatus: nil,
			wantResult: "Request timed out", wantError: "server_error", wantRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := startServer(t, tt.script)
			env := srv.Env()
			if tt.subscription {
				env = srv.SubscriptionEnv()
			}
			run := runClaude(t, bin, "Work on issue rd-9.", append(env, tt.env...)...)

			is.Equal(run.Exit, tt.wantExit)
			res := run.result(t)
			is.Equal(res["is_error"], tt.wantIsError)
			is.Equal(res["api_error_status"], tt.wantStatus)
			text, _ := res["result"].(string)
			is.True(strings.HasPrefix(text, tt.wantResult))
			is.Equal(agentRequests(srv), tt.wantRequests)
			is.Equal(len(run.find("system", "api_retry")), tt.wantRetries)
			if tt.wantError != "" {
				var synthetic map[string]any
				for _, l := range run.find("assistant", "") {
					if l["error"] != nil {
						synthetic = l
					}
				}
				is.True(synthetic != nil)
				is.Equal(synthetic["error"], tt.wantError)
			}
			if tt.subscription {
				var rejected []map[string]any
				for _, l := range run.find("rate_limit_event", "") {
					if info, _ := l["rate_limit_info"].(map[string]any); info["status"] == "rejected" {
						rejected = append(rejected, info)
					}
				}
				is.Equal(len(rejected), 1)
				is.Equal(rejected[0]["resetsAt"], float64(reset.Unix()))
				is.Equal(rejected[0]["rateLimitType"], "five_hour")
			}
			is.NoErr(srv.Verify())
		})
	}
}

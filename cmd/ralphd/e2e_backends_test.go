package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// The end-to-end suite of the other agent CLIs: the real Codex, opencode
// and Gemini CLI (pinned and installed into .tools/ by
// scripts/install-agents) run under `ralphd build` against the scripted
// model API, in the wire format each speaks. Only the model is faked. The
// scenarios are written once in the script format of scriptedapi and
// played through each backend.

// cliBackend is how one agent CLI is pointed at the scripted server.
type cliBackend struct {
	name string
	// hangTimeout is an iteration timeout that gives the CLI time to
	// start and reach the model on a busy 2-core machine (Codex took
	// over 15 s, opencode 15 to 40 s, with other test suites running).
	hangTimeout string
	// waitsOutLimits: the CLI waits out a 429's retry-after itself,
	// however long, and says nothing in its stream meanwhile (opencode
	// 1.18.33), so ralphd never sees the limit.
	waitsOutLimits bool
	// setup writes the CLI's configuration under work and returns the
	// environment entries that point it at the server at url.
	setup func(t *testing.T, work, url string) []string
}

// scriptedKeyEnv is the variable the Codex provider config names as its
// env_key.
const scriptedKeyEnv = "RALPHD_SCRIPTED_API_KEY"

var cliBackends = []cliBackend{
	{name: "codex", hangTimeout: "40s", setup: func(t *testing.T, work, url string) []string {
		home := filepath.Join(work, "codex-home")
		writeFile(t, filepath.Join(home, "config.toml"), `model = "gpt-scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "`+url+`/v1"
env_key = "`+scriptedKeyEnv+`"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`)
		// Codex refuses to put its sandbox helper (codex-linux-sandbox)
		// in a CODEX_HOME under the temporary directory, and without it
		// every sandboxed command fails; TMPDIR moves the temporary
		// directory away from the test's.
		tmp := filepath.Join(work, "tmp")
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		return []string{"CODEX_HOME=" + home, scriptedKeyEnv + "=" + scriptedapi.DummyKey, "TMPDIR=" + tmp, allowModel(url)}
	}},
	{name: "opencode", hangTimeout: "90s", waitsOutLimits: true, setup: func(t *testing.T, work, url string) []string {
		cfg := filepath.Join(work, "opencode.json")
		writeFile(t, cfg, `{"$schema": "https://opencode.ai/config.json",
 "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
   "options": {"baseURL": "`+url+`/v1", "apiKey": "`+scriptedapi.DummyKey+`"},
   "models": {"scripted-model": {"name": "Scripted"}}}},
 "model": "scripted/scripted-model", "autoupdate": false, "share": "disabled"}
`)
		return []string{"OPENCODE_CONFIG=" + cfg, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", allowModel(url)}
	}},
	{name: "gemini", hangTimeout: "40s", setup: func(t *testing.T, work, url string) []string {
		writeFile(t, filepath.Join(work, ".gemini", "settings.json"),
			`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true}, "privacy": {"usageStatisticsEnabled": false}}`)
		return []string{"GEMINI_API_KEY=" + scriptedapi.DummyKey, "GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_CLI_TRUST_WORKSPACE=true"}
	}},
}

// allowModel lets a sandboxed agent reach the scripted model at url.
// Codex and opencode take their model's address from their own config
// files, which ralphd does not read (its backends know only the
// variables, such as OPENAI_BASE_URL), so a user who points them at
// another endpoint names it in network_allow, as this does.
func allowModel(url string) string {
	return "RALPH_NETWORK_ALLOW=" + strings.TrimPrefix(url, "http://")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cliOrSkip finds the agent CLI; a missing one skips, loudly, or fails
// under CI.
func cliOrSkip(t *testing.T, name string) string {
	t.Helper()
	wd, _ := os.Getwd()
	p, err := scriptedapi.FindAgent(wd, name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is not installed (%v): scripts/test installs it with scripts/install-agents", name, err)
		}
		t.Skipf("SKIPPING the %s end-to-end tests: %v", name, err)
	}
	// The scenarios hold for the verified version (agent.Verified, which
	// `ralphd agents` and the README show): another one fails under CI,
	// where scripts/install-agents pins it, and skips elsewhere.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil || !agent.VerifiedVersion(name, string(out)) {
		v, _ := agent.Verified(name)
		msg := fmt.Sprintf("%s --version says %q (%v); the end-to-end tests verify %s: run scripts/install-agents %s", p, strings.TrimSpace(string(out)), err, v.Version, name)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING: " + msg)
	}
	return p
}

// newCLIE2E is newE2E for another agent CLI.
func newCLIE2E(t *testing.T, b cliBackend, scripts ...scriptedapi.Script) *e2e {
	t.Helper()
	bin := cliOrSkip(t, b.name)
	bdDir := standinBin(t)
	work := t.TempDir()
	e := &e2e{t: t, home: work, repo: filepath.Join(work, "repo"), state: filepath.Join(work, "state")}
	e.srv = scriptedapi.New(scripts...)
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.srv.Close)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "CLAUDE_CODE_OAUTH") &&
			!strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "CODEX_") && !strings.HasPrefix(kv, "OPENCODE") &&
			!strings.HasPrefix(kv, "GEMINI_") && !strings.HasPrefix(kv, "GOOGLE_") {
			env = append(env, kv)
		}
	}
	e.env = append(env, b.setup(t, work, e.srv.URL())...)
	e.env = append(e.env,
		"PATH="+bdDir+string(os.PathListSeparator)+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+work, "XDG_CONFIG_HOME="+filepath.Join(work, "config"), "RALPH_STATE_DIR="+e.state,
		"GIT_AUTHOR_NAME=Test User", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test User", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_CONFIG_NOSYSTEM=1",
		"BEADS_ACTOR=Test User", "NO_COLOR=1",
	)
	if err := os.Mkdir(e.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	e.run("git", "init", "-q")
	e.bd("init", "--prefix", "e2e", "--quiet", "--non-interactive")
	return e
}

// forEachCLI runs the scenario as a subtest per agent CLI, in parallel:
// the CLIs spend most of their time starting up and waiting.
func forEachCLI(t *testing.T, scenario func(t *testing.T, b cliBackend)) {
	for _, b := range cliBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			scenario(t, b)
		})
	}
}

// The agent reads its issue, runs a check, and closes it citing the
// check: the issue is closed, the log holds the CLI's own stream lines
// verbatim, and `ralphd logs` renders them readably.
func TestE2ECLICloseWithEvidence(t *testing.T) {
	forEachCLI(t, func(t *testing.T, b cliBackend) {
		is := is.New(t)
		start := time.Now()
		e := newCLIE2E(t, b, forIssue("e2e-a",
			scriptedapi.Bash("bd show e2e-a --json"),
			scriptedapi.Bash("echo hi > hello.txt && test -s hello.txt && echo check passed").Expect(scriptedapi.Contains(`"id": "e2e-a"`)),
			scriptedapi.Bash(`bd close e2e-a --reason "test -s hello.txt passes (exit 0)"`).Expect(scriptedapi.Contains("check passed")),
			scriptedapi.Say("Closed e2e-a. <promise>COMPLETE</promise>").Expect(scriptedapi.Succeeded()),
		))
		e.bd("create", "Say hello", "--id", "e2e-a", "-p", "1", "--quiet")

		out, stderr, code := e.ralphd("build", "5", "--agent", b.name, "--log")
		t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		raw, _, _ := e.ralphd("logs", "last", "--raw")
		t.Logf("ralphd logs last --raw:\n%s", raw)
		is.NoErr(e.srv.Verify()) // the model's script ran to its end, every check held
		is.Equal(code, 0)        // all work done
		is.True(strings.Contains(out, "closed: 1 of 1 tried"))
		is.True(strings.Contains(e.bd("show", "e2e-a", "--json"), `"status": "closed"`))

		var meta, own int
		var end struct {
			Data struct {
				CostUSD *float64 `json:"cost_usd"`
				Tokens  *struct {
					Input  int64 `json:"input_tokens"`
					Output int64 `json:"output_tokens"`
				} `json:"tokens"`
			} `json:"data"`
		}
		for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
			is.True(json.Valid([]byte(line))) // every line is JSON
			switch {
			case strings.HasPrefix(line, `{"type":"loop_meta","event":"iteration_end"`):
				is.NoErr(json.Unmarshal([]byte(line), &end))
				meta++
			case strings.HasPrefix(line, `{"type":"loop_meta"`):
				meta++
			default:
				own++ // the CLI's own line, as it printed it
			}
		}
		is.True(meta >= 4)
		is.True(own >= 4)
		// Tokens are read from the stream: the scripted model reports its
		// own count of each request (scriptedapi.InputTokens), and each
		// CLI adds its requests up.
		is.True(end.Data.Tokens != nil)
		var counted int64
		for _, r := range e.srv.Requests() {
			if r.Kind == scriptedapi.KindAgent {
				counted += int64(r.InputTokens)
			}
		}
		t.Logf("%s tokens: %+v; the scripted model counted %d input tokens in %d agent requests", b.name, *end.Data.Tokens, counted, e.agentRequests())
		is.True(end.Data.Tokens.Input >= counted)
		is.True(end.Data.Tokens.Output > 0)
		// None of these CLIs reports a price for the scripted model: the
		// cost is absent, never $0.
		is.True(end.Data.CostUSD == nil)
		rendered, _, _ := e.ralphd("logs", "last")
		t.Logf("ralphd logs last:\n%s", rendered)
		is.True(strings.Contains(rendered, `bd close e2e-a --reason "test -s hello.txt passes (exit 0)"`))
		is.True(strings.Contains(rendered, "iteration 1: closed"))
		t.Logf("%s close-with-evidence took %s", b.name, time.Since(start).Round(time.Millisecond))
	})
}

// In BUILD mode the agent tries `bd dep remove` straight, then `bd update
// --priority` behind env, which no prefix rule of a CLI's permission layer
// sees: the first is refused by the CLI's own permission layer, loaded
// from ralphd's compiled policy, the second by the bd guard. Both
// refusals reach the model as the tool result, and nothing changes in bd.
func TestE2ECLIForbiddenCommandsRefused(t *testing.T) {
	forEachCLI(t, func(t *testing.T, b cliBackend) {
		is := is.New(t)
		start := time.Now()
		e := newCLIE2E(t, b, forIssue("e2e-a",
			scriptedapi.Bash("bd dep remove e2e-b e2e-c"),
			scriptedapi.Bash("env bd update e2e-b --priority 0").Expect(scriptedapi.Failed()),
			scriptedapi.Say("Both were refused; leaving a note for PLANNING.").Expect(scriptedapi.Failed(), scriptedapi.Contains("BUILD mode")),
		))
		e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
		e.bd("create", "Later", "--id", "e2e-b", "-p", "2", "--quiet")
		e.bd("create", "Blocker", "--id", "e2e-c", "-p", "3", "--quiet")
		e.bd("dep", "add", "e2e-b", "e2e-c", "--quiet")

		out, stderr, code := e.ralphd("build", "1", "--agent", b.name, "--log")
		t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		raw, _, _ := e.ralphd("logs", "last", "--raw")
		t.Logf("ralphd logs last --raw:\n%s", raw)
		for _, r := range e.srv.ToolResults() {
			t.Logf("tool result (error %v): %s", r.IsError, r.Content)
		}
		is.NoErr(e.srv.Verify())
		is.Equal(code, 3) // one iteration, work left
		results := e.srv.ToolResults()
		is.Equal(len(results), 2)
		// The first refusal is the CLI's own: ralphd's guard never saw it.
		is.True(!strings.Contains(results[0].Content, "BUILD mode"))
		b2 := e.bd("show", "e2e-b", "--json")
		is.True(strings.Contains(b2, `"priority": 2`))
		is.True(strings.Contains(b2, `"id": "e2e-c"`)) // the dependency is still there
		t.Logf("%s forbidden-commands took %s", b.name, time.Since(start).Round(time.Millisecond))
	})
}

// The API answers 401: the agent is unusable, so ralphd stops at once
// with exit 5 after that one agent run, counting no attempt.
func TestE2ECLIInvalidKey(t *testing.T) {
	forEachCLI(t, func(t *testing.T, b cliBackend) {
		is := is.New(t)
		start := time.Now()
		e := newCLIE2E(t, b, forIssue("e2e-a", scriptedapi.Fail(scriptedapi.InvalidKey())))
		e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
		out, stderr, code := e.ralphd("build", "5", "--agent", b.name)
		t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		is.NoErr(e.srv.Verify())
		is.Equal(code, 5)
		is.True(strings.Contains(stderr, "cannot authenticate"))
		is.Equal(e.agentRequests(), 1) // one run, no retry burned on it
		status, _, _ := e.ralphd("status", "--json")
		is.True(strings.Contains(status, `"attempts": []`))
		t.Logf("%s invalid-key took %s", b.name, time.Since(start).Round(time.Millisecond))
	})
}

// A usage limit that resets in an hour: no attempt is counted, ralphd
// reads the reset from the CLI's stream (never invents one), waits
// (capped here by --quota-backoff-max) and goes on. How long a wait a
// short reset costs is tested on the computation (agent.QuotaWait) and in
// the build_ratelimit_exact scenario.
func TestE2ECLIUsageLimitWaits(t *testing.T) {
	forEachCLI(t, func(t *testing.T, b cliBackend) {
		if b.waitsOutLimits {
			cliWaitsOutLimit(t, b)
			return
		}
		is := is.New(t)
		start := time.Now()
		reset := time.Now().Add(time.Hour)
		e := newCLIE2E(t, b,
			forIssue("e2e-a", scriptedapi.Fail(scriptedapi.UsageLimit("five_hour", reset, time.Hour))),
			forIssue("e2e-a",
				scriptedapi.Bash(`bd close e2e-a --reason "go test ./... passes (exit 0)"`),
				scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
			),
		)
		e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
		out, stderr, code := e.ralphd("build", "5", "--agent", b.name, "--log", "--quota-backoff-max", "2s")
		t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		is.NoErr(e.srv.Verify())
		is.Equal(code, 0)
		is.True(strings.Contains(stderr, "agent rate-limited; waiting"))
		is.True(strings.Contains(stderr, `iteration 1: e2e-a "Work" (attempt 1/3)`)) // the limited run gave its attempt back
		is.True(!strings.Contains(stderr, "attempt 2/3"))
		is.True(strings.Contains(out, "iterations: 1, closed: 1 of 1 tried"))
		raw, _, _ := e.ralphd("logs", "last", "--raw")
		m := regexp.MustCompile(`"event":"quota_wait_start".*"reset_at":"([^"]+)"`).FindStringSubmatch(raw)
		is.True(m != nil) // the wait is logged with the reset read from the stream
		got, err := time.Parse(time.RFC3339, m[1])
		is.NoErr(err)
		t.Logf("%s: reset at %s read from the stream, %s off", b.name, got, got.Sub(reset).Round(time.Second))
		is.True(got.Sub(reset) > -2*time.Minute && got.Sub(reset) < 2*time.Minute) // the CLI's reset, at most minute-rounded
		t.Logf("%s usage-limit took %s", b.name, time.Since(start).Round(time.Millisecond))
	})
}

// cliWaitsOutLimit is the usage-limit scenario for a CLI that waits out a
// limit itself: a limit 3 s away costs the run 3 s and no attempt.
func cliWaitsOutLimit(t *testing.T, b cliBackend) {
	is := is.New(t)
	start := time.Now()
	e := newCLIE2E(t, b, forIssue("e2e-a",
		scriptedapi.Fail(scriptedapi.UsageLimit("five_hour", time.Now().Add(3*time.Second), 3*time.Second)),
		scriptedapi.Bash(`bd close e2e-a --reason "go test ./... passes (exit 0)"`),
		scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded()),
	))
	e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
	out, stderr, code := e.ralphd("build", "5", "--agent", b.name)
	t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	is.NoErr(e.srv.Verify())
	is.Equal(code, 0)
	is.True(strings.Contains(out, "iterations: 1, closed: 1 of 1 tried")) // no attempt lost
	var limited, retried time.Time
	for _, r := range e.srv.Requests() {
		if r.Kind == scriptedapi.KindAgent && r.Turn == 0 {
			limited = r.At
		}
		if r.Kind == scriptedapi.KindAgent && r.Turn == 1 {
			retried = r.At
		}
	}
	t.Logf("%s retried the limited request after %s", b.name, retried.Sub(limited).Round(time.Millisecond))
	is.True(retried.Sub(limited) >= 2*time.Second) // it waited for the reset
	t.Logf("%s usage-limit took %s", b.name, time.Since(start).Round(time.Millisecond))
}

// The API hangs: the iteration timeout stops the CLI's whole process tree.
func TestE2ECLIHangTimesOut(t *testing.T) {
	forEachCLI(t, func(t *testing.T, b cliBackend) {
		is := is.New(t)
		start := time.Now()
		e := newCLIE2E(t, b, scriptedapi.Script{Name: "hang", Turns: []scriptedapi.Turn{scriptedapi.Fail(scriptedapi.Hang())}, RepeatLast: true})
		e.bd("create", "Work", "--id", "e2e-a", "-p", "1", "--quiet")
		out, stderr, code := e.ralphd("build", "1", "--agent", b.name, "--iteration-timeout", b.hangTimeout, "--stop-grace", "1s")
		t.Logf("ralphd build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
		is.Equal(code, 3)
		is.True(strings.Contains(stderr, "outcome=timeout"))
		is.True(e.agentRequests() >= 1)          // it did reach the model
		is.Equal(len(agentProcesses(e.home)), 0) // nothing of the CLI's tree survived
		t.Logf("%s hang took %s", b.name, time.Since(start).Round(time.Millisecond))
	})
}

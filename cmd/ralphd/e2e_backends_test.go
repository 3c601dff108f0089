package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent/scriptedapi"
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
	// setup writes the CLI's configuration under work and returns the
	// environment entries that point it at the server at url.
	setup func(t *testing.T, work, url string) []string
}

// scriptedKeyEnv is the variable the Codex provider config names as its
// env_key.
const scriptedKeyEnv = "RALPHD_SCRIPTED_API_KEY"

var cliBackends = []cliBackend{
	{name: "codex", setup: func(t *testing.T, work, url string) []string {
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
		return []string{"CODEX_HOME=" + home, scriptedKeyEnv + "=" + scriptedapi.DummyKey, "TMPDIR=" + tmp}
	}},
	{name: "opencode", setup: func(t *testing.T, work, url string) []string {
		cfg := filepath.Join(work, "opencode.json")
		writeFile(t, cfg, `{"$schema": "https://opencode.ai/config.json",
 "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
   "options": {"baseURL": "`+url+`/v1", "apiKey": "`+scriptedapi.DummyKey+`"},
   "models": {"scripted-model": {"name": "Scripted"}}}},
 "model": "scripted/scripted-model", "autoupdate": false, "share": "disabled"}
`)
		return []string{"OPENCODE_CONFIG=" + cfg, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1"}
	}},
	{name: "gemini", setup: func(t *testing.T, work, url string) []string {
		writeFile(t, filepath.Join(work, ".gemini", "settings.json"),
			`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true}, "privacy": {"usageStatisticsEnabled": false}}`)
		return []string{"GEMINI_API_KEY=" + scriptedapi.DummyKey, "GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_CLI_TRUST_WORKSPACE=true"}
	}},
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

// forEachCLI runs the scenario as a subtest per agent CLI.
func forEachCLI(t *testing.T, scenario func(t *testing.T, b cliBackend)) {
	for _, b := range cliBackends {
		t.Run(b.name, func(t *testing.T) { scenario(t, b) })
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
		for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
			is.True(json.Valid([]byte(line))) // every line is JSON
			if strings.HasPrefix(line, `{"type":"loop_meta"`) {
				meta++
			} else {
				own++ // the CLI's own line, as it printed it
			}
		}
		is.True(meta >= 4)
		is.True(own >= 4)
		rendered, _, _ := e.ralphd("logs", "last")
		t.Logf("ralphd logs last:\n%s", rendered)
		is.True(strings.Contains(rendered, `bd close e2e-a --reason "test -s hello.txt passes (exit 0)"`))
		is.True(strings.Contains(rendered, "iteration 1: closed"))
		t.Logf("%s close-with-evidence took %s", b.name, time.Since(start).Round(time.Millisecond))
	})
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

// Section 9: what resuming an interrupted session saves. The real agent
// CLI runs under ralphd against the scripted model API, which counts the
// input tokens of every request itself (scriptedapi.InputTokens). One
// iteration does some work, then waits on the model until ralphd's
// iteration timeout ends it. The next start either resumes that session
// (ralphd's default) or, with the kept session removed, starts afresh;
// the figure is the next attempt's input tokens, resumed ÷ fresh.

// resumeIssue is the issue the interrupted iteration works on.
const resumeIssue = "b-resume"

// resumeWork is the interrupted iteration's work before it hangs: the
// reads that build the context a fresh session pays for again.
var resumeWork = []string{
	"bd show " + resumeIssue + " --json",
	"cat README.md && git log --oneline",
	"seq 1 300 | sed 's/^/line /'", // a file read: about 3 KB of output
}

// resumeCloser closes the issue, citing evidence as ralphd's judge asks.
const resumeCloser = `bd close ` + resumeIssue + ` --reason "seq 1 300 passes (exit 0)"`

// resumeBackend is one agent CLI that resumes, and how to point it at
// the scripted API.
type resumeBackend struct {
	name string
	// timeout is an iteration timeout that lets the CLI start and reach
	// the model on a busy two-core machine (as in the end-to-end tests).
	timeout time.Duration
	// env writes the CLI's configuration under dir and returns the
	// environment entries that point it at the server srv.
	env func(dir string, srv *scriptedapi.Server) ([]string, error)
}

var resumeBackends = []resumeBackend{
	{name: "claude", timeout: 25 * time.Second, env: func(_ string, srv *scriptedapi.Server) ([]string, error) {
		return append(srv.Env(), "CLAUDE_CODE_MAX_RETRIES=0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"), nil
	}},
	{name: "codex", timeout: 40 * time.Second, env: func(dir string, srv *scriptedapi.Server) ([]string, error) {
		home, tmp := filepath.Join(dir, "codex-home"), filepath.Join(dir, "tmp")
		for _, d := range []string{home, tmp} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("make %s: %w", d, err)
			}
		}
		const keyEnv = "RALPHD_SCRIPTED_API_KEY"
		cfg := `model = "gpt-scripted"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "` + srv.URL() + `/v1"
env_key = "` + keyEnv + `"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
			return nil, fmt.Errorf("write codex config: %w", err)
		}
		// Codex will not put its sandbox helper under the temporary
		// directory; TMPDIR moves it (see e2e_backends_test.go).
		return []string{"CODEX_HOME=" + home, keyEnv + "=" + scriptedapi.DummyKey, "TMPDIR=" + tmp,
			"RALPH_NETWORK_ALLOW=" + strings.TrimPrefix(srv.URL(), "http://")}, nil
	}},
}

// attemptTokens is what the scripted API counted for one attempt.
type attemptTokens struct {
	Requests int // the agent's requests (side requests left out)
	Input    int // their input tokens, as the API counted and reported them
}

// resumeResult is section 9's measurement for one CLI.
type resumeResult struct {
	CLI     string
	Skipped string // why the CLI was not measured, or ""
	// Interrupted is the interrupted attempt, up to and with the request
	// that hung; Resumed and Fresh are the next attempt, each way.
	Interrupted, Resumed, Fresh attemptTokens
}

// measureResume runs section 9 for every CLI in resumeBackends; a CLI
// that is not installed is skipped, saying so.
func measureResume(ctx context.Context, e *benchEnv, say func(string, ...any)) ([]resumeResult, error) {
	var out []resumeResult
	for _, b := range resumeBackends {
		bin, err := scriptedapi.FindAgent(e.repo, b.name)
		if err != nil {
			say("resume: SKIPPING %s: %v", b.name, err)
			out = append(out, resumeResult{CLI: b.name, Skipped: fmt.Sprintf("%s is not installed (run scripts/install-agents %s)", b.name, b.name)})
			continue
		}
		r := resumeResult{CLI: b.name}
		for _, fresh := range []bool{false, true} {
			mode := map[bool]string{false: "resumed", true: "fresh"}[fresh]
			say("resume: %s, interrupted by the iteration timeout, then %s", b.name, mode)
			before, next, err := resumeOnce(ctx, e, b, bin, fresh)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", b.name, mode, err)
			}
			r.Interrupted = before
			if fresh {
				r.Fresh = next
			} else {
				r.Resumed = next
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// resumeOnce runs the interrupted iteration, then the next start, resumed
// or (fresh) with the kept session removed, and returns the scripted
// API's counts for the interrupted attempt and for the next one.
func resumeOnce(ctx context.Context, e *benchEnv, b resumeBackend, bin string, fresh bool) (before, next attemptTokens, err error) {
	dir, err := os.MkdirTemp(e.work, "resume-"+b.name+"-")
	if err != nil {
		return before, next, fmt.Errorf("make scratch dir: %w", err)
	}
	match := scriptedapi.PromptContains("**ID:** " + resumeIssue)
	var work []scriptedapi.Turn
	for _, c := range resumeWork {
		work = append(work, scriptedapi.Bash(c))
	}
	done := []scriptedapi.Turn{scriptedapi.Bash(resumeCloser), scriptedapi.Say("Done.").Expect(scriptedapi.Succeeded())}
	// The interrupted session: the work, a hang, then (resumed) the close.
	interrupted := append(append(append([]scriptedapi.Turn(nil), work...), scriptedapi.Fail(scriptedapi.Hang())), done...)
	// A fresh session does the work again, then closes.
	restarted := append(append([]scriptedapi.Turn(nil), work...), done...)
	srv := scriptedapi.New(
		scriptedapi.Script{Name: "interrupted", Match: match, Turns: interrupted},
		scriptedapi.Script{Name: "restarted", Match: match, Turns: restarted},
	)
	if err := srv.Start(); err != nil {
		return before, next, err
	}
	defer srv.Close()
	cliEnv, err := b.env(dir, srv)
	if err != nil {
		return before, next, err
	}
	repo, home := filepath.Join(dir, "repo"), filepath.Join(dir, "home")
	state := filepath.Join(dir, "state")
	for _, d := range []string{repo, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return before, next, fmt.Errorf("make scratch dir: %w", err)
		}
	}
	var env []string
	for _, kv := range e.env(e.pathWith(filepath.Dir(bin)), "HOME="+home, "RALPH_STATE_DIR="+state) {
		k, _, _ := strings.Cut(kv, "=")
		if !hasAnyPrefix(k, "ANTHROPIC_", "CLAUDE_CODE_", "OPENAI_", "CODEX_", "OPENCODE", "GEMINI_", "GOOGLE_", "TMPDIR") {
			env = append(env, kv) // the user's own credentials and agent settings stay out
		}
	}
	env = append(env, cliEnv...)
	steps := [][]string{
		{"git", "init", "-q"},
		{"sh", "-c", "echo '# scratch project' > README.md && git add README.md && git commit -q -m init"},
		{e.bd(), "init", "--prefix", "b", "--quiet", "--non-interactive"},
		{e.bd(), "create", "Print the lines", "--id", resumeIssue, "-p", "1", "--quiet"},
	}
	for _, s := range steps {
		if _, err := run(ctx, env, repo, s[0], s[1:]...); err != nil {
			return before, next, fmt.Errorf("make project: %w", err)
		}
	}
	build := func(args ...string) (string, int, error) {
		cmd := command(ctx, env, repo, e.ralphd(), append([]string{"build", "1", "--agent", b.name, "--log"}, args...)...)
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return buf.String(), -1, fmt.Errorf("run ralphd: %w", err)
		}
		return buf.String(), cmd.ProcessState.ExitCode(), nil
	}

	out, _, err := build("--iteration-timeout", b.timeout.String(), "--stop-grace", "1s")
	if err != nil {
		return before, next, err
	}
	if !strings.Contains(out, "outcome=timeout") || !strings.Contains(out, "kept the interrupted session") {
		return before, next, fmt.Errorf("the first iteration was not interrupted with its session kept:\n%s", tail(out, 3000))
	}
	reqs := srv.Requests()
	mark := len(reqs)
	before = count(reqs, "interrupted")
	if before.Requests != len(work)+1 {
		return before, next, fmt.Errorf("the interrupted session made %d agent requests, want %d (the work and the hang):\n%s", before.Requests, len(work)+1, tail(out, 3000))
	}
	if fresh {
		kept, _ := filepath.Glob(filepath.Join(state, "projects", "*", "attempts", "*.session"))
		if len(kept) != 1 {
			return before, next, fmt.Errorf("found %d kept sessions in %s, want 1", len(kept), state)
		}
		if err := os.Remove(kept[0]); err != nil {
			return before, next, fmt.Errorf("remove the kept session: %w", err)
		}
	}

	out, code, err := build()
	if err != nil {
		return before, next, err
	}
	resumed := strings.Contains(out, "resuming session")
	if code != 0 || resumed == fresh {
		return before, next, fmt.Errorf("the next start: exit %d, resumed %v (want exit 0, resumed %v):\n%s", code, resumed, !fresh, tail(out, 3000))
	}
	script := map[bool]string{false: "interrupted", true: "restarted"}[fresh]
	next = count(srv.Requests()[mark:], script)
	if want := len(done) + map[bool]int{false: 0, true: len(work)}[fresh]; next.Requests != want {
		return before, next, fmt.Errorf("the next attempt made %d agent requests, want %d:\n%s", next.Requests, want, tail(out, 3000))
	}
	if errs := srv.Errors(); len(errs) > 0 {
		return before, next, fmt.Errorf("the scripted model: %w", errors.Join(errs...))
	}
	return before, next, nil
}

// count adds up the agent requests of one script in reqs.
func count(reqs []scriptedapi.Request, script string) attemptTokens {
	var t attemptTokens
	for _, r := range reqs {
		if r.Kind == scriptedapi.KindAgent && r.Script == script {
			t.Requests++
			t.Input += r.InputTokens
		}
	}
	return t
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// resumeSection is section 9 of the report.
func resumeSection(rs []resumeResult, cmd string) bench.Section {
	s := bench.Section{Title: "9. Resuming an interrupted session"}
	for i, r := range rs {
		id := fmt.Sprintf("9%c", 'a'+i)
		name := fmt.Sprintf("%s: input tokens of the attempt after an interrupted iteration, resumed ÷ fresh (same run, scripted API's counts)", r.CLI)
		if r.Skipped != "" {
			s.Figures = append(s.Figures, bench.Figure{ID: id, Name: name, Value: "skipped: " + r.Skipped, Command: cmd})
			continue
		}
		ratio := bench.Ratio(float64(r.Resumed.Input), float64(r.Fresh.Input))
		s.Figures = append(s.Figures, bench.Figure{ID: id, Name: name,
			Value: fmt.Sprintf("%.2f (%d ÷ %d tokens; %d ÷ %d requests)", ratio, r.Resumed.Input, r.Fresh.Input, r.Resumed.Requests, r.Fresh.Requests),
			Goal:  "< 1", Verdict: bench.Judge(ratio < 1), Command: cmd})
	}
	var details []string
	for _, r := range rs {
		if r.Skipped == "" {
			details = append(details, fmt.Sprintf("%s: the interrupted attempt %d tokens in %d requests (the last one hung); resumed %d in %d; fresh %d in %d",
				r.CLI, r.Interrupted.Input, r.Interrupted.Requests, r.Resumed.Input, r.Resumed.Requests, r.Fresh.Input, r.Fresh.Requests))
		}
	}
	s.Body = fmt.Sprintf(`**Method.** The real agent CLI runs under `+"`ralphd build 1`"+` against the scripted model API
(`+"`internal/testkit/scriptedapi`"+`), which counts each request's input tokens itself, one rule for every API shape
(`+"`scriptedapi.InputTokens`"+`: the bytes of the request's conversation, its `+"`messages`"+`, `+"`input`"+` or `+"`contents`"+`,
÷ 4; the system prompt and tool definitions, the same in every request, are left out), and reports that count in
the API's own usage fields. The iteration runs %d commands (%s), then its next request hangs until the iteration
timeout (%s) ends it, and ralphd keeps the session. A second `+"`ralphd build 1`"+` then either resumes it (ralphd's
default; the resumed session closes the issue in two requests) or, with the kept session file removed, starts a
fresh session, which does the same %d commands again before closing. Each way runs from a fresh scratch project. The
figure is the agent's input tokens in that next attempt, resumed ÷ fresh; side requests are left out. The
fresh session's rework is scripted as the same reads, the cost of rebuilding the context the interrupted session had;
a real model's rework varies. With prompt caching a real API bills a cached prefix at a fraction of the price, so
these are tokens sent, not dollars.

%s.
`, len(resumeWork), "`"+strings.Join(resumeWork, "`, `")+"`", durations(resumeBackends), len(resumeWork), strings.Join(details, "; "))
	if len(details) == 0 {
		s.Body += "\nNo CLI was measured: none of them is installed here (scripts/install-agents NAME installs the pinned one).\n"
	}
	return s
}

// durations lists each backend's iteration timeout.
func durations(bs []resumeBackend) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("%s for %s", b.timeout, b.name)
	}
	return strings.Join(parts, ", ")
}

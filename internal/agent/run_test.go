//go:build linux

package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/proc"
)

// testEnv is a small, predictable base environment for agents.
func testEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + os.TempDir(), "LC_ALL=C"}
}

// collector records what the sinks receive. Run calls OnStdout/OnEvent on
// one goroutine and OnStderr on another, so it locks.
type collector struct {
	mu     sync.Mutex
	stdout []string
	stderr []string
	events []Event
}

func (c *collector) opts(o RunOptions) RunOptions {
	o.OnStdout = func(l []byte) { c.mu.Lock(); c.stdout = append(c.stdout, string(l)); c.mu.Unlock() }
	o.OnStderr = func(l []byte) { c.mu.Lock(); c.stderr = append(c.stderr, string(l)); c.mu.Unlock() }
	o.OnEvent = func(e Event) { c.mu.Lock(); c.events = append(c.events, e); c.mu.Unlock() }
	if o.Env == nil {
		o.Env = testEnv()
	}
	return o
}

// readPIDs reads one pid per line.
func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read pids: %v", err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q", f)
		}
		pids = append(pids, pid)
	}
	return pids
}

// assertAllGone fails for every pid that still runs (a zombie has ended).
func assertAllGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if proc.Alive(pid, 0) {
			t.Errorf("process %d of the agent's tree survived the run", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// forkingAgent ignores SIGTERM, starts three children that ignore it too
// (each with a grandchild sleep), records every pid in $PIDS and says
// "ready" once they all run.
const forkingAgent = `
trap '' TERM
for i in 1 2 3; do
  sh -c 'trap "" TERM; echo $$ >> "$PIDS"; while :; do sleep 1; done' &
done
echo $$ >> "$PIDS"
while [ "$(wc -l < "$PIDS")" -lt 4 ]; do sleep 0.01; done
echo ready
while :; do sleep 1; done
`

func TestRunTimeoutKillsForkingTree(t *testing.T) {
	is := is.New(t)
	pids := filepath.Join(t.TempDir(), "pids")
	var c collector
	out, err := Run(t.Context(), Command{Line: forkingAgent}, Invocation{Mode: "build"}, c.opts(RunOptions{
		Timeout:  500 * time.Millisecond,
		Grace:    200 * time.Millisecond,
		ExtraEnv: []string{"PIDS=" + pids},
	}))
	is.NoErr(err)
	is.Equal(out.Status, StatusTimeout)
	is.Equal(out.ExitCode, -1)
	is.True(strings.Contains(out.Reason, "timeout"))
	got := readPIDs(t, pids)
	is.Equal(len(got), 4) // the agent and its three children were recorded
	assertAllGone(t, got)
}

func TestRunCancelKillsTreeAsInterrupted(t *testing.T) {
	is := is.New(t)
	pids := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts := RunOptions{
		Grace:    200 * time.Millisecond,
		ExtraEnv: []string{"PIDS=" + pids},
		Env:      testEnv(),
		OnStdout: func(l []byte) {
			if string(l) == "ready" {
				cancel()
			}
		},
	}
	out, err := Run(ctx, Command{Line: forkingAgent}, Invocation{}, opts)
	is.NoErr(err)
	is.Equal(out.Status, StatusInterrupted)
	got := readPIDs(t, pids)
	is.Equal(len(got), 4)
	assertAllGone(t, got)
}

func TestRunEndsBackgroundChildrenOfAFinishedAgent(t *testing.T) {
	is := is.New(t)
	pids := filepath.Join(t.TempDir(), "pids")
	// The agent succeeds but leaves a server running in the background,
	// one that ignores SIGTERM.
	agent := `sh -c 'trap "" TERM; echo $$ > "$PIDS"; exec sleep 1000' &
while [ ! -s "$PIDS" ]; do sleep 0.01; done
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.5}'`
	var c collector
	out, err := Run(t.Context(), Command{Line: agent}, Invocation{}, c.opts(RunOptions{
		Grace: 100 * time.Millisecond, ExtraEnv: []string{"PIDS=" + pids},
	}))
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	is.Equal(out.ResultText, "done")
	is.Equal(*out.CostUSD, 0.5)
	assertAllGone(t, readPIDs(t, pids))
}

// setsidAgent starts a child in a session of its own (it leaves the
// agent's process group), which starts a grandchild, and exits.
const setsidAgent = `
setsid sh -c 'sleep 1000 & echo $! >> "$PIDS"; echo $$ >> "$PIDS"; trap "" TERM; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &
while [ "$(wc -l < "$PIDS" 2>/dev/null || echo 0)" -lt 2 ]; do sleep 0.01; done
echo started
`

func TestRunEndsSetsidEscapeesByMarker(t *testing.T) {
	if proc.IsSubreaper() {
		t.Skip("the test process is a subreaper; TestSubreaper covers that case")
	}
	is := is.New(t)
	pids := filepath.Join(t.TempDir(), "pids")
	var c collector
	out, err := Run(t.Context(), Command{Line: setsidAgent}, Invocation{}, c.opts(RunOptions{
		Grace: 100 * time.Millisecond, ExtraEnv: []string{"PIDS=" + pids},
	}))
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	got := readPIDs(t, pids)
	is.Equal(len(got), 2)
	assertAllGone(t, got)
}

// TestSubreaper runs the subreaper scenario in a child test process, so
// that PR_SET_CHILD_SUBREAPER does not change the rest of the test binary.
func TestSubreaper(t *testing.T) {
	if os.Getenv("RALPHD_AGENT_TEST_SUBREAPER") == "1" {
		subreaperScenario(t)
		return
	}
	is := is.New(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSubreaper$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "RALPHD_AGENT_TEST_SUBREAPER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("subreaper scenario failed: %v\n%s", err, out)
	}
	is.True(bytes.Contains(out, []byte("subreaper scenario ok")))
}

func subreaperScenario(t *testing.T) {
	is := is.New(t)
	is.NoErr(proc.BecomeSubreaper())
	is.True(proc.IsSubreaper())
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	quick := filepath.Join(dir, "quick")
	// Besides the long-lived setsid escapee, a middle process starts a
	// setsid child and exits at once: the child is re-parented to us and
	// exits soon after, leaving a zombie that only the subreaper sweep
	// can reap (its environment, and so its marker, is gone).
	agent := `sh -c 'setsid sh -c "echo \$\$ > \"$QUICK\"" </dev/null >/dev/null 2>&1 & exit 0'
while [ ! -s "$QUICK" ]; do sleep 0.01; done
sleep 0.2
` + setsidAgent
	var c collector
	out, err := Run(t.Context(), Command{Line: agent}, Invocation{}, c.opts(RunOptions{
		Grace: 100 * time.Millisecond, ExtraEnv: []string{"PIDS=" + pids, "QUICK=" + quick},
	}))
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	all := append(readPIDs(t, pids), readPIDs(t, quick)...)
	is.Equal(len(all), 3)
	for _, pid := range all {
		// Reaped, not merely dead: as their subreaper we must not leave
		// zombies behind.
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
			st, _ := proc.ReadStat(pid)
			t.Errorf("process %d still exists (state %c, parent %d)", pid, st.State, st.PPID)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if !t.Failed() {
		fmt.Println("subreaper scenario ok")
	}
}

func TestRunDoesNotHangOnAPipeHeldByAnUnmarkedEscapee(t *testing.T) {
	is := is.New(t)
	pids := filepath.Join(t.TempDir(), "pids")
	// The escapee clears its environment (no marker) and leaves the
	// process group, but keeps stdout open: Run cannot find it and must
	// still return once Drain has passed.
	agent := `env -i PIDS="$PIDS" setsid sh -c 'echo $$ > "$PIDS"; exec sleep 1000' &
while [ ! -s "$PIDS" ]; do sleep 0.01; done
echo done`
	var c collector
	out, err := Run(t.Context(), Command{Line: agent}, Invocation{}, c.opts(RunOptions{
		Grace: 100 * time.Millisecond, Drain: 100 * time.Millisecond, ExtraEnv: []string{"PIDS=" + pids},
	}))
	for _, pid := range readPIDs(t, pids) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	is.Equal(out.ResultText, "done")
}

func TestRunFloodOfLines(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 200 MB through a pipe")
	}
	is := is.New(t)
	const total = 200 << 20
	line := strings.Repeat("x", 63) // 64 bytes with the newline
	var n, bytesSeen, longest int
	opts := RunOptions{
		Env:     testEnv(),
		MaxLine: 1 << 20,
		OnStdout: func(l []byte) {
			n++
			bytesSeen += len(l)
			longest = max(longest, len(l))
		},
	}
	agent := fmt.Sprintf("yes %s | head -c %d", line, total)
	out, err := Run(t.Context(), Command{Line: agent}, Invocation{}, opts)
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	is.Equal(n, total/64)
	is.Equal(bytesSeen, total/64*63)
	is.Equal(longest, 63)
}

func TestRunHugeLineIsChunked(t *testing.T) {
	is := is.New(t)
	const size = 50 << 20
	const maxLine = 1 << 20
	var pieces []int
	var after []string
	var bad int
	opts := RunOptions{
		Env:     testEnv(),
		MaxLine: maxLine,
		OnStdout: func(l []byte) {
			if len(l) > 0 && l[0] == 'z' {
				pieces = append(pieces, len(l))
				if bytes.IndexFunc(l, func(r rune) bool { return r != 'z' }) >= 0 {
					bad++
				}
				return
			}
			after = append(after, string(l))
		},
	}
	agent := fmt.Sprintf(`head -c %d /dev/zero | tr '\0' z; echo; echo after`, size)
	out, err := Run(t.Context(), Command{Line: agent}, Invocation{}, opts)
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	is.Equal(bad, 0)
	is.Equal(len(pieces), size/maxLine) // 50 pieces of exactly MaxLine
	for _, p := range pieces {
		is.Equal(p, maxLine)
	}
	is.Equal(after, []string{"after"}) // the next line arrives whole
	is.Equal(out.ResultText, "after")
}

func TestRunEnvironment(t *testing.T) {
	is := is.New(t)
	guard := filepath.Join(t.TempDir(), "guard-bin")
	is.NoErr(os.Mkdir(guard, 0o755))
	var c collector
	var started Started
	opts := c.opts(RunOptions{
		Env: []string{
			"PATH=/usr/bin:/bin", "HOME=/root",
			"CLAUDECODE=1", "CLAUDE_CODE_ENTRYPOINT=cli", "CLAUDE_CODE_SSE_PORT=4242",
			"CLAUDE_AGENT_SDK_VERSION=0.1", "RALPH_ISSUE_ID=stale", RunMarkerEnv + "=stale",
			"ANTHROPIC_API_KEY=keep-me", "MALFORMED",
		},
		PathPrefix: guard,
		ExtraEnv:   []string{"EXTRA=1", "HOME=/home/agent"},
		OnStart:    func(s Started) error { started = s; return nil },
	})
	inv := Invocation{Mode: "plan", Iteration: 7, Attempt: 1}
	out, err := Run(t.Context(), Command{Line: "env"}, inv, opts)
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	env := map[string]string{}
	for _, l := range c.stdout {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	for _, k := range []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT", "CLAUDE_AGENT_SDK_VERSION", "MALFORMED"} {
		_, ok := env[k]
		is.True(!ok) // scrubbed
	}
	is.Equal(env["PATH"], guard+":/usr/bin:/bin")
	is.Equal(env["ANTHROPIC_API_KEY"], "keep-me")
	is.Equal(env["HOME"], "/home/agent")
	is.Equal(env["EXTRA"], "1")
	is.Equal(env["RALPH_MODE"], "plan")
	is.Equal(env["RALPH_ISSUE_ID"], "")
	is.Equal(env["RALPH_ITERATION"], "7")
	is.Equal(env["RALPH_ATTEMPT"], "1")
	is.True(started.Marker != "" && started.Marker != "stale")
	is.Equal(env[RunMarkerEnv], started.Marker)
}

func TestRunOnStartComesBeforeThePrompt(t *testing.T) {
	is := is.New(t)
	flag := filepath.Join(t.TempDir(), "recorded")
	var c collector
	var started Started
	opts := c.opts(RunOptions{
		ExtraEnv: []string{"FLAG=" + flag},
		OnStart: func(s Started) error {
			started = s
			is.True(proc.Alive(s.PID, s.StartTime)) // OnStart sees the live agent
			return os.WriteFile(flag, nil, 0o600)
		},
	})
	agent := `read -r line; if [ -f "$FLAG" ]; then echo "recorded before: $line"; fi`
	out, err := Run(t.Context(), Command{Line: agent}, Invocation{Prompt: "the prompt\n"}, opts)
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	is.Equal(c.stdout, []string{"recorded before: the prompt"})
	is.True(started.PID > 0)
	is.Equal(started.PGID, started.PID)
	is.True(started.StartTime > 0)
	is.Equal(started.Argv[:2], []string{"sh", "-c"})
}

func TestRunOnStartErrorAbortsTheAgent(t *testing.T) {
	is := is.New(t)
	var pid int
	opts := RunOptions{
		Env: testEnv(),
		OnStart: func(s Started) error {
			pid = s.PID
			return errors.New("disk full")
		},
	}
	_, err := Run(t.Context(), Command{Line: "trap '' TERM; sleep 1000"}, Invocation{}, opts)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "disk full"))
	is.True(pid > 0)
	assertAllGone(t, []int{pid})
}

func TestRunMissingAgent(t *testing.T) {
	empty := t.TempDir()
	notExec := filepath.Join(empty, "claude-not-exec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		b      Backend
		env    []string
		reason string
	}{
		{"claude not on PATH", Claude{}, []string{"PATH=" + empty}, "npm install -g @anthropic-ai/claude-code"},
		{"claude path missing", Claude{Bin: filepath.Join(empty, "nope")}, testEnv(), "not found"},
		{"claude not executable", Claude{Bin: notExec}, testEnv(), "not executable"},
		{"agent command missing", Command{Line: "ralphd-no-such-agent --go"}, testEnv(), "check --agent-cmd"},
		{"agent command not executable", Command{Line: notExec}, testEnv(), "check --agent-cmd"},
		// A script the shell cannot open: sh (dash) exits 2, bash 127.
		{"agent script missing", Command{Line: "sh " + filepath.Join(empty, "agent.sh")}, testEnv(), "cannot open " + filepath.Join(empty, "agent.sh")},
		{"agent script missing, bash", Command{Line: "bash " + filepath.Join(empty, "agent.sh") + " --go"}, testEnv(), "agent.sh: No such file or directory; check --agent-cmd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			out, err := Run(t.Context(), tt.b, Invocation{Prompt: "p"}, RunOptions{Env: tt.env})
			is.NoErr(err)
			is.Equal(out.Status, StatusFatal)
			is.True(strings.Contains(out.Reason, tt.reason)) // reason says how to fix it
		})
	}
}

func TestRunCommandExitCodes(t *testing.T) {
	tests := []struct {
		line        string
		status      Status
		exit        int
		text        string
		recoverable bool
	}{
		{"echo hello; echo; echo world", StatusOK, 0, "world", false},
		{"echo failing >&2; exit 3", StatusAgentError, 3, "", false},
		{"kill -KILL $$", StatusCrashed, -1, "", false},
		// A stream result decides over the exit code.
		{`echo '{"type":"result","subtype":"success","is_error":false,"result":"<promise>PLAN_COMPLETE</promise>"}'; exit 1`, StatusOK, 1, "<promise>PLAN_COMPLETE</promise>", false},
		{`echo '{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: Rate limit reached"}'`, StatusRateLimited, 0, "API Error: Rate limit reached", false},
		// A mistyped command is a setup error; a logged-out agent is one a
		// person can clear while ralphd waits.
		{"no-such-agent-xyz --go", StatusFatal, 127, "", false},
		// The agent's own work failing the same ways is its error, not a
		// command that cannot run.
		{"ls /no/such/dir", StatusAgentError, 2, "", false},
		{`echo "make: *** [test] Error 2" >&2; exit 2`, StatusAgentError, 2, "", false},
		{`sh /no/such/script.sh; echo "went on without it" >&2; exit 2`, StatusAgentError, 2, "", false},
		{`echo '{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}'; exit 1`, StatusFatal, 1, "Not logged in · Please run /login", true},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			is := is.New(t)
			var c collector
			out, err := Run(t.Context(), Command{Line: tt.line}, Invocation{}, c.opts(RunOptions{}))
			is.NoErr(err)
			is.Equal(out.Status, tt.status)
			is.Equal(out.ExitCode, tt.exit)
			is.Equal(out.ResultText, tt.text)
			is.Equal(out.Recoverable, tt.recoverable) // waitable by the daemon
		})
	}
}

// TestRunClaudeBackendWithFakeBinary runs the Claude backend against a
// stand-in `claude` that records its argv and stdin and replays a real
// captured stream.
func TestRunClaudeBackendWithFakeBinary(t *testing.T) {
	tests := []struct {
		fixture string
		exit    int
		status  Status
	}{
		{"real-claude-2.1.197-not-logged-in.jsonl", 1, StatusFatal},
		{"real-claude-2.1.197-scripted-api-tool-use.jsonl", 0, StatusOK},
		{"claude-rate-limited.jsonl", 0, StatusRateLimited},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			is := is.New(t)
			bin := t.TempDir()
			fixture, err := filepath.Abs(filepath.Join("testdata", tt.fixture))
			is.NoErr(err)
			rec := filepath.Join(bin, "argv")
			script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %q\ncat > %q.stdin\ncat %q\nexit %d\n", rec, rec, fixture, tt.exit)
			is.NoErr(os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755))
			scratch := t.TempDir()
			inv := Invocation{Mode: "build", IssueID: "bd-9", Prompt: "work on bd-9", Dir: t.TempDir(),
				ScratchDir: scratch, DenyBash: []string{"bd delete"}, HookArgv: []string{"/bin/ralphd", "hook"}}
			var c collector
			out, err := Run(t.Context(), Claude{Now: clock}, inv, c.opts(RunOptions{PathPrefix: bin}))
			is.NoErr(err)
			is.Equal(out.Status, tt.status)
			is.Equal(out.ExitCode, tt.exit)
			argv, err := os.ReadFile(rec)
			is.NoErr(err)
			is.True(strings.HasPrefix(string(argv), "-p\n--output-format\nstream-json\n--verbose\n--settings\n"+filepath.Join(scratch, ClaudeSettingsFile)+"\n"))
			stdin, err := os.ReadFile(rec + ".stdin")
			is.NoErr(err)
			is.Equal(string(stdin), "work on bd-9")
			is.True(len(c.events) > 0)
			is.Equal(c.events[0].Kind, EventInit)
		})
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out, err := Run(ctx, Command{Line: "echo never"}, Invocation{}, RunOptions{Env: testEnv()})
	is.NoErr(err)
	is.Equal(out.Status, StatusInterrupted)
}

func TestRunCommandError(t *testing.T) {
	is := is.New(t)
	_, err := Run(t.Context(), Command{}, Invocation{}, RunOptions{Env: testEnv()})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "--agent-cmd"))
}

func TestRunStderrTailReachesParser(t *testing.T) {
	is := is.New(t)
	var c collector
	// A "claude" that prints only an error on stderr.
	bin := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\ncat >/dev/null\necho 'Invalid API key · Please run /login' >&2\nexit 1\n"), 0o755))
	out, err := Run(t.Context(), Claude{}, Invocation{}, c.opts(RunOptions{PathPrefix: bin, StderrTail: 64}))
	is.NoErr(err)
	is.Equal(out.Status, StatusFatal)
	is.Equal(c.stderr, []string{"Invalid API key · Please run /login"})
}

func TestRunMissingWorkingDirectory(t *testing.T) {
	is := is.New(t)
	_, err := Run(t.Context(), Command{Line: "true"}, Invocation{Dir: filepath.Join(t.TempDir(), "gone")}, RunOptions{Env: testEnv()})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "working directory"))
}

// Wrap puts a command in front of the agent's: the wrapper gets the
// resolved path and the agent's arguments.
func TestRunWrap(t *testing.T) {
	is := is.New(t)
	var c collector
	var gotPath string
	opts := c.opts(RunOptions{Wrap: func(path string, argv []string) (string, []string) {
		gotPath = path
		return "/usr/bin/env", append([]string{"env", "WRAPPED=yes", path}, argv[1:]...)
	}})
	out, err := Run(context.Background(), Command{Line: `echo "wrapped=$WRAPPED"`}, Invocation{Prompt: "p"}, opts)
	is.NoErr(err)
	is.Equal(out.ExitCode, 0)
	is.True(filepath.IsAbs(gotPath))            // the agent's resolved executable
	is.Equal(c.stdout, []string{"wrapped=yes"}) // the wrapper ran the agent
}

// TestRunOutputTail checks that the outcome carries the end of what the
// agent said, as text, bounded: plain lines as they are, and a stream-json
// agent's messages and commands rather than its JSON.
func TestRunOutputTail(t *testing.T) {
	is := is.New(t)
	var c collector
	out, err := Run(t.Context(), Command{Line: `i=0; while [ $i -lt 2000 ]; do echo "filler line $i"; i=$((i+1)); done; echo "the end"`}, Invocation{}, c.opts(RunOptions{}))
	is.NoErr(err)
	is.True(strings.HasSuffix(out.OutputTail, "filler line 1999\nthe end")) // the end is kept
	is.True(len(out.OutputTail) <= OutputTailBytes)                         // bounded
	is.True(!strings.Contains(out.OutputTail, "filler line 0\n"))           // the start is dropped

	stream := `echo '{"type":"assistant","message":{"content":[{"type":"text","text":"Looking at the parser."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]}}'; ` +
		`echo '{"type":"result","subtype":"success","is_error":false,"result":"Done."}'`
	out, err = Run(t.Context(), Command{Line: stream}, Invocation{}, c.opts(RunOptions{}))
	is.NoErr(err)
	is.Equal(out.OutputTail, "Looking at the parser.\n$ go test ./...\nDone.")
}

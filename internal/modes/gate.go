package modes

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

// Gate names, as recorded in history's "gate" field: how far an
// iteration's work got.
const (
	GateAgent      = "agent"      // the agent ran; no check configured
	GatePolicy     = "policy"     // a forbidden change was found and reverted
	GateVerify     = "verify"     // the verify command
	GateAcceptance = "acceptance" // the issue's acceptance commands
	GatePassed     = "passed"     // every check passed
)

// outputCap bounds the output ralphd keeps of one check: its tail, which
// is where failures are reported.
const outputCap = 256 << 10

// check is one verification command's result.
type check struct {
	Name     string // "verify", or "acceptance: <criterion>"
	Gate     string // GateVerify or GateAcceptance
	Command  string
	Expect   int
	ExitCode int
	Output   string // the tail of stdout and stderr, interleaved
	TimedOut bool
}

func (c check) passed() bool { return !c.TimedOut && c.ExitCode == c.Expect }

// checkEnv is where checks run: the guard first on PATH, as for the agent,
// the hook that tells the guard each check's pid (only it and its
// descendants are served), and, when the agent runs sandboxed, the same
// sandbox around each check (wrap). The zero value runs checks unguarded.
type checkEnv struct {
	env     []string
	started func(pid int)
	wrap    func(path string, argv []string) (string, []string)
}

// runChecks runs the verify command (when configured; a verify result
// already in hand is reused) and the issue's acceptance commands (rows of
// `criterion | command | expected exit`).
func (l *Loop) runChecks(ctx context.Context, ce checkEnv, is beads.Issue, verify *check) []check {
	var cs []check
	if verify != nil {
		cs = append(cs, *verify)
	}
	for _, c := range l.checksToRun(is, verify != nil) {
		cs = append(cs, l.runCheck(ctx, ce, c))
	}
	return cs
}

// checksToRun are the checks runChecks runs for is: verify (unless a
// result is in hand) and the acceptance commands.
func (l *Loop) checksToRun(is beads.Issue, haveVerify bool) []check {
	var cs []check
	if !haveVerify && l.Config.Verify != "" {
		cs = append(cs, check{Name: "verify", Gate: GateVerify, Command: l.Config.Verify})
	}
	for _, a := range judge.ParseAcceptance(is.AcceptanceCriteria) {
		cs = append(cs, check{Name: "acceptance: " + a.Criterion, Gate: GateAcceptance, Command: a.Command, Expect: a.ExpectExit})
	}
	return cs
}

// guardedChecks serves a BUILD guard session for the duration of fn: the
// checks fn runs see the guard first on PATH and run in the agent's
// sandbox (enterSandbox), exactly as the agent did, so a check that runs
// the agent's code has no more power than the agent.
func (l *Loop) guardedChecks(ctx context.Context, iteration int, fn func(checkEnv)) error {
	scratch, err := os.MkdirTemp("", scratchPrefix(l.State.Identity().ID))
	if err != nil {
		return fmt.Errorf("make the checks' scratch dir: %w", err)
	}
	defer os.RemoveAll(scratch)
	var logMu sync.Mutex // the guard's calls and the proxy's refusals arrive on their own goroutines
	g, err := guard.Serve(ctx, scratch, guard.Setup{
		Self: l.Self, Mode: guard.ModeBuild, RealBD: l.RealBD, RunID: l.RunID,
		Iteration: iteration, StateDir: l.State.Dir(), WorkTree: l.Dir, Env: l.environ(),
		OnCall: func(_ time.Time, call state.BDCall) {
			logMu.Lock()
			defer logMu.Unlock()
			l.event(logjsonl.EventBDCall, call)
		},
	})
	if err != nil {
		return err
	}
	defer g.Close()
	ce := checkEnv{env: agent.Env(l.environ(), g.BinDir(), g.Env()), started: g.SetLeader}
	if l.sandboxed(ModeBuild) {
		sb, err := l.enterSandbox(ctx, scratch, "", "", func(host string) {
			logMu.Lock()
			defer logMu.Unlock()
			l.event(logjsonl.EventNetworkRefused, logjsonl.NetworkRefused{Iteration: iteration, Host: host})
		}, g.ReadOnly()...)
		if err != nil {
			return fmt.Errorf("sandbox the checks: %w", err)
		}
		defer sb.stop()
		ce.wrap, ce.env = sb.wrap, append(ce.env, sb.tmpdir)
	}
	fn(ce)
	return nil
}

// runCheck runs one check with sh -c in l.Dir. The check runs the
// agent's code, so it is contained as the agent is (agent.Run): its own
// process group and cgroup, the run marker, the subreaper, and the
// agent's sandbox when ce has one. Whatever it
// started, however it detached, is ended when it exits, before the
// judgement reads the tracker; nothing it started can change the tracker
// after the judgement read it.
func (l *Loop) runCheck(ctx context.Context, ce checkEnv, c check) check {
	timeout := l.Config.VerifyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	env := l.environ()
	if ce.env != nil {
		env = ce.env
	}
	out := &syncTail{t: tailBuffer{max: outputCap}}
	opts := agent.RunOptions{
		Timeout: timeout, Grace: l.Config.StopGrace, Env: env, Contain: l.Contain,
		StdoutRaw: out, StderrRaw: out, Wrap: ce.wrap,
	}
	if ce.started != nil {
		opts.OnStart = func(s agent.Started) error { ce.started(s.PID); return nil }
	}
	o, err := agent.Run(ctx, checkCommand(c.Command), agent.Invocation{Dir: l.Dir}, opts)
	c.Output = out.String()
	switch {
	case err != nil:
		c.ExitCode = -1
		c.Output += fmt.Sprintf("\n[ralphd: could not run %q: %v]", c.Command, err)
	case o.Status == agent.StatusTimeout:
		c.TimedOut, c.ExitCode = true, -1
		c.Output += fmt.Sprintf("\n[ralphd: %q timed out after %s]", c.Command, timeout)
	case o.Status == agent.StatusInterrupted || o.Status == agent.StatusFatal:
		c.ExitCode = -1
		c.Output += fmt.Sprintf("\n[ralphd: could not run %q: %s]", c.Command, o.Reason)
	default:
		c.ExitCode = o.ExitCode
	}
	return c
}

// checkCommand is a check as an agent.Program: its command line under
// sh -c, nothing on stdin, and its exit code as the whole outcome.
type checkCommand string

func (c checkCommand) Name() string   { return "check" }
func (c checkCommand) Binary() string { return "sh" }
func (c checkCommand) Command(agent.Invocation) (agent.Spec, error) {
	return agent.Spec{Argv: []string{"sh", "-c", string(c)}}, nil
}
func (c checkCommand) NewParser() agent.Parser { return exitCodeParser{} }

// exitCodeParser reads nothing from a check's output.
type exitCodeParser struct{}

func (exitCodeParser) Line([]byte) []agent.Event { return nil }
func (exitCodeParser) Finish(exitCode int, _ string) agent.Outcome {
	return agent.Outcome{Status: agent.StatusOK, ExitCode: exitCode}
}

// syncTail is a tailBuffer that a check's stdout and stderr readers write
// to at once.
type syncTail struct {
	mu sync.Mutex
	t  tailBuffer
}

func (s *syncTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.Write(p)
}

func (s *syncTail) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.String()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.dropped += over
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if t.dropped == 0 {
		return string(t.buf)
	}
	// Start at a line boundary so the kept text reads whole.
	b := t.buf
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
		b = b[i+1:]
	}
	return fmt.Sprintf("[... %d bytes cut ...]\n%s", t.dropped, b)
}

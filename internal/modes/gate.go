package modes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/proc"
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
// and the hook that tells the guard each check's pid (only it and its
// descendants are served). The zero value runs checks unguarded.
type checkEnv struct {
	env     []string
	started func(pid int)
}

// runChecks runs the verify command (when configured; a verify result
// already in hand is reused) and the issue's acceptance commands (rows of
// `criterion | command | expected exit`).
func (l *Loop) runChecks(ctx context.Context, ce checkEnv, is beads.Issue, verify *check) []check {
	var cs []check
	switch {
	case verify != nil:
		cs = append(cs, *verify)
	case l.Config.Verify != "":
		cs = append(cs, l.runCheck(ctx, ce, check{Name: "verify", Gate: GateVerify, Command: l.Config.Verify}))
	}
	for _, a := range judge.ParseAcceptance(is.AcceptanceCriteria) {
		name := "acceptance: " + a.Criterion
		cs = append(cs, l.runCheck(ctx, ce, check{Name: name, Gate: GateAcceptance, Command: a.Command, Expect: a.ExpectExit}))
	}
	return cs
}

// guardedChecks serves a BUILD guard session for the duration of fn: the
// checks fn runs see the guard first on PATH, exactly as the agent did,
// so a check that runs the agent's code has no more power than the agent.
func (l *Loop) guardedChecks(ctx context.Context, iteration int, fn func(checkEnv)) error {
	scratch, err := os.MkdirTemp("", scratchPrefix(l.State.Identity().ID))
	if err != nil {
		return fmt.Errorf("make the checks' scratch dir: %w", err)
	}
	defer os.RemoveAll(scratch)
	g, err := guard.Serve(ctx, scratch, guard.Setup{
		Self: l.Self, Mode: guard.ModeBuild, RealBD: l.RealBD, RunID: l.RunID,
		Iteration: iteration, StateDir: l.State.Dir(), Env: l.environ(),
		OnCall: func(_ time.Time, call state.BDCall) { l.event(logjsonl.EventBDCall, call) },
	})
	if err != nil {
		return err
	}
	defer g.Close()
	fn(checkEnv{env: agent.Env(l.environ(), g.BinDir(), g.Env()), started: g.SetLeader})
	return nil
}

func (l *Loop) runCheck(ctx context.Context, ce checkEnv, c check) check {
	timeout := l.Config.VerifyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := proc.Command(cctx, 5*time.Second, "sh", "-c", c.Command)
	cmd.Dir = l.Dir
	cmd.Env = l.environ()
	if ce.env != nil {
		cmd.Env = ce.env
	}
	out := &tailBuffer{max: outputCap}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Start()
	if err == nil {
		if ce.started != nil {
			ce.started(cmd.Process.Pid)
		}
		err = cmd.Wait()
	}
	proc.KillGroup(cmd) // nothing a check started outlives it
	c.Output = out.String()
	var ee *exec.ExitError
	switch {
	case err == nil:
		c.ExitCode = 0
	case cctx.Err() != nil && ctx.Err() == nil:
		c.TimedOut, c.ExitCode = true, -1
		c.Output += fmt.Sprintf("\n[ralphd: %q timed out after %s]", c.Command, timeout)
	case errors.As(err, &ee):
		c.ExitCode = ee.ExitCode()
	default:
		c.ExitCode = -1
		c.Output += fmt.Sprintf("\n[ralphd: could not run %q: %v]", c.Command, err)
	}
	return c
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

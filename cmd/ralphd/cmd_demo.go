package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/testkit/standin"
	"github.com/ralphd/ralphd/internal/text"
)

// Hidden subcommands the demo runs itself as.
const (
	demoAgentCommand = "demo-agent" // the built-in scripted agent
	demoBDCommand    = "demo-bd"    // the stand-in bd, when no real bd is installed
)

// demoRun is one `ralphd demo`: its options and the scratch directories.
type demoRun struct {
	keep     bool
	agent    string // "scripted" or "claude"
	workers  int
	dir      string // holds the project, its state and bin/
	project  string
	stateDir string
	bin      string
}

func cmdDemo(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "demo", "demo [--keep] [--workers K] [--agent scripted|claude] [DIR]", `
Run a whole BUILD loop on a scratch project, with no account and no network:
four issues, one blocked by another, one that fails until its second
attempt, and one whose work tempts the agent into a bd command BUILD mode may
not run. The agent is a built-in scripted agent; with --agent claude it is
the real Claude Code CLI, with your own account and model (this spends
tokens). bd is your real bd when installed, and ralphd's stand-in otherwise.

With --workers K, K agents work at once, each in its own git worktree,
claiming issues through bd and integrating through ralphd's merge queue.

DIR (default: a new temporary directory) holds the project and its state;
it is removed at the end unless --keep is given.`)
	keep := fs.Bool("keep", false, "keep the project, its state and logs")
	agentFlag := fs.String("agent", "scripted", "the demo's agent: scripted, or claude (the real CLI, with your account)")
	workers := fs.Int("workers", 1, "run the loop with this many workers at once, each in its own git worktree")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if *agentFlag != "scripted" && *agentFlag != "claude" {
		return usageErrorf(a, fs, "--agent must be scripted or claude, not %q", *agentFlag)
	}
	if len(pos) > 1 {
		return usageErrorf(a, fs, "give at most one DIR")
	}
	if *workers < 1 || *workers > 8 {
		return usageErrorf(a, fs, "--workers must be between 1 and 8 (the demo has four issues)")
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	d := &demoRun{keep: *keep, agent: *agentFlag, workers: *workers}
	if len(pos) == 1 {
		d.dir = pos[0]
		if entries, err := os.ReadDir(d.dir); err == nil && len(entries) > 0 {
			return usageErrorf(a, fs, "%s is not empty; give a new or empty directory", d.dir)
		}
	}
	return d.run(ctx, a)
}

// run sets the demo project up, runs `ralphd build` on it and renders its
// log, then keeps or removes the scratch directory.
func (d *demoRun) run(ctx context.Context, a *app) int {
	start := time.Now()
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "ralphd-demo-")
		if err != nil {
			return reportErr(a, err)
		}
		d.dir = dir
	}
	d.dir, _ = filepath.Abs(d.dir)
	d.project, d.stateDir, d.bin = filepath.Join(d.dir, "project"), filepath.Join(d.dir, "state"), filepath.Join(d.dir, "bin")
	if err := os.MkdirAll(d.bin, 0o755); err != nil {
		return reportErr(a, err)
	}
	defer d.cleanup(a)

	bd, err := d.bd(a)
	if err != nil {
		return reportErr(a, err)
	}
	if err := setUpDemoProject(ctx, d.project, bd); err != nil {
		errorf(a.stderr, "set up the demo project: %v", err)
		return exitError
	}
	buildArgs, env, shown, code := d.buildCommand(a, bd)
	if code != exitOK {
		return code
	}
	fmt.Fprintf(a.stdout, "demo: project %s\n\n$ ralphd %s\n", d.project, strings.Join(buildArgs[:shown], " "))
	code = d.child(ctx, a, env, buildArgs...)
	fmt.Fprint(a.stdout, "\n$ ralphd logs last\n")
	d.child(ctx, a, env, "logs", "last")
	fmt.Fprintf(a.stdout, "\ndemo: finished in %s (ralphd build exited %d)\n", time.Since(start).Round(100*time.Millisecond), code)
	d.farewell(a)
	return code
}

// bd returns the bd the demo uses: the user's real one, or the stand-in
// behind a wrapper script in the demo's bin/.
func (d *demoRun) bd(a *app) (string, error) {
	if bd, err := exec.LookPath("bd"); err == nil {
		fmt.Fprintf(a.stdout, "demo: using your bd (%s)\n", bd)
		return bd, nil
	}
	bd := filepath.Join(d.bin, "bd")
	if err := os.WriteFile(bd, []byte("#!/bin/sh\nexec "+text.ShellQuote(a.argv0)+" "+demoBDCommand+" \"$@\"\n"), 0o755); err != nil {
		return "", err
	}
	fmt.Fprintln(a.stdout, "demo: bd is not installed, so the demo uses ralphd's built-in stand-in for it")
	return bd, nil
}

// buildCommand returns the `ralphd build` arguments and environment for the
// demo's agent: the built-in scripted agent, or (asked for by name) the
// real Claude Code CLI with the user's own account and model. shown is how
// many arguments the demo prints; code is not exitOK when the agent is
// missing.
func (d *demoRun) buildCommand(a *app, bd string) (args, env []string, shown, code int) {
	env = append(os.Environ(), "RALPH_STATE_DIR="+d.stateDir, "RALPH_LOG=1", "NO_COLOR=1")
	args = []string{"build", "10", "--bd", bd, "--quota-backoff-max", "2s", "--iteration-timeout", "2m", "--stop-grace", "2s"}
	shown = 2
	if d.workers > 1 {
		args = append(args[:2], append([]string{"--workers", strconv.Itoa(d.workers)}, args[2:]...)...)
		shown = 4
	}
	if d.agent != "claude" {
		args = append(args, "--agent-cmd", text.ShellQuote(a.argv0)+" "+demoAgentCommand)
		fmt.Fprintln(a.stdout, "demo: the agent is ralphd's built-in scripted agent (run with --agent claude for the real Claude Code)")
		return args, env, shown, exitOK
	}
	claude, err := exec.LookPath("claude")
	if err != nil {
		errorf(a.stderr, "--agent claude: claude is not installed")
		hintf(a.stderr, "install it with `npm install -g @anthropic-ai/claude-code`, or run the demo without --agent")
		return nil, nil, 0, exitAgent
	}
	env = append(env, "CLAUDE_CODE_MAX_RETRIES=0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	args = append(args, "--agent", "claude")
	fmt.Fprintf(a.stdout, "demo: the agent is the real Claude Code (%s), with your account and model\n", claude)
	return args, env, shown, exitOK
}

// child runs ralphd itself in the demo project and returns its exit code.
func (d *demoRun) child(ctx context.Context, a *app, env []string, args ...string) int {
	cmd := proc.Command(ctx, 5*time.Second, a.argv0, args...)
	cmd.Dir, cmd.Env = d.project, env
	cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		errorf(a.stderr, "run ralphd: %v", err)
		return exitError
	}
	return exitOK
}

// farewell says where the demo's files are, or that they are gone.
func (d *demoRun) farewell(a *app) {
	if !d.keep {
		fmt.Fprintf(a.stdout, "demo: removed %s; run `ralphd demo --keep` to keep the project, its state and logs\n", d.dir)
		return
	}
	fmt.Fprintf(a.stdout, `demo: kept everything in %s. To look around:
  cd %s
  export RALPH_STATE_DIR=%s
  ralphd status           # attempts, last run, report
  ralphd logs last        # the run, rendered (--raw for the JSONL)
  ralphd report           # the end-of-run report
  git log --oneline       # the agent's commits
`, d.dir, d.project, d.stateDir)
}

// cleanup removes the scratch directory unless --keep was given.
func (d *demoRun) cleanup(a *app) {
	if d.keep {
		return
	}
	if err := os.RemoveAll(d.dir); err != nil {
		warnf(a.stderr, "could not remove %s: %v", d.dir, err)
	}
}

// runDemoAgent is the built-in scripted agent (`ralphd demo-agent`).
func runDemoAgent(ctx context.Context, a *app) int {
	wd, err := os.Getwd()
	if err != nil {
		return exitError
	}
	return runScriptedDemoAgent(ctx, wd, a.getenv, a.stdout)
}

// runDemoBD is the stand-in bd (`ralphd demo-bd`).
func runDemoBD(ctx context.Context, a *app, args []string) int {
	wd, err := os.Getwd()
	if err != nil {
		return exitError
	}
	return standin.Main(ctx, args, a.stdin, a.stdout, a.stderr, a.env, wd)
}

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
	start := time.Now()
	dir := ""
	if len(pos) == 1 {
		dir = pos[0]
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return usageErrorf(a, fs, "%s is not empty; give a new or empty directory", dir)
		}
	} else {
		d, err := os.MkdirTemp("", "ralphd-demo-")
		if err != nil {
			return reportErr(a, err)
		}
		dir = d
	}
	dir, _ = filepath.Abs(dir)
	project, stateDir, bin := filepath.Join(dir, "project"), filepath.Join(dir, "state"), filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return reportErr(a, err)
	}
	cleanup := func() {
		if *keep {
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			warnf(a.stderr, "could not remove %s: %v", dir, err)
		}
	}
	defer cleanup()

	// bd: the user's real one, or the stand-in behind a wrapper.
	bd, err := exec.LookPath("bd")
	if err == nil {
		fmt.Fprintf(a.stdout, "demo: using your bd (%s)\n", bd)
	} else {
		bd = filepath.Join(bin, "bd")
		if err := os.WriteFile(bd, []byte("#!/bin/sh\nexec "+text.ShellQuote(a.argv0)+" "+demoBDCommand+" \"$@\"\n"), 0o755); err != nil {
			return reportErr(a, err)
		}
		fmt.Fprintln(a.stdout, "demo: bd is not installed, so the demo uses ralphd's built-in stand-in for it")
	}
	if err := setUpDemoProject(ctx, project, bd); err != nil {
		errorf(a.stderr, "set up the demo project: %v", err)
		return exitError
	}

	// The agent: the built-in scripted agent, or (asked for by name) the
	// real Claude Code CLI with the user's own account and model.
	env := append(os.Environ(), "RALPH_STATE_DIR="+stateDir, "RALPH_LOG=1", "NO_COLOR=1")
	buildArgs := []string{"build", "10", "--bd", bd, "--quota-backoff-max", "2s", "--iteration-timeout", "2m", "--stop-grace", "2s"}
	shown := 2 // the arguments the demo prints of the command it runs
	if *workers > 1 {
		buildArgs = append(buildArgs[:2], append([]string{"--workers", strconv.Itoa(*workers)}, buildArgs[2:]...)...)
		shown = 4
	}
	switch *agentFlag {
	case "claude":
		claude, err := exec.LookPath("claude")
		if err != nil {
			errorf(a.stderr, "--agent claude: claude is not installed")
			hintf(a.stderr, "install it with `npm install -g @anthropic-ai/claude-code`, or run the demo without --agent")
			return exitAgent
		}
		env = append(env, "CLAUDE_CODE_MAX_RETRIES=0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
		buildArgs = append(buildArgs, "--agent", "claude")
		fmt.Fprintf(a.stdout, "demo: the agent is the real Claude Code (%s), with your account and model\n", claude)
	default:
		buildArgs = append(buildArgs, "--agent-cmd", text.ShellQuote(a.argv0)+" "+demoAgentCommand)
		fmt.Fprintln(a.stdout, "demo: the agent is ralphd's built-in scripted agent (run with --agent claude for the real Claude Code)")
	}
	fmt.Fprintf(a.stdout, "demo: project %s\n\n$ ralphd %s\n", project, strings.Join(buildArgs[:shown], " "))

	child := func(args ...string) int {
		cmd := proc.Command(ctx, 5*time.Second, a.argv0, args...)
		cmd.Dir, cmd.Env = project, env
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
	code = child(buildArgs...)
	fmt.Fprint(a.stdout, "\n$ ralphd logs last\n")
	child("logs", "last")
	fmt.Fprintf(a.stdout, "\ndemo: finished in %s (ralphd build exited %d)\n", time.Since(start).Round(100*time.Millisecond), code)
	if *keep {
		fmt.Fprintf(a.stdout, `demo: kept everything in %s. To look around:
  cd %s
  export RALPH_STATE_DIR=%s
  ralphd status           # attempts, last run, report
  ralphd logs last        # the run, rendered (--raw for the JSONL)
  ralphd report           # the end-of-run report
  git log --oneline       # the agent's commits
`, dir, project, stateDir)
	} else {
		fmt.Fprintf(a.stdout, "demo: removed %s; run `ralphd demo --keep` to keep the project, its state and logs\n", dir)
	}
	return code
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

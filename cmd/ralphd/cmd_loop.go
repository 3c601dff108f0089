package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/sandbox"
	"github.com/ralphd/ralphd/prompts"
)

func cmdBuild(ctx context.Context, a *app, args []string) int {
	return runLoop(ctx, a, args, modes.ModeBuild, 50, `
Run BUILD iterations: each takes the first issue from `+"`bd ready`"+`, runs the
agent on it, and checks what changed. Stops with exit 0 when no ready work is
left, and with exit 3 when N iterations ran and ready work is left.
N defaults to 50; 0 means no cap.`)
}

func cmdPlan(ctx context.Context, a *app, args []string) int {
	return runLoop(ctx, a, args, modes.ModePlan, 1, `
Run PLANNING iterations with full powers over bd: gap analysis, dependencies,
priorities, acceptance criteria, and review of stuck issues. Ends early when
the planner's final result ends with <promise>PLAN_COMPLETE</promise>.
N defaults to 1.`)
}

// runLoop is build and plan: open the project, take its lock, and run.
func runLoop(ctx context.Context, a *app, args []string, mode string, defaultN int, desc string) int {
	fs := newFlags(a, mode, mode+" [flags] [N]", desc)
	config.BindFlags(fs, config.RunKeys()...) // not the daemon's own keys
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if mode == modes.ModePlan {
		if code := planAlone(a, fs); code != exitOK {
			return code
		}
	}
	maxIter := defaultN
	switch len(pos) {
	case 0:
	case 1:
		n, err := strconv.Atoi(pos[0])
		if err != nil || n < 0 {
			return usageErrorf(a, fs, "N must be a whole number of iterations (0: no cap), got %q", pos[0])
		}
		maxIter = n
	default:
		return usageErrorf(a, fs, "too many arguments: %q", pos)
	}
	if code, stop := a.parsedOnly(fs); stop {
		return code
	}
	ls, code := setupLoop(ctx, a, fs, mode)
	if ls == nil {
		return code
	}
	defer ls.close()
	if code := ls.openLog(a); code != exitOK {
		return code
	}
	if _, err := ls.loop.Sweep(ctx); err != nil {
		return loopExit(a, err)
	}

	var err error
	if mode == modes.ModeBuild {
		_, err = ls.loop.BuildWorkers(ctx, maxIter, ls.loop.Config.Workers)
	} else {
		_, err = ls.loop.Plan(ctx, maxIter)
	}
	return loopExit(a, err)
}

// planAlone refuses `ralphd plan --workers N` for N other than 1:
// PLANNING runs alone, so it would ignore the flag, and the user asked for
// something else. It says what to run instead.
func planAlone(a *app, fs *flag.FlagSet) int {
	code := exitOK
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "workers" || f.Value.String() == "1" {
			return
		}
		n := f.Value.String()
		errorf(a.stderr, "PLANNING runs alone, so `ralphd plan` takes no --workers (got %s)", n)
		hintf(a.stderr, "run `ralphd plan` without --workers, then `ralphd build --workers %s`; "+
			"or `ralphd daemon --workers %s`, which drains its BUILD workers before PLANNING runs", n, n)
		code = exitUsage
	})
	return code
}

// loopExit maps a run's error to the exit code, with a hint where one helps.
func loopExit(a *app, err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, modes.ErrCapReached):
		return exitCap
	case errors.Is(err, modes.ErrAgentUnusable):
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "fix the agent's setup (install it, log in, or set a valid API key), then run ralphd again; no attempt was counted")
		return exitAgent
	case errors.Is(err, modes.ErrInterrupted):
		return exitInterrupted
	case errors.Is(err, modes.ErrHeldBack):
		// The summary names the issues and the changes.
		hintf(a.stderr, "PLANNING decides what becomes of them: run `ralphd plan` (the daemon plans next by itself)")
		return exitHeld
	case errors.Is(err, modes.ErrFleetPlanning):
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "daemons sharing this tracker plan one at a time; nothing was planned. Run `ralphd plan` again once it is done "+
			"(`ralphd status` in that clone says who plans; a crashed planner's lease expires after fleet_lease)")
		return exitLocked
	case errors.Is(err, modes.ErrDirtyTree), errors.Is(err, modes.ErrTrackerChanged):
		errorf(a.stderr, "%v", err)
		return exitUsage
	default:
		return reportErr(a, err)
	}
}

// loopSetup is everything a run holds open.
type loopSetup struct {
	p      *project
	loop   *modes.Loop
	closer []func()
	// redact keeps the secrets of ralphd's environment out of the log,
	// notes, state files, reports and the terminal.
	redact *logjsonl.Redactor
	sinks  []logjsonl.Sink // what the loop's Observer fans out to
}

func (ls *loopSetup) close() {
	for i := len(ls.closer) - 1; i >= 0; i-- {
		ls.closer[i]()
	}
}

// setupLoop opens the project, takes its lock, resolves bd and the agent,
// and builds the Loop. On failure it prints why and returns the exit code.
func setupLoop(ctx context.Context, a *app, fs *flag.FlagSet, mode string) (*loopSetup, int) {
	p, code := openProject(ctx, a, fs, "")
	if p == nil {
		return nil, code
	}
	ls := &loopSetup{p: p}
	lock, err := p.store.Lock(mode)
	if err != nil {
		return nil, reportErr(a, err)
	}
	ls.closer = append(ls.closer, func() { _ = lock.Release() })
	// Descendants of an agent that leave its process group (setsid, double
	// fork) are re-parented to ralphd, so they can be found and ended.
	if err := proc.BecomeSubreaper(); err != nil {
		warnf(a.stderr, "cannot become a child subreaper (%v); processes an agent detaches may outlive their iteration", err)
	}
	contain := containment(a)
	ls.redact = logjsonl.FromEnv(a.env)
	p.store.SetRedact(ls.redact.Lines)
	out, errOut := ls.redact.Writer(a.stdout), ls.redact.Writer(a.stderr)
	a.stdout, a.stderr = out, errOut
	ls.closer = append(ls.closer, func() { _ = out.Close(); _ = errOut.Close() })

	realBD, err := beads.LookPath(p.cfg.BD)
	if err != nil {
		ls.close()
		return nil, reportErr(a, err)
	}
	if code := checkBDVersion(ctx, a, realBD, mode, p.cfg); code != exitOK {
		ls.close()
		return nil, code
	}
	agents, code := lookupAgents(a, p.cfg)
	if len(agents) == 0 {
		ls.close()
		return nil, code
	}
	bd, err := beads.NewClient(realBD, p.dir)
	if err != nil {
		ls.close()
		return nil, reportErr(a, err)
	}
	bd.Redact = ls.redact.String
	promptDir := p.cfg.PromptDir
	if promptDir == "" {
		promptDir = filepath.Join(p.dir, ".ralph")
	}
	ps, err := prompts.Load(promptDir)
	if err != nil {
		ls.close()
		errorf(a.stderr, "%v", err)
		return nil, exitUsage
	}
	sb, err := sandbox.Choose(p.cfg.Sandbox, sandbox.Probe(ctx, a.getenv("PATH"), p.cfg.Network != sandbox.NetOpen))
	if err != nil {
		ls.close()
		errorf(a.stderr, "%v", err)
		return nil, exitUsage
	}
	now := time.Now()
	loop := &modes.Loop{Deps: modes.Deps{
		Dir: p.dir, Config: p.cfg, BD: bd, State: p.store, Backend: agents[0].Backend, Rota: modes.NewRota(agents...), Prompts: ps,
		Human: humanLogger(a), Out: a.stdout, RunID: logjsonl.NewRunID(now), Version: readBuildInfo().Version,
		Self: a.argv0, BDClient: bdClient(a.argv0), RealBD: realBD, Env: a.env, Contain: contain, Sandbox: sb,
		ConfigDirs: []string{filepath.Dir(globalConfigFile(a))},
	}}
	ls.loop = loop
	if code := ls.startNotifier(a); code != exitOK {
		ls.close()
		return nil, code
	}
	return ls, exitOK
}

// openLog starts the run's JSONL log when logging is on.
func (ls *loopSetup) openLog(a *app) int {
	if !ls.loop.Config.Log {
		return exitOK
	}
	w, err := logjsonl.CreateRun(ls.p.store.LogsDir(), ls.loop.RunID, ls.loop.Config.LogRetention, logjsonl.Options{Redact: ls.redact.Lines})
	if err != nil {
		errorf(a.stderr, "open the run log: %v", err)
		return exitError
	}
	ls.loop.Log = w
	ls.closer = append(ls.closer, func() { _ = w.Close() })
	return exitOK
}

// lookupAgents returns the configured agents, in order. With several, one
// that is not installed is left out with a warning; when none is left (or
// the one agent is not installed), it prints why and returns exit 5, or 2
// for a bad config.
func lookupAgents(a *app, cfg *config.Config) ([]modes.Agent, int) {
	var out []modes.Agent
	var missing []agent.Backend
	for _, spec := range cfg.Agents {
		b, err := agent.Lookup(spec.Backend, agent.WithAgentCmd(cfg.AgentCmd))
		if err != nil {
			errorf(a.stderr, "%v", err)
			return nil, exitUsage
		}
		if bin := b.Binary(); bin != "" {
			if _, err := exec.LookPath(bin); err != nil {
				missing = append(missing, b)
				if len(cfg.Agents) > 1 {
					warnf(a.stderr, "agent %s is not installed (%s not found on PATH); running without it", spec.Name, bin)
				}
				continue
			}
		}
		out = append(out, modes.Agent{Name: spec.Name, Backend: b, Model: spec.Model})
	}
	if len(out) == 0 {
		for _, b := range missing {
			errorf(a.stderr, "agent %s is not installed: %s not found on PATH", b.Name(), b.Binary())
			if h, ok := b.(agent.InstallHinter); ok {
				hintf(a.stderr, "%s", h.InstallHint())
			}
		}
		return nil, exitAgent
	}
	return out, exitOK
}

// containment returns how iterations are contained: a cgroup v2 of their
// own when ralphd's cgroup allows it (after ending what a killed ralphd
// left in its cgroups), else nil, with a warning that says why.
func containment(a *app) *proc.Containment {
	p, err := proc.Find()
	if err != nil {
		warnf(a.stderr, "no cgroup for the agent (%v); processes an agent detaches and hides are ended only while ralphd runs", err)
		return nil
	}
	for _, g := range proc.Sweep(p, 5*time.Second) {
		warnf(a.stderr, "ended the processes a killed ralphd left in %s", g)
	}
	return &proc.Containment{Parent: p, Self: a.argv0}
}

// bdClient returns the small bd client (ralphd-bd) installed beside the
// ralphd at self, or "" when there is none: agents then get ralphd itself
// as their bd client.
func bdClient(self string) string {
	p := filepath.Join(filepath.Dir(self), "ralphd-bd")
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return p
	}
	return ""
}

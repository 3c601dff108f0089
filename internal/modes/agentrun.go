package modes

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

// agentRun is one agent invocation's parameters.
type agentRun struct {
	mode      string
	iteration int
	issue     string
	attempt   int
	prompt    string
	powers    *guard.Powers // BUILD: what the guard allows beyond its table
	budget    float64
	// The work tree's git dirs, when the caller has just found them (the
	// sandbox protects them); "" to look them up.
	gitDir, gitCommonDir string
	// resume is the session to resume instead of starting a fresh one,
	// and carried says the iteration counted no attempt of its own
	// (state.Running.Carried).
	resume  *agent.Session
	carried bool
	// saved, when set, receives the session of a run cut short after the
	// agent started working, read back from the CLI's dirs for the next
	// attempt to resume (resume.go).
	saved **agent.Session
}

// runAgent runs the agent once with the bd guard first on its PATH, the
// running-agent record persisted while it runs, and its output streamed
// into the run log.
func (l *Loop) runAgent(ctx context.Context, r agentRun) (agent.Outcome, []state.BDCall, error) {
	// The scratch dir lives in the temp dir (agents' sandboxes allow it);
	// its name carries the project id so the next start's sweep can remove
	// what a killed ralphd left.
	scratch, err := os.MkdirTemp("", scratchPrefix(l.State.Identity().ID))
	if err != nil {
		return agent.Outcome{}, nil, fmt.Errorf("make the iteration's scratch dir: %w", err)
	}
	defer os.RemoveAll(scratch)
	// The agent's bd reaches the guard through a broker in this process:
	// the mode lives here, where the agent cannot rewrite it, and ralphd
	// runs the real bd and writes the audit itself.
	var logMu sync.Mutex
	g, err := guard.Serve(ctx, scratch, guard.Setup{
		Self: l.Self, Client: l.BDClient, Mode: guard.Mode(r.mode), RealBD: l.RealBD, RunID: l.RunID,
		Iteration: r.iteration, StateDir: l.State.Dir(), WorkTree: l.Dir, Powers: r.powers,
		Env: append(slices.Clip(l.environ()), agent.RalphEnv(agent.Invocation{Mode: r.mode, IssueID: r.issue, Iteration: r.iteration, Attempt: r.attempt})...),
		OnCall: func(_ time.Time, call state.BDCall) {
			logMu.Lock()
			defer logMu.Unlock()
			l.event(logjsonl.EventBDCall, call)
		},
		OnRefused: func(pid int, why string) {
			l.human().Warn("refused a bd call", "pid", pid, "why", why)
		},
		// The agent's allowed writes, told to the tracker reads as
		// ralphd's own are: what they explain on an issue ralphd re-reads
		// meanwhile is not a hidden change; the agent's window judges it.
		OnWrite: l.agentWrote(),
	})
	if err != nil {
		return agent.Outcome{}, nil, err
	}
	defer g.Close()
	inv := agent.Invocation{
		Mode: r.mode, IssueID: r.issue, Iteration: r.iteration, Attempt: r.attempt,
		Prompt: r.prompt, Dir: l.Dir, Model: l.agentModel(), ScratchDir: scratch,
		DenyBash:     g.DenyPrefixes(),
		DenyWhy:      guard.DenyMessages(),
		HookArgv:     g.HookArgv(),
		MaxBudgetUSD: r.budget,
		Sandboxed:    l.sandboxed(r.mode),
		Home:         l.agentHome(),
		Resume:       r.resume,
	}
	// The running record, and in it the first session id the agent's
	// stream announces: it comes before any tool of the agent's runs, so
	// the agent's code cannot choose the session ralphd resumes.
	var running state.Running
	var session firstSession
	opts := agent.RunOptions{
		Timeout:    l.Config.IterationTimeout,
		Grace:      l.Config.StopGrace,
		Env:        l.environ(),
		PathPrefix: g.BinDir(),
		ExtraEnv:   g.Env(),
		Contain:    l.Contain,
		OnStart: func(s agent.Started) error {
			g.SetLeader(s.PID)
			running = state.Running{
				PGID: s.PGID, PID: s.PID, StartTicks: s.StartTime, Marker: s.Marker, Iteration: r.iteration, IssueID: r.issue,
				Attempt: r.attempt, Mode: r.mode, RunID: l.RunID, StartedAt: l.now(),
				Agent: l.Backend.Name(), Model: l.agentModel(), Resumed: r.resume != nil, Carried: r.carried,
				DirtyAtStart: l.dirtyAtStart,
			}
			if r.mode == ModeBuild {
				running.GuardedAbsent = l.guardedAbsent
			}
			return l.State.WriteRunning(running)
		},
		OnEvent: func(ev agent.Event) {
			if !session.see(ev) {
				return
			}
			running.SessionID = session.id
			if err := l.State.WriteRunning(running); err != nil {
				l.human().Warn("could not record the agent's session id", "err", err)
			}
		},
	}
	if l.sandboxed(r.mode) {
		sb, err := l.enterSandbox(ctx, scratch, r.gitDir, r.gitCommonDir, func(host string) {
			logMu.Lock()
			defer logMu.Unlock()
			l.event(logjsonl.EventNetworkRefused, logjsonl.NetworkRefused{Iteration: r.iteration, IssueID: r.issue, Host: host})
		}, g.ReadOnly()...)
		if err != nil {
			return agent.Outcome{}, nil, fmt.Errorf("sandbox the agent: %w", err)
		}
		defer sb.stop()
		opts.Wrap = sb.wrap
		// In the base environment, so that a backend's own TMPDIR (Codex's)
		// wins over it.
		opts.Env = append(slices.Clip(opts.Env), sb.tmpdir)
	}
	if l.Log != nil {
		// The log splits lines itself, so an over-long line's pieces carry
		// chunk markers; Close flushes a last line without a newline. A
		// worker's lines carry its name (logjsonl.WorkerKey).
		w := l.State.Worker()
		so, se := l.Log.WorkerStreamWriter(w, logjsonl.StreamStdout), l.Log.WorkerStreamWriter(w, logjsonl.StreamStderr)
		opts.StdoutRaw, opts.StderrRaw = so, se
		defer so.Close()
		defer se.Close()
	}
	out, err := agent.Run(ctx, l.Backend, inv, opts)
	// Calls still in flight end here; later ones are refused.
	_ = g.Close()
	calls := g.Calls()
	if session.id != "" {
		out.SessionID = session.id // the first the stream announced, not whatever came last
	}
	if err == nil && r.saved != nil && r.resume == nil && resumableStatus(out.Status) && out.ToolCalls > 0 {
		*r.saved = l.saveSession(l.Backend, inv, session.id)
	}
	if err != nil {
		// The caller undoes the iteration and clears the running record.
		return out, calls, fmt.Errorf("run %s: %w", l.Backend.Name(), err)
	}
	return out, calls, nil
}

// scratchPrefix names a project's per-iteration scratch dirs.
func scratchPrefix(projectID string) string { return "ralphd-iter-" + projectID + "-" }

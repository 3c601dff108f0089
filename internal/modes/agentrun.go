package modes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	budget    float64
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
	bin := filepath.Join(scratch, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		return agent.Outcome{}, nil, fmt.Errorf("make the guard's bin dir: %w", err)
	}
	// The guard is ralphd itself, behind a small `bd` wrapper that sets the
	// mode and the real bd's path itself: nothing the agent puts in its
	// environment (RALPHD_GUARD_MODE=plan bd …) can change them.
	if err := writeGuardWrapper(filepath.Join(bin, "bd"), l.Self, r.mode, l.RealBD); err != nil {
		return agent.Outcome{}, nil, fmt.Errorf("install the bd guard: %w", err)
	}

	auditFile := filepath.Join(scratch, "audit.jsonl")
	genv := []string{
		guard.EnvRunID + "=" + l.RunID,
		guard.EnvIteration + "=" + strconv.Itoa(r.iteration),
		guard.EnvStateDir + "=" + l.State.Dir(),
		EnvAuditFile + "=" + auditFile,
	}
	if l.Log != nil {
		genv = append(genv, guard.EnvLogPath+"="+l.Log.Path())
	}
	inv := agent.Invocation{
		Mode: r.mode, IssueID: r.issue, Iteration: r.iteration, Attempt: r.attempt,
		Prompt: r.prompt, Dir: l.Dir, Model: l.Config.Model, ScratchDir: scratch,
		DenyBash:     guard.DenyPrefixes(guard.Mode(r.mode)),
		HookArgv:     []string{l.Self, "hook", "pre-tool-use", "--mode", r.mode},
		MaxBudgetUSD: r.budget,
	}
	opts := agent.RunOptions{
		Timeout:    l.Config.IterationTimeout,
		Grace:      l.Config.StopGrace,
		Env:        l.environ(),
		PathPrefix: bin,
		ExtraEnv:   genv,
		OnStart: func(s agent.Started) error {
			return l.State.WriteRunning(state.Running{
				PGID: s.PGID, PID: s.PID, StartTicks: s.StartTime, Marker: s.Marker, Iteration: r.iteration, IssueID: r.issue,
				Attempt: r.attempt, Mode: r.mode, RunID: l.RunID, StartedAt: l.now(),
			})
		},
	}
	if l.Log != nil {
		// The log splits lines itself, so an over-long line's pieces carry
		// chunk markers; Close flushes a last line without a newline.
		so, se := l.Log.StreamWriter(logjsonl.StreamStdout), l.Log.StreamWriter(logjsonl.StreamStderr)
		opts.StdoutRaw, opts.StderrRaw = so, se
		defer so.Close()
		defer se.Close()
	}
	out, err := agent.Run(ctx, l.Backend, inv, opts)
	calls := readAudit(auditFile)
	if err != nil {
		// The caller undoes the iteration and clears the running record.
		return out, calls, fmt.Errorf("run %s: %w", l.Backend.Name(), err)
	}
	return out, calls, nil
}

// EnvAuditFile names the file the guard appends one JSON line to for each
// bd call it sees (a state.BDCall), so the iteration's history record can
// list them.
const EnvAuditFile = "RALPHD_AUDIT_FILE"

// readAudit reads the guard's audit file. Lines that do not parse (a guard
// killed mid-write) are skipped: the run log has its own copy.
func readAudit(path string) []state.BDCall {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var calls []state.BDCall
	for _, line := range bytes.Split(data, []byte("\n")) {
		var c state.BDCall
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &c) != nil {
			continue
		}
		calls = append(calls, c)
	}
	return calls
}

// GuardCommand is the hidden ralphd subcommand the bd wrapper runs.
const GuardCommand = "bd-guard"

// writeGuardWrapper writes an executable `bd` that runs ralphd's guard in
// mode with the same arguments, stdin and stdout.
func writeGuardWrapper(path, self, mode, realBD string) error {
	script := "#!/bin/sh\n# ralphd's bd guard: applies the " + mode + " policy, then runs the real bd.\n" +
		guard.EnvMode + "=" + shellQuote(mode) + " " + guard.EnvRealBD + "=" + shellQuote(realBD) +
		" exec " + shellQuote(self) + " " + GuardCommand + " \"$@\"\n"
	return os.WriteFile(path, []byte(script), 0o700)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// scratchPrefix names a project's per-iteration scratch dirs.
func scratchPrefix(projectID string) string { return "ralphd-iter-" + projectID + "-" }

package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/broker"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// This file is the ralphd side of the bd guard protocol: how an agent's bd
// calls reach ralphd. Serve (serve.go), what agents get, puts a thin `bd`
// client first on the agent's PATH and decides, runs and audits each call
// inside ralphd, through a broker. Install puts the older exec wrapper
// there instead (the benchmark's baseline): the wrapper runs `ralphd
// bd-guard` (Main, in audit.go), which decides each call, runs the real bd
// or refuses, and appends the call to the session's audit file and the run
// log; Calls reads the audit file back. Nothing else in ralphd writes the
// `bd` on the agent's PATH, sets its environment or reads its audit.

// Command is the hidden ralphd subcommand the bd wrapper runs; ralphd's
// main hands it to Main.
const Command = "bd-guard"

// HookCommand is the ralphd subcommand an agent's pre-tool hook runs; its
// argument "pre-tool-use" selects Hook.
const HookCommand = "hook"

// Setup is what one agent run's guard needs to know.
type Setup struct {
	Self      string // ralphd's own executable, which the wrapper runs
	Mode      Mode   // the policy to enforce
	RealBD    string // absolute path of the real bd, resolved once at start
	RunID     string // the run's ID, for audit events
	Iteration int    // the iteration number, for audit events
	StateDir  string // the project's state directory
	LogPath   string // the run's JSONL log; "" when logging is off

	// For Serve only:
	// Powers limits what BUILD may do to issues other than the
	// iteration's own, and counts its creates; nil: the policy alone.
	Powers *Powers
	// WorkTree is the agent's work tree: in BUILD a call made from
	// outside it is refused. Empty: calls are served from anywhere.
	WorkTree string
	// Env is the real bd's environment (nil: ralphd's own). The agent's
	// environment does not reach the real bd.
	Env []string
	// OnCall, when set, gets each call the broker audited (the caller
	// writes it to the run log). Calls from several agent processes may
	// arrive at once: OnCall must be safe for concurrent use.
	OnCall func(at time.Time, call state.BDCall)
	// Client, when set, is a small client binary (ralphd-bd) that Serve
	// links as the agent's bd; when empty the bd is a script that runs
	// `Self bd-client`.
	Client string
	// OnRefused, when set, is told about each call refused before it
	// reached the policy (a wrong token, a process outside the agent's
	// tree, the session closed).
	OnRefused func(pid int, why string)
	// OnWrite, when set, is told each write of the agent's that the guard
	// allowed (AgentWrites), before the real bd runs it and again after,
	// with the same *beads.Write, as beads.Client tells ralphd's own: the
	// tracker reads take what it explains on an issue ralphd re-reads
	// (internal/modes, trackread.go). It must be safe for concurrent use.
	OnWrite func(w *beads.Write)
}

// Session is one agent run's installed guard: a bin directory holding the
// `bd` wrapper, the environment the agent must carry, and the audit file
// the guard appends each bd call to.
type Session struct {
	setup     Setup
	bin       string
	auditFile string

	// Set by Serve: the broker and the calls it audited, and what the
	// work tree's .git was when it began (gitLink).
	server  *broker.Server
	gitLink string
	mu      sync.Mutex
	calls   []state.BDCall
}

// Install writes the guard's `bd` wrapper and prepares its audit file
// under dir, a private per-iteration scratch directory that the caller
// removes when the agent is done.
//
// The wrapper sets the mode and the real bd's path itself, in the script:
// nothing the agent puts in its environment (RALPHD_GUARD_MODE=plan bd …)
// can change them.
func Install(dir string, s Setup) (*Session, error) {
	if !s.Mode.Valid() {
		return nil, fmt.Errorf("install the bd guard: mode %q is neither build nor plan", string(s.Mode))
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		return nil, fmt.Errorf("install the bd guard: %w", err)
	}
	script := "#!/bin/sh\n# ralphd's bd guard: applies the " + string(s.Mode) + " policy, then runs the real bd.\n" +
		EnvMode + "=" + text.ShellQuote(string(s.Mode)) + " " + EnvRealBD + "=" + text.ShellQuote(s.RealBD) +
		" exec " + text.ShellQuote(s.Self) + " " + Command + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "bd"), []byte(script), 0o700); err != nil {
		return nil, fmt.Errorf("install the bd guard: %w", err)
	}
	return &Session{setup: s, bin: bin, auditFile: filepath.Join(dir, "audit.jsonl")}, nil
}

// BinDir is the directory to put first on the agent's PATH, so that its
// `bd` is the guard.
func (s *Session) BinDir() string { return s.bin }

// Env is the environment the agent (and so the guard it runs) must carry,
// as KEY=value pairs added after everything else.
func (s *Session) Env() []string {
	if s.server != nil {
		return []string{s.server.EnvVar()}
	}
	env := []string{
		EnvRunID + "=" + s.setup.RunID,
		EnvIteration + "=" + strconv.Itoa(s.setup.Iteration),
		EnvStateDir + "=" + s.setup.StateDir,
		EnvAuditFile + "=" + s.auditFile,
	}
	if s.setup.LogPath != "" {
		env = append(env, EnvLogPath+"="+s.setup.LogPath)
	}
	return env
}

// HookArgv is the command an agent's pre-tool hook runs to check one
// shell tool call against the session's policy (Hook).
func (s *Session) HookArgv() []string {
	return []string{s.setup.Self, HookCommand, "pre-tool-use", "--mode", string(s.setup.Mode)}
}

// DenyPrefixes are the bd command prefixes the session's mode refuses
// outright, for the agent's own permission system (DenyPrefixes).
func (s *Session) DenyPrefixes() []string { return DenyPrefixes(s.setup.Mode) }

// Calls returns the bd calls the guard audited so far, in order. A line
// that does not parse (a guard killed mid-write) is skipped: the run log
// has its own copy.
func (s *Session) Calls() []state.BDCall {
	if s.server != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return append([]state.BDCall(nil), s.calls...)
	}
	return readAudit(s.auditFile)
}

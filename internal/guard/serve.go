package guard

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/broker"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// ClientCommand is the hidden ralphd subcommand the `bd` on an agent's
// PATH runs under Serve: a client of the session's broker. ralphd's main
// hands it to ClientMain.
const ClientCommand = "bd-client"

// ClientMain is ralphd running as the agent's `bd` under Serve: it sends
// the call to the session's broker and returns the real bd's exit code.
func ClientMain(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	return broker.RunClient(args, getenv, stdin, stdout, stderr)
}

// Serve installs the guard for one agent run as a broker: the `bd` first
// on the agent's PATH is a thin client (ClientCommand) that sends its
// argv, working directory and stdin over a unix socket under dir to this
// process, which decides the call with s.Mode, held here and nowhere the
// agent can write, runs the real bd itself with s.Env, streams its output
// back, and audits the call (Calls, s.OnCall). The client carries no mode
// and no path to the real bd: rewriting it, or the environment, gains the
// agent nothing.
//
// Only the agent's own processes are served: call SetLeader with the
// agent's pid as soon as it runs. Close ends the session: calls in flight
// are cancelled and later ones refused, so a process the agent left behind
// cannot act after its iteration.
func Serve(ctx context.Context, dir string, s Setup) (*Session, error) {
	if !s.Mode.Valid() {
		return nil, fmt.Errorf("install the bd guard: mode %q is neither build nor plan", string(s.Mode))
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		return nil, fmt.Errorf("install the bd guard: %w", err)
	}
	sess := &Session{setup: s, bin: bin}
	if s.WorkTree != "" {
		sess.gitLink = gitLink(s.WorkTree)
	}
	srv, err := broker.Listen(dir, sess.handle)
	if err != nil {
		return nil, fmt.Errorf("install the bd guard: %w", err)
	}
	sess.server = srv
	srv.Refused = s.OnRefused
	if err := writeClient(filepath.Join(bin, "bd"), s); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("install the bd guard: %w", err)
	}
	go srv.Serve(ctx)
	return sess, nil
}

// writeClient puts the agent's bd at path: a link to the small client
// binary when there is one, else a script that runs ralphd as the client.
func writeClient(path string, s Setup) error {
	if s.Client != "" {
		return os.Symlink(s.Client, path)
	}
	script := "#!/bin/sh\n# ralphd's bd: a client of the running ralphd, which decides and runs each call.\n" +
		"exec " + text.ShellQuote(s.Self) + " " + ClientCommand + " \"$@\"\n"
	return os.WriteFile(path, []byte(script), 0o700)
}

// handle serves one call that reached the broker.
func (s *Session) handle(ctx context.Context, c broker.Call, stdin io.Reader, stdout, stderr io.Writer) int {
	bdEnv := s.setup.Env
	if s.setup.Mode == ModeBuild {
		if bdEnv == nil {
			bdEnv = os.Environ()
		}
		bdEnv = append(git.Env(withoutBDActor(bdEnv)), buildBDEnv...)
	}
	if bdEnv != nil {
		// As under the exec wrapper, the real bd can tell it runs for an
		// agent (the benchmark's recorder looks).
		bdEnv = append(slices.Clip(bdEnv), EnvMode+"="+string(s.setup.Mode))
	}
	env := GuardEnv{
		Mode: s.setup.Mode, RealBD: s.setup.RealBD, Dir: c.Dir, WorkTree: s.setup.WorkTree, GitLink: s.gitLink, Env: bdEnv,
		Powers: s.setup.Powers, OnWrite: s.setup.OnWrite,
		Audit: func(_ context.Context, at time.Time, call state.BDCall) error {
			call.Iteration = s.setup.Iteration
			s.mu.Lock()
			s.calls = append(s.calls, call)
			s.mu.Unlock()
			if s.setup.OnCall != nil {
				s.setup.OnCall(at, call)
			}
			return nil
		},
	}
	return RunGuard(ctx, c.Argv, env, stdin, stdout, stderr)
}

// buildBDEnv is added to the real bd's environment for a BUILD agent's
// call. The broker runs bd outside the sandbox, in the directory the agent
// names, where the agent may have made a git repository and a tracker of
// its own (a copy of the real one will do), with their config and hooks.
// So bd must run no code but its own there: none of the tracker's hooks
// (.beads/hooks/on_create, on_update, on_close), none of git's (`bd hooks
// run` chains <hooks dir>/<hook>.old: gitsafe.Env points core.hooksPath
// at /dev/null, and turns fsmonitor off), and no `git add` of an export,
// which would run the repository's filters. Nor does a git hook shim
// import .beads/issues.jsonl (import.auto, on by default): that is a bulk
// change, which BUILD may not make. bd reads these settings from the
// environment before its config files. (withoutBDActor keeps bd from
// rewriting a file the agent names.)
var buildBDEnv = []string{"BD_NO_HOOKS=true", "BD_IMPORT_AUTO=false", "BD_EXPORT_GIT_ADD=false"}

// withoutBDActor returns env without BD_ACTOR, bd's old name for
// BEADS_ACTOR: given it, `bd hooks run prepare-commit-msg FILE` rewrites
// FILE, any file the agent names, outside the sandbox (to add an
// Executed-By trailer). Its value moves to BEADS_ACTOR when that is
// unset, so bd's actor stays the same (bd prefers BEADS_ACTOR).
func withoutBDActor(env []string) []string {
	out := make([]string, 0, len(env)+1)
	var old string
	beads := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "BD_ACTOR="); ok {
			old = v
			continue
		}
		beads = beads || strings.HasPrefix(kv, "BEADS_ACTOR=")
		out = append(out, kv)
	}
	if old != "" && !beads {
		out = append(out, "BEADS_ACTOR="+old)
	}
	return out
}

// SetLeader tells a served session the agent's pid: only it and its
// descendants are served. It does nothing for an installed wrapper.
func (s *Session) SetLeader(pid int) {
	if s.server != nil {
		s.server.SetLeader(pid)
	}
}

// ReadOnly lists the paths an agent's sandbox must keep read-only: the
// client's bin dir and the broker's socket dir.
func (s *Session) ReadOnly() []string {
	if s.server == nil {
		return []string{s.bin}
	}
	return []string{s.bin, s.server.Dir()}
}

// Close ends a served session: no call is served after it returns. It
// does nothing for an installed wrapper.
func (s *Session) Close() error {
	if s.server == nil {
		return nil
	}
	return s.server.Close()
}

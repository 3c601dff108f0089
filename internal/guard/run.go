package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/state"
)

// Environment variables ralphd sets for the agent process, read by the guard
// when ralphd runs as `bd` from the agent's PATH.
const (
	EnvMode      = "RALPHD_GUARD_MODE" // build or plan
	EnvRealBD    = "RALPHD_REAL_BD"    // absolute path of the real bd, resolved once at start
	EnvLogPath   = "RALPHD_LOG_PATH"   // the run's JSONL log, when logging is on
	EnvRunID     = "RALPHD_RUN_ID"     // the run's ID, for audit events
	EnvStateDir  = "RALPHD_STATE_DIR"  // the project's state directory (history)
	EnvIteration = "RALPHD_ITERATION"  // the iteration number, for audit events
	EnvAuditFile = "RALPHD_AUDIT_FILE" // the session's audit file, one JSON line per call
)

// ExitRefused is the guard's exit code for a refused call, and for a guard
// that cannot run at all (no mode, no real bd). It is 1 because bd itself
// exits 1 for every error, including its own read-only refusals
// ("operation 'update' is not allowed in read-only mode"), so scripts and
// agents treat a refusal like any failed bd call; the audit log, not the
// exit code, tells refusals apart.
const ExitRefused = 1

// GuardEnv is what the guard needs from its caller.
type GuardEnv struct {
	Mode   Mode
	RealBD string // absolute path of the real bd
	// Audit receives one record per call, after the call finished (or was
	// refused), with the time the call reached the guard. It may be nil.
	// An audit error is reported on stderr and does not change the exit
	// code.
	Audit func(ctx context.Context, at time.Time, call state.BDCall) error
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Dir is the real bd's working directory; empty means the caller's.
	Dir string
	// WorkTree, when set, is the agent's work tree: in BUILD a call made
	// from outside it is refused (RuleElsewhere), since bd would find
	// another tracker from there.
	WorkTree string
	// GitLink is what the work tree's .git was when the session began
	// (gitLink): in BUILD a call is refused once it differs, since bd
	// follows a linked worktree's .git file to the tracker.
	GitLink string
	// Env is the real bd's environment; nil means the caller's.
	Env []string
	// ForwardSignals passes SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to
	// this process on to the real bd: the guard as its own process (Main)
	// does, the broker inside ralphd does not (ralphd's signals are its
	// own; a call ends when ctx does).
	ForwardSignals bool
	// Powers, when set, limits what a BUILD call may do to issues other
	// than the iteration's own, and counts its creates (powers.go).
	Powers *Powers
	// OnWrite, when set, is told each write an allowed call makes
	// (AgentWrites) before the real bd runs and after (Setup.OnWrite).
	OnWrite func(w *beads.Write)
}

// GuardEnvFromEnv reads the mode and the real bd's path from the
// environment through getenv (os.Getenv in production). The audit sink is
// left for the caller to set.
func GuardEnvFromEnv(getenv func(string) string) (GuardEnv, error) {
	mode, err := ParseMode(getenv(EnvMode))
	if err != nil {
		return GuardEnv{}, fmt.Errorf("read %s: %w", EnvMode, err)
	}
	real := getenv(EnvRealBD)
	if real == "" {
		return GuardEnv{Mode: mode}, fmt.Errorf("read %s: not set; run the agent through ralphd", EnvRealBD)
	}
	return GuardEnv{Mode: mode, RealBD: real}, nil
}

// RunGuard decides one bd call and runs it: for the guard run as `bd` on
// the agent's PATH (Main), and for each call that reaches the broker.
// args are the arguments after the program name. It decides the call with
// env.Mode's policy, audits it, and either refuses it (the message on
// stderr, exit ExitRefused) or runs the real bd with the same arguments,
// stdin, stdout and stderr and returns its exit code.
//
// The real bd runs as a child rather than through syscall.Exec, because
// the guard must outlive it to audit its exit code. The child gets its own
// process group; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to the guard are
// forwarded to that group, and cancelling ctx sends SIGTERM to the group
// (bd flushes pending batch commits on SIGTERM) and SIGKILL five seconds
// later. A child killed by a signal yields 128+signal, as in a shell.
func RunGuard(ctx context.Context, args []string, env GuardEnv, stdin io.Reader, stdout, stderr io.Writer) int {
	now := env.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	d := Decide(env.Mode, args)
	if d.Allowed && env.Mode == ModeBuild && env.WorkTree != "" {
		if why := elsewhere(env.Dir, env.WorkTree, env.GitLink); why != "" {
			d = d.refuse(RuleElsewhere, why)
		}
	}
	d = env.Powers.judge(d)
	rec := state.BDCall{
		Argv: append([]string(nil), args...), Mode: string(env.Mode),
		Allowed: d.Allowed, Rule: d.Rule, ExitCode: ExitRefused,
	}
	if !d.Allowed {
		rec.Reason = d.Reason
		fmt.Fprint(stderr, d.Message())
		audit(ctx, env, start, rec, stderr)
		return ExitRefused
	}
	if err := checkRealBD(env.RealBD); err != nil {
		rec.ExitCode, rec.Error = -1, err.Error()
		fmt.Fprintf(stderr, "ralphd guard: cannot run the real bd: %v\n", err)
		audit(ctx, env, start, rec, stderr)
		return ExitRefused
	}
	if env.OnWrite != nil {
		ws := AgentWrites(args)
		for _, w := range ws {
			env.OnWrite(w)
		}
		defer func() {
			for _, w := range ws {
				env.OnWrite(w)
			}
		}()
	}
	code, err := runChild(ctx, env, args, stdin, stdout, stderr)
	rec.ExitCode = code
	if err != nil {
		rec.ExitCode, rec.Error = -1, err.Error()
		fmt.Fprintf(stderr, "ralphd guard: run %s: %v\n", env.RealBD, err)
		code = ExitRefused
	}
	audit(ctx, env, start, rec, stderr)
	return code
}

func audit(ctx context.Context, env GuardEnv, at time.Time, rec state.BDCall, stderr io.Writer) {
	if env.Audit == nil {
		return
	}
	if err := env.Audit(ctx, at, rec); err != nil {
		fmt.Fprintf(stderr, "ralphd guard: audit bd call: %v\n", err)
	}
}

// elsewhere says why bd, run in dir (the caller's working directory when
// empty), may open another tracker than the work tree's, or returns "":
// dir, links resolved, is outside the work tree, or below a .beads or
// .git of its own inside it, which bd would take for the project's; or
// the work tree's .git is no longer link, what it was.
func elsewhere(dir, workTree, link string) string {
	if now := gitLink(workTree); now != link {
		return fmt.Sprintf("a call after the work tree's .git changed (it was %s, it is %s): bd would follow it to another tracker", link, now)
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Sprintf("a call from a directory ralphd cannot find: %v", err)
		}
		dir = wd
	}
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Sprintf("a call from %s, which ralphd cannot resolve", dir)
	}
	w, err := filepath.EvalSymlinks(workTree)
	if err != nil {
		return fmt.Sprintf("a call while the work tree %s cannot be resolved", workTree)
	}
	rel, err := filepath.Rel(w, d)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Sprintf("a call from %s, outside the work tree %s", d, workTree)
	}
	for sub := d; sub != w && len(sub) > len(w); sub = filepath.Dir(sub) {
		for _, name := range []string{".beads", ".git"} {
			if _, err := os.Lstat(filepath.Join(sub, name)); err == nil {
				return fmt.Sprintf("a call from %s, below %s, a tracker or repository of its own inside the work tree",
					d, filepath.Join(sub, name))
			}
		}
	}
	return ""
}

// gitLink describes the work tree's .git, by which bd finds a linked
// worktree's tracker (git's common dir): a directory, or a file or link
// with what it points at.
func gitLink(workTree string) string {
	p := filepath.Join(workTree, ".git")
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return "missing"
	case fi.IsDir():
		return "a directory"
	case fi.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(p)
		return fmt.Sprintf("a link to %q", target)
	case fi.Mode().IsRegular() && fi.Size() <= 4096:
		b, _ := os.ReadFile(p)
		return fmt.Sprintf("a file saying %q", strings.TrimSpace(string(b)))
	}
	return fmt.Sprintf("a %s", fi.Mode().Type())
}

// checkRealBD refuses a real bd path that is missing, relative, not
// executable, or ralphd itself (which would recurse forever).
func checkRealBD(path string) error {
	if path == "" {
		return fmt.Errorf("%s is not set; run the agent through ralphd", EnvRealBD)
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s=%q is not an absolute path", EnvRealBD, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("stat real bd: %w", err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s=%q is not an executable file", EnvRealBD, path)
	}
	if self, err := os.Executable(); err == nil {
		if si, err := os.Stat(self); err == nil && os.SameFile(fi, si) {
			return fmt.Errorf("%s=%q is ralphd itself; it must point at the real bd", EnvRealBD, path)
		}
	}
	return nil
}

// forwarded are the signals the guard passes on to the real bd.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// killDelay is how long a cancelled child gets between SIGTERM and SIGKILL.
const killDelay = 5 * time.Second

// runChild runs the real bd in its own process group and returns its exit
// code. The error is non-nil only when bd could not be started or waited
// for.
func runChild(ctx context.Context, env GuardEnv, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	// argv[0] stays the real bd's absolute path: a bd that re-executes
	// itself through argv[0] must not come back through the guard.
	cmd := exec.CommandContext(ctx, env.RealBD, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Dir, cmd.Env = env.Dir, env.Env
	proc.SetGroup(cmd)
	cmd.Cancel = func() error {
		return proc.SignalGroup(cmd.Process.Pid, syscall.SIGTERM)
	}
	cmd.WaitDelay = killDelay

	sigs := make(chan os.Signal, 4)
	if env.ForwardSignals {
		signal.Notify(sigs, forwarded...)
		defer signal.Stop(sigs)
	}

	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("start: %w", err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if sig, ok := s.(syscall.Signal); ok {
					_ = proc.SignalGroup(cmd.Process.Pid, sig)
				}
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	if ctx.Err() != nil {
		// Whatever is left of the group after a cancel is killed.
		_ = proc.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
	}
	return exitCode(cmd, err)
}

// exitCode turns cmd.Wait's result into a shell-style exit code.
func exitCode(cmd *exec.Cmd, err error) (int, error) {
	ps := cmd.ProcessState
	if ps == nil {
		return -1, fmt.Errorf("wait: %w", err)
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return ps.ExitCode(), fmt.Errorf("wait: %w", err)
	}
	return ps.ExitCode(), nil
}

package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// Defaults for RunOptions.
const (
	DefaultTimeout    = 45 * time.Minute
	DefaultGrace      = 30 * time.Second
	DefaultStderrTail = 16 << 10
	DefaultDrain      = 5 * time.Second
)

// killWait bounds how long Run keeps sending SIGKILL to a tree that does
// not go away (processes in uninterruptible sleep).
const killWait = 5 * time.Second

// pollInterval is how often Run looks at /proc while a tree shuts down.
const pollInterval = 20 * time.Millisecond

// RunOptions configures one Run. The zero value is usable.
type RunOptions struct {
	// Timeout is the per-iteration limit; DefaultTimeout when zero.
	Timeout time.Duration
	// Grace is how long the agent's tree gets between SIGTERM and
	// SIGKILL; DefaultGrace when zero.
	Grace time.Duration
	// Env is the base environment; os.Environ() when nil. Run removes the
	// variables listed in scrubbedEnv from it.
	Env []string
	// PathPrefix, when set, is put first on the agent's PATH (the guard's
	// bin dir, so that its bd wrapper shadows the real bd).
	PathPrefix string
	// ExtraEnv is added last and wins over Env and the backend's own
	// variables (PATH still starts with PathPrefix).
	ExtraEnv []string
	// Wrap, when set, rewrites the command line just before the agent
	// starts: path is the agent's resolved executable and argv its
	// arguments (argv[0] as the backend gave it). The sandbox puts bwrap
	// in front here.
	Wrap func(path string, argv []string) (string, []string)

	// OnStart, when set, is called right after the agent process started
	// and before any other callback, and before the prompt is written to
	// the agent's stdin, so the caller can persist a record of the running
	// agent before it does any work. An error aborts the run: the agent's
	// tree is killed and Run returns the error.
	OnStart func(Started) error
	// OnStdout is called for every stdout line (without the newline).
	// Lines longer than MaxLine arrive in pieces of at most MaxLine bytes.
	// The slice is only valid during the call.
	OnStdout func(line []byte)
	// OnStderr is like OnStdout, for stderr.
	OnStderr func(line []byte)
	// StdoutRaw and StderrRaw, when set, receive each stream's bytes as
	// read, before line splitting: a log writer that does its own line
	// handling (and marks the pieces of over-long lines) reads from here.
	// A write error stops further writes to that writer but never the
	// agent's output.
	StdoutRaw io.Writer
	StderrRaw io.Writer
	// OnEvent is called for every event the backend's parser produces.
	OnEvent func(Event)
	// The callbacks OnStdout and OnEvent run on one goroutine, OnStderr on
	// another. None of them may block for long: the agent blocks on a full
	// pipe while they do.

	// MaxLine bounds the bytes delivered per callback (and held in memory
	// per stream); DefaultMaxLine when zero.
	MaxLine int
	// StderrTail is how many trailing bytes of stderr the parser gets for
	// its classification; DefaultStderrTail when zero.
	StderrTail int
	// Drain bounds how long Run waits for the output pipes to reach EOF
	// once the agent's tree is gone (a process that escaped detection may
	// hold them open); DefaultDrain when zero.
	Drain time.Duration
	// Contain, when set, starts the agent inside a cgroup of its own,
	// watched by a reaper that ends it if ralphd dies; every process in
	// it ends with the run. When nil, or when the cgroup cannot be made
	// (Started.Containment says why), the process group, the run marker
	// and the subreaper are all there is.
	Contain *proc.Containment
}

// Started describes an agent process that has just started.
type Started struct {
	PID  int
	PGID int // equal to PID: every agent leads its own process group
	// StartTime is the process start time in clock ticks after boot
	// (see proc.StartTime); 0 if it could not be read.
	StartTime uint64
	// Marker is the value of RunMarkerEnv in the agent's environment.
	Marker string
	Argv   []string
	// Cgroup is the agent's cgroup directory; "" when it runs in none.
	Cgroup string
	// Containment says how the agent's processes are contained, for the
	// log and status: a cgroup, or the fallback and why.
	Containment string
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.StderrTail <= 0 {
		o.StderrTail = DefaultStderrTail
	}
	if o.Drain <= 0 {
		o.Drain = DefaultDrain
	}
	return o
}

// errIterationTimeout is the cause of a run's context when its timeout fires.
var errIterationTimeout = errors.New("iteration timeout")

// Run runs one agent process for inv and returns how it ended.
//
// The agent runs in inv.Dir, in its own process group, with Pdeathsig
// SIGKILL and with the environment described by RunOptions; the prompt
// (Spec.Stdin) is written to its stdin after OnStart returned. Its stdout
// lines go to OnStdout and to the backend's parser (whose events go to
// OnEvent), its stderr lines to OnStderr and a bounded tail.
//
// When opts.Timeout passes or ctx is cancelled, the whole process group gets
// SIGTERM and, after opts.Grace, SIGKILL; the Outcome is then StatusTimeout
// or StatusInterrupted. Whenever the agent's leader process exits, Run ends
// whatever is left of its tree before returning: the rest of its process
// group and every process carrying the run's RunMarkerEnv value (which
// finds descendants that called setsid or double-forked), first with
// SIGTERM and opts.Grace, then with SIGKILL. When the calling process is a
// child subreaper (proc.BecomeSubreaper), descendants re-parented to it are
// also reaped. A missing agent binary yields StatusFatal with a reason that
// says how to install it.
//
// Pdeathsig is tied to the OS thread that starts the agent: do not call
// Run from a goroutine that locked its thread (runtime.LockOSThread) and
// may exit while the agent runs.
//
// Run returns an error only when it could not run the agent for a reason
// of ralphd's own (the backend could not prepare the command, inv.Dir is
// not a directory, pipes could not be created, OnStart failed); the
// Outcome is then the zero value.
func Run(ctx context.Context, b Program, inv Invocation, opts RunOptions) (Outcome, error) {
	opts = opts.withDefaults()
	if ctx.Err() != nil {
		return Outcome{Status: StatusInterrupted, Reason: "stopped before the agent started", ExitCode: -1}, nil
	}
	spec, err := b.Command(inv)
	if err != nil {
		return Outcome{}, fmt.Errorf("prepare %s agent: %w", b.Name(), err)
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return Outcome{}, fmt.Errorf("prepare %s agent: empty command line", b.Name())
	}
	if inv.Dir != "" {
		if fi, err := os.Stat(inv.Dir); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			return Outcome{}, fmt.Errorf("%s agent: working directory %s: %w", b.Name(), inv.Dir, err)
		}
	}
	token := rand.Text()
	contain, containment := startContainment(opts, inv, token)
	if contain != nil {
		defer contain.Close()
	}
	env := buildEnv(opts.Env, opts.PathPrefix, spec.Env, opts.ExtraEnv, []string{RunMarkerEnv + "=" + token})
	pathEnv, _ := envValue(env, "PATH")
	bin, err := lookPathIn(spec.Argv[0], pathEnv, inv.Dir)
	if err != nil {
		return missingBinary(b, spec.Argv[0], err), nil
	}

	runCtx, cancel := context.WithTimeoutCause(ctx, opts.Timeout, errIterationTimeout)
	defer cancel()
	argv := spec.Argv
	if opts.Wrap != nil {
		bin, argv = opts.Wrap(bin, argv)
	}
	cmd := exec.CommandContext(runCtx, bin, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = inv.Dir
	cmd.Env = env
	// The agent leads its own group and, on Linux, dies with ralphd.
	proc.SetGroup(cmd)
	proc.DieWithParent(cmd.SysProcAttr)
	if contain != nil {
		intoCgroup(cmd.SysProcAttr, contain.Group.FD())
	}
	var cancelledAt atomic.Int64 // unix nanoseconds of the first Cancel; 0 if none
	cmd.Cancel = func() error {
		cancelledAt.CompareAndSwap(0, time.Now().UnixNano())
		return proc.SignalGroup(cmd.Process.Pid, syscall.SIGTERM)
	}
	// After Grace, exec SIGKILLs the leader; the rest of the group follows
	// right after Wait returns (see endTree).
	cmd.WaitDelay = opts.Grace

	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("start %s agent: %w", b.Name(), err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("start %s agent: stdout pipe: %w", b.Name(), err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return Outcome{}, fmt.Errorf("start %s agent: stderr pipe: %w", b.Name(), err)
	}
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, exec.ErrNotFound):
			return missingBinary(b, spec.Argv[0], err), nil
		case errors.Is(err, fs.ErrPermission):
			return Outcome{Status: StatusFatal, ExitCode: -1,
				Reason: fmt.Sprintf("%s agent: cannot execute %s: %v; check its permissions", b.Name(), bin, err)}, nil
		case ctx.Err() != nil:
			return Outcome{Status: StatusInterrupted, Reason: "stopped before the agent started", ExitCode: -1}, nil
		}
		return Outcome{}, fmt.Errorf("start %s agent: %w", b.Name(), err)
	}

	pid := cmd.Process.Pid
	startTime, _ := proc.StartTime(pid)
	tree := treeQuery{
		PGID:      pid,
		Token:     token,
		MinStart:  startTime,
		Self:      os.Getpid(),
		SelfSID:   proc.SelfSID(),
		Subreaper: proc.IsSubreaper(),
	}
	if opts.OnStart != nil {
		started := Started{PID: pid, PGID: pid, StartTime: startTime, Marker: token, Argv: spec.Argv, Containment: containment}
		if contain != nil {
			started.Cgroup = contain.Group.Path
		}
		if err := opts.OnStart(started); err != nil {
			signalTree(pid, nil, syscall.SIGKILL)
			_ = stdin.Close()
			_ = cmd.Wait()
			if contain != nil {
				contain.Group.End(time.Now(), killWait)
			}
			endTree(tree, time.Now())
			return Outcome{}, fmt.Errorf("record running %s agent: %w", b.Name(), err)
		}
	}

	parser := b.NewParser()
	tail := tailBuffer{size: opts.StderrTail}
	said := tailBuffer{size: OutputTailBytes} // written by the stdout reader only
	var readers, writer sync.WaitGroup
	readers.Go(func() {
		_ = readLines(tee(outR, opts.StdoutRaw), opts.MaxLine, func(line []byte) {
			if opts.OnStdout != nil {
				opts.OnStdout(line)
			}
			for _, ev := range parser.Line(line) {
				if opts.OnEvent != nil {
					opts.OnEvent(ev)
				}
				if t := eventText(ev); t != "" {
					said.add([]byte(t))
				}
			}
		})
	})
	readers.Go(func() {
		_ = readLines(tee(errR, opts.StderrRaw), opts.MaxLine, func(line []byte) {
			if opts.OnStderr != nil {
				opts.OnStderr(line)
			}
			tail.add(line)
		})
	})
	writer.Go(func() {
		// An agent that exits without reading its stdin makes this fail
		// (EPIPE, or the pipe closed by Wait); that is not an error.
		_, _ = io.WriteString(stdin, spec.Stdin)
		_ = stdin.Close()
	})

	waitErr := cmd.Wait()
	graceEnd := time.Now().Add(opts.Grace)
	if at := cancelledAt.Load(); at != 0 {
		graceEnd = time.Unix(0, at).Add(opts.Grace)
	}
	left := 0
	if contain != nil {
		// Everything the agent started, however it detached, is here.
		left = contain.Group.End(graceEnd, killWait)
	}
	// What left the cgroup (or everything, without one).
	left += endTree(tree, graceEnd)
	if !waitTimeout(&readers, opts.Drain) {
		now := time.Now()
		_ = outR.SetReadDeadline(now)
		_ = errR.SetReadDeadline(now)
		readers.Wait()
	}
	writer.Wait()

	if cmd.ProcessState == nil {
		return Outcome{}, fmt.Errorf("wait for %s agent: %w", b.Name(), waitErr)
	}
	exitCode := cmd.ProcessState.ExitCode()
	out := parser.Finish(exitCode, tail.String())
	out.ExitCode = exitCode
	out.OutputTail = strings.TrimRight(said.String(), "\n")
	if bad := checkFigures(&out); len(bad) > 0 {
		out.Rejected = bad
		out.Reason += "; ignored figures the agent reported that cannot be true: " + strings.Join(bad, ", ")
	}
	if cancelledAt.Load() != 0 {
		if errors.Is(context.Cause(runCtx), errIterationTimeout) {
			out.Status = StatusTimeout
			out.Reason = fmt.Sprintf("killed at the iteration timeout (%s)", opts.Timeout)
		} else {
			out.Status = StatusInterrupted
			out.Reason = "stopped: ralphd was asked to stop"
		}
		out.ResetAt = time.Time{}
		out.Transient = false
	}
	if left > 0 {
		out.Reason += fmt.Sprintf("; %d process(es) of the agent's tree could not be ended", left)
	}
	return out, nil
}

// startContainment makes the run's cgroup when opts asks for one, and
// describes the containment the run gets.
func startContainment(opts RunOptions, inv Invocation, token string) (*proc.Iteration, string) {
	if opts.Contain == nil {
		return nil, opts.Contain.Describe()
	}
	it, err := opts.Contain.Start(fmt.Sprintf("it%d-%.8s", inv.Iteration, token), opts.Grace)
	if err != nil {
		return nil, fmt.Sprintf("process group and child subreaper (the cgroup could not be made: %v)", err)
	}
	return it, "cgroup " + it.Group.Path
}

// endTree ends what is left of an agent's tree after its leader exited:
// SIGTERM to every process still running, a wait until graceEnd for them
// to go, then SIGKILL until none runs (bounded by killWait). Zombie
// children of ours in the tree are reaped. It returns how many processes
// were still running at the end.
func endTree(q treeQuery, graceEnd time.Time) int {
	q.Known = make(map[int]uint64)
	alive := func() []proc.Stat {
		procs, err := findTree(q)
		if err != nil {
			return nil
		}
		for _, p := range procs {
			q.Known[p.PID] = p.StartTime
		}
		reapOurs(q.Self, procs)
		return running(procs)
	}
	procs := alive()
	if len(procs) == 0 {
		return 0
	}
	signalTree(q.PGID, procs, syscall.SIGTERM)
	for time.Now().Before(graceEnd) {
		time.Sleep(pollInterval)
		if procs = alive(); len(procs) == 0 {
			return 0
		}
	}
	killEnd := time.Now().Add(killWait)
	for {
		signalTree(q.PGID, procs, syscall.SIGKILL)
		time.Sleep(pollInterval)
		if procs = alive(); len(procs) == 0 {
			// One more pass reaps the zombies the last SIGKILL produced.
			_ = alive()
			return 0
		}
		if time.Now().After(killEnd) {
			return len(procs)
		}
	}
}

// waitTimeout waits for wg up to d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// missingBinary is the Outcome for an agent binary that cannot be found.
func missingBinary(b Program, name string, err error) Outcome {
	reason := fmt.Sprintf("%s agent: %s not found", b.Name(), name)
	if !strings.Contains(name, "/") {
		reason += " on PATH"
	}
	if errors.Is(err, errNotExecutable) {
		reason = fmt.Sprintf("%s agent: %v", b.Name(), err)
	}
	if h, ok := b.(InstallHinter); ok && h.InstallHint() != "" {
		reason += "; " + h.InstallHint()
	}
	return Outcome{Status: StatusFatal, Reason: reason, ExitCode: -1}
}

// errNotExecutable marks a file that exists but cannot be executed.
var errNotExecutable = errors.New("not executable")

// lookPathIn finds file like a shell would with the given PATH: a name
// with a slash is taken as is (relative to dir), a bare name is searched
// in pathEnv (an empty entry means dir). It returns an absolute path when
// it can.
func lookPathIn(file, pathEnv, dir string) (string, error) {
	check := func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is %w", p, errNotExecutable)
		}
		return nil
	}
	abs := func(p string) string {
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if !strings.Contains(p, "/") {
			p = "./" + p // never let exec search PATH again
		}
		return p
	}
	if strings.Contains(file, "/") {
		p := abs(file)
		if err := check(p); err != nil {
			return "", err
		}
		return p, nil
	}
	var firstErr error
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := abs(filepath.Join(d, file))
		err := check(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && errors.Is(err, errNotExecutable) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", fmt.Errorf("%s: %w", file, exec.ErrNotFound)
}

// tee copies what is read from r to w, if w is set. After w's first error
// it stops writing: a broken log must not stop the agent's output.
func tee(r io.Reader, w io.Writer) io.Reader {
	if w == nil {
		return r
	}
	return io.TeeReader(r, &bestEffort{w: w})
}

// bestEffort is a writer that swallows its target's errors.
type bestEffort struct {
	w      io.Writer
	failed bool
}

func (b *bestEffort) Write(p []byte) (int, error) {
	if !b.failed {
		if _, err := b.w.Write(p); err != nil {
			b.failed = true
		}
	}
	return len(p), nil
}

package beads

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// runSpec is one bd process run as is: no --json, no --actor added, the
// exit code kept rather than turned into an error. The contract check and
// the version probe use it, where the exit code itself is what they read.
type runSpec struct {
	bin     string
	dir     string
	env     []string // the whole environment; nil inherits ralphd's
	args    []string
	timeout time.Duration
}

// runResult is what one bd process did.
type runResult struct {
	stdout, stderr []byte
	code           int // -1 when a signal ended it
}

// runRaw runs bd under ctx and s.timeout, in a process group of its own that
// is killed as a whole on timeout or cancellation. It fails only when bd
// could not be run to its end; a non-zero exit is a result.
func runRaw(ctx context.Context, s runSpec) (runResult, error) {
	callCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cmd := proc.Command(callCtx, 0, s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	cmd.WaitDelay = waitDelay
	stdout := &capped{max: maxStdout}
	stderr := &capped{max: maxStderr, drop: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	r := runResult{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if ctx.Err() != nil {
		return r, fmt.Errorf("%s: %w", commandLine(s.args), ctx.Err())
	}
	if callCtx.Err() != nil {
		return r, &TimeoutError{Args: s.args, Timeout: s.timeout}
	}
	var xe *exec.ExitError
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil:
		r.code = cmd.ProcessState.ExitCode()
		return r, nil
	case errors.As(err, &xe):
		r.code = xe.ExitCode()
		return r, nil
	case errors.Is(err, exec.ErrNotFound):
		return r, &NotInstalledError{Bin: s.bin, Err: err}
	}
	return r, fmt.Errorf("%s: %w", commandLine(s.args), err)
}

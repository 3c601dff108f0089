package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

// Main is ralphd running as `bd` from an agent's PATH (the wrapper runs
// `ralphd bd-guard ARGS…`). It reads the setup the wrapper and Install put
// in the environment through getenv, audits every call into the session's
// audit file and the run log, and runs RunGuard. It returns the exit code.
func Main(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	env, err := GuardEnvFromEnv(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "ralphd guard: %v\n", err)
		return ExitRefused
	}
	env.Audit = auditSink(getenv(EnvAuditFile), getenv(EnvLogPath), getenv(EnvIteration))
	env.ForwardSignals = true
	return RunGuard(ctx, args, env, stdin, stdout, stderr)
}

// auditSink appends each call to the audit file (for the iteration's
// history record) and, as a bd_call event, to the run log. Either path may
// be empty.
//
// A secret of the environment (see redact.FromEnv) in a call's arguments
// is recorded as [redacted].
func auditSink(auditFile, logPath, iteration string) func(context.Context, time.Time, state.BDCall) error {
	iter, _ := strconv.Atoi(iteration)
	red := logjsonl.FromEnv(os.Environ())
	return func(_ context.Context, at time.Time, call state.BDCall) error {
		call.Iteration = iter
		if !red.Empty() {
			argv := make([]string, len(call.Argv))
			for i, a := range call.Argv {
				argv[i] = red.String(a)
			}
			call.Argv, call.Reason, call.Error = argv, red.String(call.Reason), red.String(call.Error)
		}
		var errs []error
		if auditFile != "" {
			if err := appendAudit(auditFile, call); err != nil {
				errs = append(errs, err)
			}
		}
		if logPath != "" {
			if err := logjsonl.AppendMeta(logPath, logjsonl.EventBDCall, call, at); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

// appendAudit appends call to the audit file as one JSON line, with a
// single write so that concurrent guards do not interleave. The line
// starts with a newline of its own: after a partial line (a guard killed
// mid-write), the call would otherwise join it and be lost with it.
// readAudit skips the blank lines this leaves.
func appendAudit(path string, call state.BDCall) error {
	b, err := json.Marshal(call)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	// Non-blocking: a FIFO in the file's place fails the open (no reader)
	// instead of holding the bd call.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("open audit file: %w", err)
	}
	line := make([]byte, 0, len(b)+2)
	line = append(append(append(line, '\n'), b...), '\n')
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to audit file: %w", err)
	}
	return nil
}

// maxAudit is the largest audit file readAudit reads: over a million bd
// calls' records.
const maxAudit = 256 << 20

// readAudit reads an audit file; see Session.Calls.
// Only a regular file of at most maxAudit bytes is read: a FIFO, or a
// link to /dev/zero, in its place would hang the judgement.
func readAudit(path string) []state.BDCall {
	data, err := atomicfile.Read(path, maxAudit)
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

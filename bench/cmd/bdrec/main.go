// Command bdrec records a call to bd or git, then executes the real
// program in its place. Installed (copied or linked) under the name of the
// program it stands for, it appends one bench.Call JSON line to the file
// named by $BENCH_CALL_LOG and execs $BENCH_REAL_BD or $BENCH_REAL_GIT with
// the same arguments, stdin, stdout and environment.
//
// The benchmarks pass it to ralphd as --bd, and put it first on PATH as
// git, to learn exactly which calls ralphd makes, so that each can be
// replayed and timed alone.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/guard"
)

// EnvCallLog names the call log; EnvRealPrefix plus the upper-cased
// program name names the real program. With EnvTimeCalls set, bdrec runs
// the real program as its child instead of exec'ing it, and appends the
// call after it exits, with how long it took.
const (
	EnvCallLog    = "BENCH_CALL_LOG"
	EnvRealPrefix = "BENCH_REAL_"
	EnvTimeCalls  = "BENCH_TIME_CALLS"
)

func main() {
	name := filepath.Base(os.Args[0])
	real := os.Getenv(EnvRealPrefix + strings.ToUpper(name))
	if real == "" {
		fmt.Fprintf(os.Stderr, "bdrec: set %s%s to the real %s\n", EnvRealPrefix, strings.ToUpper(name), name)
		os.Exit(127)
	}
	path := os.Getenv(EnvCallLog)
	if path != "" && os.Getenv(EnvTimeCalls) != "" {
		os.Exit(timed(path, name, real))
	}
	if path != "" {
		dir, _ := os.Getwd()
		c := bench.Call{
			Prog:    name,
			Argv:    os.Args[1:],
			Dir:     dir,
			Parent:  parentComm(),
			Guarded: os.Getenv(guard.EnvMode) != "",
			Issue:   os.Getenv("RALPH_ISSUE_ID"),
		}
		if err := bench.AppendCall(path, c); err != nil {
			fmt.Fprintf(os.Stderr, "bdrec: %v\n", err)
			os.Exit(127)
		}
	}
	argv := append([]string{name}, os.Args[1:]...)
	err := syscall.Exec(real, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "bdrec: exec %s: %v\n", real, err)
	os.Exit(127)
}

// timed runs the real program as a child with bdrec's arguments, stdio
// and environment, records the call with its duration and returns its
// exit code.
func timed(path, name, real string) int {
	dir, _ := os.Getwd()
	c := bench.Call{Prog: name, Argv: os.Args[1:], Dir: dir, Parent: parentComm(),
		Guarded: os.Getenv(guard.EnvMode) != "", Issue: os.Getenv("RALPH_ISSUE_ID")}
	cmd := exec.Command(real, os.Args[1:]...)
	cmd.Args[0] = name
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	c.Nanos = time.Since(start).Nanoseconds()
	code := 0
	if err != nil {
		code = 127
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			fmt.Fprintf(os.Stderr, "bdrec: run %s: %v\n", real, err)
		}
	}
	if err := bench.AppendCall(path, c); err != nil {
		fmt.Fprintf(os.Stderr, "bdrec: %v\n", err)
		return 127
	}
	return code
}

// parentComm returns the parent process's command name.
func parentComm() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", os.Getppid()))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

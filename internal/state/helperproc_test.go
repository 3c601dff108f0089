package state

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/ralphd/ralphd/internal/atomicfile"
)

// helperEnv selects what the re-executed test binary does (see
// TestHelperProcess).
const helperEnv = "RALPHD_STATE_TEST_HELPER"

// TestHelperProcess is not a test: it is the body of the child processes
// that the lock and crash tests start by re-executing the test binary.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for other tests")
	}
	if err := helperMain(mode, os.Getenv("HELPER_ROOT")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helperMain(mode, root string) error {
	id := Identity{ID: testID, Rule: RulePath, RemoteURL: NoRemote, TopLevel: root}
	s, err := Open(context.Background(), root, id, "helper")
	if err != nil {
		return err
	}
	switch mode {
	case "lock":
		// Take the lock, say so, and hold it until stdin closes (or the
		// parent kills us).
		l, err := s.Lock(os.Getenv("HELPER_MODE"))
		if err != nil {
			return err
		}
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return l.Release()
	case "crash":
		// Increment bd-1, and SIGKILL ourselves before the crashAt-th write
		// step.
		crashAt, err := strconv.Atoi(os.Getenv("HELPER_CRASH_AT"))
		if err != nil {
			return err
		}
		n := 0
		s.writer.hook = func(step atomicfile.Step, path string) error {
			if n == crashAt {
				fmt.Printf("crash before %s of %s\n", step, path)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never returns
			}
			n++
			return nil
		}
		_, err = s.IncrementAttempt("bd-1")
		return err
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// helper starts the test binary as a helper process.
func helper(t *testing.T, mode, root string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode, "HELPER_ROOT=" + root}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// startLockHolder starts a helper that takes the project lock, and waits
// until it has. Closing the returned writer lets it release and exit.
func startLockHolder(t *testing.T, root, mode string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := helper(t, "lock", root, "HELPER_MODE="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("lock holder: got %q, %v", line, err)
	}
	return cmd, stdin
}

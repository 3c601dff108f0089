package proc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestCancelKillsTheGroup(t *testing.T) {
	is := is.New(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	ctx, cancel := context.WithCancel(context.Background())
	// The leader starts a child that ignores SIGTERM, records its pid, and
	// waits.
	cmd := Command(ctx, 200*time.Millisecond, "sh", "-c", `sh -c 'trap "" TERM; echo $$ > `+pidFile+`; while :; do sleep 0.05; done' & wait`)
	is.NoErr(cmd.Start())
	var pid int
	for pid == 0 {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	_ = cmd.Wait()
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond) // SIGKILL follows the grace period
	}
	is.True(syscall.Kill(pid, 0) != nil) // the grandchild that ignored SIGTERM is gone too
}

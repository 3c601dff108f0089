package proc

import (
	"context"
	"errors"
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
	for i := 0; i < 100 && alive(pid); i++ {
		time.Sleep(20 * time.Millisecond) // SIGKILL follows the grace period
	}
	is.True(!alive(pid)) // the grandchild that ignored SIGTERM is gone too
}

// alive reports whether pid runs. A zombie does not: it was killed and
// waits for PID 1, its new parent, to reap it, which takes its own time.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return !(i > 0 && i+2 < len(stat) && stat[i+2] == 'Z')
}

func TestSleep(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"the wait ends", context.Background(), time.Millisecond, nil},
		{"no wait", context.Background(), 0, nil},
		{"a negative wait", context.Background(), -time.Hour, nil},
		// An hour's wait ends at once with the context's error: the test
		// would time out otherwise.
		{"cancelled", cancelled, time.Hour, context.Canceled},
		{"past its deadline", expired, time.Hour, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Sleep(tc.ctx, tc.d); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Sleep(%s) = %v, want %v", tc.d, err, tc.want)
			}
		})
	}
	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Sleep(ctx, time.Hour) }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep after cancel = %v, want context.Canceled", err)
		}
	})
}

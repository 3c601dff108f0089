//go:build linux

package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/proc"
)

// TestMain lets the test binary run as the cgroup reaper, as ralphd does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == proc.ReaperCommand {
		os.Exit(proc.RunReaper(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// unmarkedEscapee leaves the process group and the session, and scrubs
// its environment (so the run marker is gone): without a cgroup nothing
// finds it.
const unmarkedEscapee = `( env -i PIDS="$PIDS" setsid sh -c 'echo $$ >> "$PIDS"; trap "" TERM; exec sleep 1000' </dev/null >/dev/null 2>&1 & ) &
while [ ! -s "$PIDS" ]; do sleep 0.01; done
echo started`

func TestRunInCgroupEndsAnUnmarkedEscapee(t *testing.T) {
	p, err := proc.Find()
	if err != nil {
		t.Skipf("no usable cgroup v2: %v", err)
	}
	is := is.New(t)
	pids := filepath.Join(t.TempDir(), "pids")
	var c collector
	var started Started
	out, err := Run(t.Context(), Command{Line: unmarkedEscapee}, Invocation{Iteration: 3}, c.opts(RunOptions{
		Grace: 100 * time.Millisecond, ExtraEnv: []string{"PIDS=" + pids},
		Contain: &proc.Containment{Parent: p, Self: os.Args[0]},
		OnStart: func(s Started) error { started = s; return nil },
	}))
	is.NoErr(err)
	is.Equal(out.Status, StatusOK)
	is.True(strings.HasPrefix(started.Containment, "cgroup "))
	is.True(started.Cgroup != "")
	assertAllGone(t, readPIDs(t, pids))
	_, err = os.Stat(started.Cgroup)
	is.True(errors.Is(err, os.ErrNotExist)) // removed after the run
}

// Without containment, Started says so.
func TestRunWithoutCgroupSaysFallback(t *testing.T) {
	is := is.New(t)
	var started Started
	_, err := Run(t.Context(), Command{Line: "true"}, Invocation{}, RunOptions{Env: testEnv(),
		OnStart: func(s Started) error { started = s; return nil }})
	is.NoErr(err)
	is.Equal(started.Cgroup, "")
	is.True(strings.Contains(started.Containment, "process group"))
}

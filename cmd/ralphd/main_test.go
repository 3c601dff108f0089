package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralphd/ralphd/internal/sandbox"
)

// standinOnce builds the stand-in bd once for the whole test binary. It
// is a separate program, as the user's real bd is: ralphd's guard refuses
// a "real bd" that is ralphd itself.
var standinOnce = sync.OnceValues(buildStandin)

func standinBin(t *testing.T) string {
	t.Helper()
	dir, err := standinOnce()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMain registers ralphd as a command, so scripts run it as a real
// process found on PATH, as in production, and builds the stand-in bd.
func TestMain(m *testing.M) {
	// Under -race, every process sleeps a second as it exits (GORACE's
	// atexit_sleep_ms, default 1000) for late race reports. The scenarios
	// start ralphd hundreds of times (each bd call an agent makes goes
	// through ralphd's guard), so that sleep was most of the suite's wall
	// time. A race found still fails the process (exit 66).
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	testscript.Main(m, map[string]func(){
		"ralphd": main,
	})
}

func buildStandin() (string, error) {
	dir, err := os.MkdirTemp("", "ralphd-standin-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "bd"), "github.com/ralphd/ralphd/internal/testkit/fakebd")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the stand-in bd: %v\n%s", err, out)
	}
	return dir, nil
}

func TestScripts(t *testing.T) {
	dir := standinBin(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		WorkdirRoot:         scriptsRoot(t),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
			return setupScript(env)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":   cmdExits,
			"until":   cmdUntil,
			"gone":    cmdGone,
			"waitfor": cmdWaitFor,
			"lock":    cmdLock,
			// obs_test.go: the dashboard, metrics and notification scenarios.
			"httpget":  cmdHTTPGet,
			"httpsink": cmdHTTPSink,
			"promlint": cmdPromlint,
			// forge_test.go: a scripted GitHub, a real Gitea.
			"scriptedgh": cmdScriptedGH,
			"gitea":      cmdGitea,
		},
		Condition: giteaCondition,
	})
}

// TestScriptsSandboxed runs the scenarios of BUILD's powers (issue 30)
// again with the BUILD agent under bwrap, as a user's runs are where bwrap
// works: the guard's rules and the ledger must hold the same with the
// sandbox between the agent and the tracker. It needs a working bwrap:
// without one it skips, unless CI is set.
func TestScriptsSandboxed(t *testing.T) {
	if !sandbox.Probe(context.Background(), "", true).OK() {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but bwrap does not work here: scripts/install-system-deps installs it")
		}
		t.Skip("bwrap does not work here (scripts/install-system-deps installs it in CI)")
	}
	files, err := filepath.Glob(filepath.Join("testdata", "script", "powers_*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no powers scenarios found (%v)", err)
	}
	dir := standinBin(t)
	testscript.Run(t, testscript.Params{
		Files:               files,
		WorkdirRoot:         scriptsRoot(t),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
			if err := setupScript(env); err != nil {
				return err
			}
			env.Setenv("RALPH_SANDBOX", "bwrap")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": cmdExits, "until": cmdUntil, "gone": cmdGone, "waitfor": cmdWaitFor, "lock": cmdLock,
		},
	})
}

// scriptsRoot is where the scenarios' $WORK dirs go: outside /tmp when it
// can be, since the BUILD sandbox makes /tmp private (sandbox.HiddenDirs)
// and the sandboxed scenarios keep their agent scripts beside the
// project, in $WORK, as a user keeps theirs beside a project in their
// home. Under /tmp they would vanish from the agent's view.
func scriptsRoot(t *testing.T) string {
	cache, err := os.UserCacheDir()
	if err != nil || strings.HasPrefix(cache, os.TempDir()) {
		return "" // testscript's default, in the temp dir
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return ""
	}
	root, err := os.MkdirTemp(cache, "ralphd-scripts-")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	return root
}

// setupScript gives each script an isolated home, XDG dirs and git
// identity, and a git repository in $WORK/repo.
func setupScript(env *testscript.Env) error {
	work := env.WorkDir
	for k, v := range map[string]string{
		"HOME":                work + "/home",
		"XDG_STATE_HOME":      work + "/state",
		"XDG_CONFIG_HOME":     work + "/config",
		"GIT_AUTHOR_NAME":     "Test User",
		"GIT_AUTHOR_EMAIL":    "test@example.com",
		"GIT_COMMITTER_NAME":  "Test User",
		"GIT_COMMITTER_EMAIL": "test@example.com",
		"GIT_CONFIG_NOSYSTEM": "1",
		"BEADS_ACTOR":         "Test User",
		"NO_COLOR":            "1",
		// Scenarios run unsandboxed unless they ask for the sandbox
		// (sandbox_*.txtar): the detection layers must hold without it.
		"RALPH_SANDBOX": "off",
	} {
		env.Setenv(k, v)
	}
	return os.MkdirAll(work+"/home", 0o700)
}

// cmdExits runs a command and checks its exit code, keeping its stdout
// and stderr for the next assertions: `exits 3 ralphd build 2`.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("bad exit code %q", args[0])
	}
	code := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("run %s: %v", args[1], err)
		}
		code = ee.ExitCode()
	}
	if code != want {
		ts.Fatalf("%s exited %d, want %d", args[1], code, want)
	}
}

// cmdUntil retries a command until it succeeds, for at most DURATION:
// `until 10s grep -q idle daemon.log`. It checks what a background process
// did; it never asserts how fast (speed is measured in benchmarks).
func cmdUntil(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: until DURATION COMMAND [ARGS...]")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("bad duration %q", args[0])
	}
	deadline := time.Now().Add(d)
	for {
		err := ts.Exec(args[1], args[2:]...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not succeed within %s: %v", strings.Join(args[1:], " "), d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cmdGone waits (briefly) until none of the PIDs listed in the named files
// is alive: `gone pids.txt`. With !, it asserts one is still alive.
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: gone FILE")
	}
	var pids []int
	for _, f := range strings.Fields(ts.ReadFile(args[0])) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			ts.Fatalf("bad pid %q in %s", f, args[0])
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		ts.Fatalf("%s lists no pids", args[0])
	}
	alive := func() []int {
		var a []int
		for _, p := range pids {
			if syscall.Kill(p, 0) == nil && !zombie(p) {
				a = append(a, p)
			}
		}
		return a
	}
	for i := 0; i < 100 && len(alive()) > 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if a := alive(); (len(a) > 0) != neg {
		ts.Fatalf("alive: %v of %v", a, pids)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// cmdWaitFor waits up to 10 s for a file to exist: `waitfor FILE`.
// cmdLock takes a lock, machine-wide, that the scenario holds until it
// ends: "lock tmux" in the scenarios that use the user's tmux server on
// its default socket, shared by all of them (and by any other test run on
// the machine), which exits when one of them kills the last session, and
// takes with it a session another was just making.
func cmdLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || strings.ContainsAny(args[0], "/.") {
		ts.Fatalf("usage: lock NAME")
	}
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "ralphd-test-"+args[0]+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	ts.Check(err)
	ts.Check(syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	ts.Defer(func() { _ = f.Close() }) // closing the last descriptor releases the lock
}

func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfor FILE")
	}
	p := ts.MkAbs(args[0])
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear", args[0])
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralphd/ralphd/internal/standin"
)

// TestMain registers ralphd and the stand-in bd as commands, so scripts run
// both as real processes found on PATH, as they are in production.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"ralphd": main,
		"bd":     fakeBD,
	})
}

func fakeBD() {
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	os.Exit(standin.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ(), cwd))
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup:               setupScript,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"gone":    cmdGone,
			"waitfor": cmdWaitFor,
		},
	})
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
	} {
		env.Setenv(k, v)
	}
	return os.MkdirAll(work+"/home", 0o700)
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

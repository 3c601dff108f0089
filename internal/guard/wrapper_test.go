package guard

import (
	"bytes"
	"context"
	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestMain lets the test binary stand in for ralphd: run as
// `<test binary> bd-guard ARGS…` (what the wrapper execs) it is the guard.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Main(context.Background(), os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == ClientCommand {
		os.Exit(ClientMain(os.Args[2:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(standintest.Main(m.Run))
}

// installed installs a guard session for a fake real bd under a scratch
// dir whose path needs quoting, and returns it with the fake bd.
func installed(t *testing.T, mode Mode, logPath string) (*Session, fakeBD) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bd := newFakeBD(t, 0, "")
	scratch := filepath.Join(t.TempDir(), "it's a $dir")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	g, err := Install(scratch, Setup{Self: self, Mode: mode, RealBD: bd.path, RunID: "r1", Iteration: 7,
		StateDir: t.TempDir(), LogPath: logPath})
	if err != nil {
		t.Fatal(err)
	}
	return g, bd
}

// agentBD runs `bd args…` the way an agent does: the session's bin dir
// first on PATH, its environment last, plus extra variables the agent set.
func agentBD(t *testing.T, g *Session, extra []string, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(g.BinDir(), "bd"), args...)
	cmd.Env = append(append(append(os.Environ(), "PATH="+g.BinDir()+":/usr/bin:/bin"), extra...), g.Env()...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("run the wrapper: %v", err)
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}

func TestSessionAuditsEveryCall(t *testing.T) {
	is := is.New(t)
	g, bd := installed(t, ModeBuild, "")

	code, _ := agentBD(t, g, nil, "update", "x-1", "--notes", "it's done")
	is.Equal(code, 0)
	is.Equal(bd.ran(t)[1:], []string{"update", "x-1", "--notes", "it's done"}) // same argv reached the real bd

	code, stderr := agentBD(t, g, nil, "delete", "x-1")
	is.Equal(code, ExitRefused)
	is.True(strings.Contains(stderr, "PLANNING")) // says whose power it is

	calls := g.Calls()
	is.Equal(len(calls), 2)
	is.True(calls[0].Allowed)
	is.Equal(calls[0].Rule, RuleUpdate)
	is.Equal(calls[0].Mode, "build")
	is.Equal(calls[0].Iteration, 7)
	is.True(!calls[1].Allowed)
	is.Equal(calls[1].Rule, RuleDelete)
	is.Equal(calls[1].ExitCode, ExitRefused)
	is.True(calls[1].Reason != "")
}

// The agent knows the guard's variables; setting them must not change the
// mode or the real bd, which the wrapper fixes in its own script.
func TestSessionIgnoresTheAgentsEnvironment(t *testing.T) {
	is := is.New(t)
	g, bd := installed(t, ModeBuild, "")
	evil := newFakeBD(t, 0, "")
	code, _ := agentBD(t, g, []string{EnvMode + "=plan", EnvRealBD + "=" + evil.path}, "delete", "x-1")
	is.Equal(code, ExitRefused) // still BUILD
	is.Equal(evil.ran(t), nil)  // the agent's bd never ran
	is.Equal(bd.ran(t), nil)    // nor the real one, for a refused call
}

func TestSessionLogsToTheRunLog(t *testing.T) {
	is := is.New(t)
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	is.NoErr(os.WriteFile(logPath, nil, 0o600))
	g, _ := installed(t, ModeBuild, logPath)
	agentBD(t, g, nil, "update", "x-1", "--priority", "0")
	b, err := os.ReadFile(logPath)
	is.NoErr(err)
	line := string(b)
	is.True(strings.Contains(line, `"event":"bd_call"`))
	is.True(strings.Contains(line, `"argv":["update","x-1","--priority","0"],"mode":"build","allowed":false`))
	is.True(strings.Contains(line, `"rule":"`+RulePriority+`"`))
}

func TestSessionCallsSkipsTornLines(t *testing.T) {
	is := is.New(t)
	g, _ := installed(t, ModeBuild, "")
	is.Equal(g.Calls(), nil) // no calls yet: no audit file
	agentBD(t, g, nil, "show", "x-1")
	f, err := os.OpenFile(g.auditFile, os.O_WRONLY|os.O_APPEND, 0)
	is.NoErr(err)
	_, err = f.WriteString(`{"argv":["upd` + "\n\n")
	is.NoErr(err)
	is.NoErr(f.Close())
	agentBD(t, g, nil, "ready")
	calls := g.Calls()
	is.Equal(len(calls), 2)
	is.Equal(calls[1].Argv, []string{"ready"})

	// A write torn before its newline: the next call is not lost with it.
	f, err = os.OpenFile(g.auditFile, os.O_WRONLY|os.O_APPEND, 0)
	is.NoErr(err)
	_, err = f.WriteString(`{"argv":["close","x-1"],"allo`)
	is.NoErr(err)
	is.NoErr(f.Close())
	agentBD(t, g, nil, "list")
	calls = g.Calls()
	is.Equal(len(calls), 3)
	is.Equal(calls[2].Argv, []string{"list"})
}

func TestSessionHookAndDeny(t *testing.T) {
	is := is.New(t)
	g, _ := installed(t, ModePlan, "")
	is.Equal(g.DenyPrefixes(), DenyPrefixes(ModePlan)) // PLANNING refuses no bd command, only the forge verbs
	argv := g.HookArgv()
	is.Equal(argv[1:], []string{HookCommand, "pre-tool-use", "--mode", "plan"})

	g, _ = installed(t, ModeBuild, "")
	is.True(len(g.DenyPrefixes()) > 0)
}

func TestInstallRefusesAnUnknownMode(t *testing.T) {
	is := is.New(t)
	_, err := Install(t.TempDir(), Setup{Self: "/bin/true", Mode: Mode("planning!"), RealBD: "/bin/true"})
	is.True(err != nil)
}

func TestMainWithoutSetup(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"ready"}, func(string) string { return "" }, nil, nil, &stderr)
	is.Equal(code, ExitRefused)
	is.True(strings.Contains(stderr.String(), EnvMode))
}

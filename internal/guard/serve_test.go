package guard

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/state"
)

// served starts a broker session for a fake real bd; this test process is
// the agent's leader, so the clients it runs are its agent's processes.
func served(t *testing.T, mode Mode) (*Session, fakeBD, *[]state.BDCall) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bd := newFakeBD(t, 0, "")
	var mu sync.Mutex
	var seen []state.BDCall
	g, err := Serve(context.Background(), t.TempDir(), Setup{Self: self, Mode: mode, RealBD: bd.path, Iteration: 7,
		OnCall: func(_ time.Time, c state.BDCall) { mu.Lock(); seen = append(seen, c); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	g.SetLeader(os.Getpid())
	t.Cleanup(func() { _ = g.Close() })
	return g, bd, &seen
}

// Through the broker, the agent sees what the guard says, byte for byte:
// the real bd's output and exit code, or the refusal's message; ralphd
// audits both.
func TestServeAuditsEveryCall(t *testing.T) {
	is := is.New(t)
	g, bd, seen := served(t, ModeBuild)

	cmd := exec.Command(filepath.Join(g.BinDir(), "bd"), "update", "x-1", "--notes", "it's done")
	cmd.Env = append(os.Environ(), g.Env()...)
	cmd.Stdin = strings.NewReader("from the agent\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	is.NoErr(cmd.Run())
	is.Equal(out.String(), "fake bd out\n")
	is.Equal(errb.String(), "fake bd err\n")
	is.Equal(bd.ran(t)[1:], []string{"update", "x-1", "--notes", "it's done"}) // same argv reached the real bd
	stdin, _ := os.ReadFile(bd.stdinFile)
	is.Equal(string(stdin), "from the agent\n")

	code, stderr := agentBD(t, g, nil, "delete", "x-1")
	is.Equal(code, ExitRefused)
	is.Equal(stderr, Decide(ModeBuild, []string{"delete", "x-1"}).Message()) // the guard's message, unchanged

	calls := g.Calls()
	is.Equal(len(calls), 2)
	is.True(calls[0].Allowed)
	is.Equal(calls[0].Iteration, 7)
	is.True(!calls[1].Allowed)
	is.Equal(calls[1].Rule, RuleDelete)
	is.Equal(*seen, calls) // the caller heard of each
}

// The agent knows every variable; none of them, nor a rewritten client,
// changes the mode held in ralphd.
func TestServeIgnoresTheAgentsEnvironment(t *testing.T) {
	is := is.New(t)
	g, bd, _ := served(t, ModeBuild)
	evil := newFakeBD(t, 0, "")
	code, _ := agentBD(t, g, []string{EnvMode + "=plan", EnvRealBD + "=" + evil.path}, "delete", "x-1")
	is.Equal(code, ExitRefused)
	is.Equal(evil.ran(t), nil)
	is.Equal(bd.ran(t), nil)
	// The bin dir holds only the client: no mode, no real bd to edit.
	script, err := os.ReadFile(filepath.Join(g.BinDir(), "bd"))
	is.NoErr(err)
	is.True(!strings.Contains(string(script), EnvMode))
	is.True(!strings.Contains(string(script), bd.path))
}

// Once the session is closed, no call is served.
func TestServeRefusesAfterClose(t *testing.T) {
	is := is.New(t)
	g, bd, _ := served(t, ModePlan)
	is.NoErr(g.Close())
	code, stderr := agentBD(t, g, nil, "list")
	is.Equal(code, ExitRefused)
	is.True(strings.Contains(stderr, "has ended"))
	is.Equal(bd.ran(t), nil)
}

func TestServeRefusesAnUnknownMode(t *testing.T) {
	_, err := Serve(context.Background(), t.TempDir(), Setup{Mode: "root"})
	is.New(t).True(err != nil)
}

// With a client binary, the agent's bd is a link to it (no script, no
// ralphd start-up per call).
func TestServeLinksTheClientBinary(t *testing.T) {
	is := is.New(t)
	client := filepath.Join(t.TempDir(), "ralphd-bd")
	is.NoErr(os.WriteFile(client, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	g, err := Serve(context.Background(), t.TempDir(), Setup{Self: "/nonexistent/ralphd", Client: client, Mode: ModeBuild, RealBD: "/bin/true"})
	is.NoErr(err)
	defer g.Close()
	target, err := os.Readlink(filepath.Join(g.BinDir(), "bd"))
	is.NoErr(err)
	is.Equal(target, client)
}

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

// servedScript starts a broker session in mode whose real bd is the shell
// script body, run with env (nil: this process's).
func servedScript(t *testing.T, mode Mode, body string, env []string) *Session {
	t.Helper()
	realBD := filepath.Join(t.TempDir(), "bd")
	if err := os.WriteFile(realBD, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Serve(context.Background(), t.TempDir(), Setup{Self: self, Mode: mode, RealBD: realBD, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	g.SetLeader(os.Getpid())
	t.Cleanup(func() { _ = g.Close() })
	return g
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

// The broker runs the real bd outside the sandbox, in the directory the
// agent names. Real bd 1.0.5 runs code found there: `bd hooks run
// pre-commit` runs <hooks dir>/pre-commit.old, with the hooks dir from
// git's core.hooksPath, and a write runs the tracker's .beads/hooks. An
// agent makes a repository of its own whose hooks dir it wrote, and calls
// bd there. In BUILD, bd's git sees no hooks dir and bd is told to run no
// hooks, import nothing and add nothing to git; in PLAN, which runs
// unsandboxed anyway, the stand-in for bd's chaining does run the hook,
// which shows the test can see it.
func TestServeBuildRunsNoCodeOfTheAgentsRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	// What bd 1.0.5 does on `hooks run pre-commit` (runChainedHook), and
	// what it reads from its environment.
	script := `hooks=$(git config --get core.hooksPath) || hooks=.git/hooks
if [ -x "$hooks/pre-commit.old" ]; then "$hooks/pre-commit.old"; fi
echo "hooks=$hooks fsmonitor=$(git config --get core.fsmonitor) no_hooks=$BD_NO_HOOKS import_auto=$BD_IMPORT_AUTO export_git_add=$BD_EXPORT_GIT_ADD"
`
	for _, tt := range []struct {
		mode    Mode
		escapes bool
	}{{ModeBuild, false}, {ModePlan, true}} {
		t.Run(string(tt.mode), func(t *testing.T) {
			is := is.New(t)
			g := servedScript(t, tt.mode, script, nil)

			// The agent's own repository, hooks and all.
			repo := t.TempDir()
			escaped := filepath.Join(t.TempDir(), "escaped")
			for _, args := range [][]string{{"init", "-q"}, {"config", "core.hooksPath", "myhooks"}, {"config", "core.fsmonitor", "touch " + escaped}} {
				is.NoErr(exec.Command("git", append([]string{"-C", repo}, args...)...).Run()) // git set-up
			}
			is.NoErr(os.Mkdir(filepath.Join(repo, "myhooks"), 0o755))
			is.NoErr(os.WriteFile(filepath.Join(repo, "myhooks", "pre-commit.old"), []byte("#!/bin/sh\ntouch "+escaped+"\n"), 0o755))

			cmd := exec.Command(filepath.Join(g.BinDir(), "bd"), "hooks", "run", "pre-commit")
			cmd.Dir = repo
			cmd.Env = append(os.Environ(), g.Env()...)
			out, err := cmd.Output()
			is.NoErr(err)
			_, statErr := os.Stat(escaped)
			is.Equal(statErr == nil, tt.escapes) // the agent's hook ran outside the sandbox
			if tt.mode == ModeBuild {
				is.Equal(strings.TrimSpace(string(out)), "hooks=/dev/null fsmonitor=false no_hooks=true import_auto=false export_git_add=false")
			}
		})
	}
}

// The broker runs bd where the agent asks, and bd finds its tracker from
// there: from another project, a link out of the work tree, or below a
// tracker or repository the agent made inside it, bd would open a tracker
// ralphd does not judge, with config and hooks the agent wrote. BUILD's
// calls are served from the work tree's own only; PLAN's from anywhere.
func TestServeBuildOnlyFromTheWorkTree(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	work, other := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	// A tracker and a repository the agent made inside the work tree: bd
	// would open the first from there, or follow the second's git dir.
	for _, p := range []string{"mine/.beads", "mine/deep", "linked/deep"} {
		if err := os.MkdirAll(filepath.Join(work, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "linked", ".git"), []byte("gitdir: "+other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The project's own at the root are the project's.
	if err := os.Mkdir(filepath.Join(work, ".beads"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode    Mode
		dir     string
		allowed bool
	}{
		{ModeBuild, work, true},
		{ModeBuild, filepath.Join(work, "sub"), true},
		{ModeBuild, other, false},
		{ModeBuild, filepath.Join(work, "link"), false},
		{ModeBuild, filepath.Dir(work), false},
		{ModeBuild, filepath.Join(work, "mine"), false},
		{ModeBuild, filepath.Join(work, "mine", "deep"), false},
		{ModeBuild, filepath.Join(work, "linked", "deep"), false},
		{ModePlan, other, true},
		{ModePlan, filepath.Join(work, "mine"), true},
	} {
		t.Run(string(tt.mode)+" "+strings.TrimPrefix(tt.dir, filepath.Dir(work)), func(t *testing.T) {
			is := is.New(t)
			bd := newFakeBD(t, 0, "")
			g, err := Serve(context.Background(), t.TempDir(), Setup{Self: self, Mode: tt.mode, RealBD: bd.path, WorkTree: work})
			is.NoErr(err)
			defer g.Close()
			g.SetLeader(os.Getpid())
			cmd := exec.Command(filepath.Join(g.BinDir(), "bd"), "update", "x-1", "--status", "in_progress")
			cmd.Dir = tt.dir
			cmd.Env = append(os.Environ(), "PWD="+tt.dir) // as a shell that cd'd there says
			cmd.Env = append(cmd.Env, g.Env()...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err = cmd.Run()
			is.Equal(err == nil, tt.allowed)
			is.Equal(bd.ran(t) != nil, tt.allowed) // the real bd ran
			if !tt.allowed {
				is.True(strings.Contains(errb.String(), "rule "+RuleElsewhere))
				is.True(strings.Contains(errb.String(), "Instead: run bd from the work tree"))
				is.Equal(g.Calls()[0].Rule, RuleElsewhere) // audited
			}
		})
	}
}

// The agent knows every variable bd reads. None of them reaches the real
// bd the broker runs: not the tracker's location (BEADS_DIR, BEADS_DB, the
// server's address), nor a setting that undoes buildBDEnv.
func TestServeBDGetsNoneOfTheAgentsTrackerVariables(t *testing.T) {
	is := is.New(t)
	g := servedScript(t, ModeBuild, "echo \"dir=$BEADS_DIR db=$BEADS_DB host=$BEADS_DOLT_SERVER_HOST actor=$BEADS_ACTOR import=$BD_IMPORT_AUTO hooks=$BD_NO_HOOKS\"\n",
		[]string{"PATH=/usr/bin:/bin", "BEADS_ACTOR=ralphd/w1"})
	cmd := exec.Command(filepath.Join(g.BinDir(), "bd"), "list")
	cmd.Env = append(os.Environ(), "BEADS_DIR=/tmp/evil/.beads", "BEADS_DB=/tmp/evil.db", "BEADS_DOLT_SERVER_HOST=evil",
		"BEADS_ACTOR=ralphd/w2", "BD_IMPORT_AUTO=true", "BD_NO_HOOKS=false")
	cmd.Env = append(cmd.Env, g.Env()...)
	out, err := cmd.Output()
	is.NoErr(err)
	is.Equal(strings.TrimSpace(string(out)), "dir= db= host= actor=ralphd/w1 import=false hooks=true")
}

// Given BD_ACTOR, real bd's `hooks run prepare-commit-msg FILE` rewrites
// FILE, which the agent names and the broker writes outside the sandbox.
// BUILD's bd gets no BD_ACTOR; its value moves to BEADS_ACTOR, which bd
// prefers anyway, so the actor is the same.
func TestServeBuildBDHasNoBDActor(t *testing.T) {
	for _, tt := range []struct {
		mode Mode
		env  []string
		want string
	}{
		{ModeBuild, []string{"BD_ACTOR=alice"}, "bd_actor= beads_actor=alice"},
		{ModeBuild, []string{"BD_ACTOR=alice", "BEADS_ACTOR=ralphd/h/w1"}, "bd_actor= beads_actor=ralphd/h/w1"},
		{ModeBuild, []string{"BEADS_ACTOR=bob"}, "bd_actor= beads_actor=bob"},
		{ModePlan, []string{"BD_ACTOR=alice"}, "bd_actor=alice beads_actor="},
	} {
		t.Run(string(tt.mode)+" "+strings.Join(tt.env, " "), func(t *testing.T) {
			is := is.New(t)
			g := servedScript(t, tt.mode, "echo \"bd_actor=$BD_ACTOR beads_actor=$BEADS_ACTOR\"\n",
				append([]string{"PATH=/usr/bin:/bin"}, tt.env...))
			cmd := exec.Command(filepath.Join(g.BinDir(), "bd"), "hooks", "run", "prepare-commit-msg", "/home/u/.bashrc")
			cmd.Env = append(os.Environ(), g.Env()...)
			out, err := cmd.Output()
			is.NoErr(err)
			is.Equal(strings.TrimSpace(string(out)), tt.want)
		})
	}
}

// A worker's work tree is a linked worktree: bd follows its .git file to
// git's common dir, and to the tracker beside it. An agent that rewrites
// that file (it may write the work tree) would have bd open a tracker it
// made. Once the .git the session began with changes, BUILD's calls are
// refused; PLAN's are not.
func TestServeBuildRefusesOnceTheGitLinkMoves(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mode    Mode
		allowed bool
	}{{ModeBuild, false}, {ModePlan, true}} {
		t.Run(string(tt.mode), func(t *testing.T) {
			is := is.New(t)
			work := t.TempDir()
			dotgit := filepath.Join(work, ".git")
			is.NoErr(os.WriteFile(dotgit, []byte("gitdir: /repo/.git/worktrees/w1\n"), 0o644))
			bd := newFakeBD(t, 0, "")
			g, err := Serve(context.Background(), t.TempDir(), Setup{Self: self, Mode: tt.mode, RealBD: bd.path, WorkTree: work})
			is.NoErr(err)
			defer g.Close()
			g.SetLeader(os.Getpid())
			call := func() (string, error) {
				cmd := exec.Command(filepath.Join(g.BinDir(), "bd"), "update", "x-1", "--notes", "n")
				cmd.Dir = work
				cmd.Env = append(os.Environ(), g.Env()...)
				var errb bytes.Buffer
				cmd.Stderr = &errb
				err := cmd.Run()
				return errb.String(), err
			}
			_, err = call()
			is.NoErr(err) // as the session began: served
			is.NoErr(os.WriteFile(dotgit, []byte("gitdir: /tmp/mine/.git/worktrees/x\n"), 0o644))
			stderr, err := call()
			is.Equal(err == nil, tt.allowed)
			if !tt.allowed {
				is.True(strings.Contains(stderr, "rule "+RuleElsewhere))
				is.True(strings.Contains(stderr, "work tree's .git changed"))
			}
		})
	}
}

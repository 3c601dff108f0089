package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

// bwrapOrSkip returns bwrap's path, or skips the test where bwrap cannot
// make a sandbox (CI must have it: scripts/test installs bubblewrap).
func bwrapOrSkip(t *testing.T) string {
	t.Helper()
	s := Probe(context.Background(), "", true)
	if !s.OK() {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but bwrap cannot run: %v", s.Err)
		}
		t.Skipf("no sandbox here: %v", s.Err)
	}
	return s.Path
}

// A sandboxed agent tries every way to write what it must not; each fails
// at once, and what it may write, it can.
func TestSandboxHolds(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	wt, home, state, tmp, run := filepath.Join(root, "repo"), filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "tmp"), filepath.Join(root, "run")
	for _, d := range []string{wt + "/.beads", wt + "/.git/hooks", home + "/.claude", state, tmp, run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{wt + "/.beads/issues.jsonl", wt + "/.git/config", state + "/attempts.txt", home + "/.gitconfig", run + "/bus"} {
		if err := os.WriteFile(f, []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"XDG_RUNTIME_DIR": run}
	getenv := func(k string) string { return env[k] }
	dirs, files := agent.Writable(agent.Claude{}, agent.Home{Dir: home, Getenv: getenv})
	l := BuildLayout(Project{WorkTree: wt, GitDir: wt + "/.git", GitCommonDir: wt + "/.git", StateDir: state, Scratch: tmp,
		AgentDirs: dirs, AgentFiles: files, Home: home, Getenv: getenv})
	sh := func(script string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		argv := l.Args(bwrap, []string{"sh", "-c", script})
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = wt
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	refused := []struct{ name, script string }{
		{"edit the tracker", "echo x >> .beads/issues.jsonl"},
		{"replace the tracker", "rm .beads/issues.jsonl"},
		{"create .ralph", "mkdir -p .ralph && echo '{}' > .ralph/config.json"},
		{"git config", "echo '[core] fsmonitor = evil' >> .git/config"},
		{"git hook", "echo evil > .git/hooks/pre-commit"},
		{"state dir", "echo id:0 > " + state + "/attempts.txt"},
		{"home", "echo evil >> " + home + "/.gitconfig"},
		{"unmount the tracker", "umount .beads && echo x >> .beads/issues.jsonl"},
		{"remount it writable", "mount -o remount,rw,bind .beads && echo x >> .beads/issues.jsonl"},
		{"a user namespace of its own", "unshare -U -m -r sh -c 'umount .beads; echo x >> .beads/issues.jsonl'"},
		{"the runtime dir's sockets", "test -e " + run + "/bus"},
		{"see the parent", fmt.Sprintf("test -e /proc/%d", os.Getpid())},
		{"signal the parent", fmt.Sprintf("kill -0 %d", os.Getpid())},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			out, err := sh(tt.script)
			if err == nil {
				t.Fatalf("%q succeeded inside the sandbox:\n%s", tt.script, out)
			}
		})
	}
	for _, f := range []string{wt + "/.beads/issues.jsonl", wt + "/.git/config", state + "/attempts.txt", home + "/.gitconfig"} {
		b, _ := os.ReadFile(f)
		if string(b) != "orig\n" {
			t.Errorf("%s changed: %q", f, b)
		}
	}
	if _, err := os.Stat(wt + "/.ralph/config.json"); err == nil {
		t.Error(".ralph/config.json was created")
	}

	is := is.New(t)
	out, err := sh("echo ok > work.txt && echo ok > " + tmp + "/t && echo ok > " + home + "/.claude/s && git --version >/dev/null && cat .beads/issues.jsonl")
	is.NoErr(err)                          // the work tree, the temp dir and the agent's dir are writable, the tracker readable
	is.True(strings.Contains(out, "orig")) // the tracker is visible
	b, _ := os.ReadFile(wt + "/work.txt")
	is.Equal(string(b), "ok\n") // written through to the real work tree
}

// Nothing an agent starts outlives it: a setsid'd, double-forked process
// dies when the agent's leader exits.
func TestSandboxEndsLeftovers(t *testing.T) {
	is := is.New(t)
	bwrap := bwrapOrSkip(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "alive")
	argv := Layout{Writable: []string{dir}}.Args(bwrap, []string{"sh", "-c",
		"(setsid sh -c 'sleep 1; echo survived > " + marker + "' </dev/null >/dev/null 2>&1 &) ; exit 0"})
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	is.NoErr(err) // the leader exits 0
	_ = out
	time.Sleep(1500 * time.Millisecond)
	_, err = os.Stat(marker)
	is.True(os.IsNotExist(err)) // the detached child was killed with the sandbox
}

func TestProbe(t *testing.T) {
	is := is.New(t)
	s := Probe(context.Background(), t.TempDir(), true) // a PATH without bwrap
	is.Equal(s.Err, ErrNoBwrap)
	is.True(!s.OK())
}

// In a linked worktree (a parallel worker's), the agent can commit, but
// the shared tracker, git's config and hooks stay read-only.
func TestSandboxLinkedWorktree(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	is := is.New(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	main, linked := filepath.Join(root, "main"), filepath.Join(root, "linked")
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	is.NoErr(os.MkdirAll(filepath.Join(main, ".beads"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(main, ".beads", "issues.jsonl"), []byte("orig\n"), 0o644))
	git(main, "init", "-q", "-b", "main")
	git(main, "add", "-A")
	git(main, "commit", "-qm", "base")
	git(main, "worktree", "add", "-q", linked)
	gitDir := git(linked, "rev-parse", "--absolute-git-dir")
	l := BuildLayout(Project{WorkTree: linked, GitDir: gitDir, GitCommonDir: filepath.Join(main, ".git"), Scratch: t.TempDir()})
	sh := func(script string) (string, error) {
		argv := l.Args(bwrap, []string{"sh", "-c", script})
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = linked
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := sh("echo work > w.txt && git add w.txt && git commit -qm work")
	is.True(err == nil) // the agent commits in its worktree
	_ = out
	_, err = sh("echo x >> " + filepath.Join(main, ".beads", "issues.jsonl"))
	is.True(err != nil) // the shared tracker is read-only
	_, err = sh("git config core.fsmonitor evil")
	is.True(err != nil) // git's config too
}

// A host with user namespaces but no network namespaces (a bwrap that
// refuses --unshare-net) still gets a sandbox when the network setting is
// open, and is found out by the probe when it is not.
func TestProbeAsksForTheNetworkOnlyWhenIsolated(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	fake := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --unshare-net ] && { echo 'bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted' >&2; exit 1; }; done\nexit 0\n"
	is.NoErr(os.WriteFile(filepath.Join(dir, "bwrap"), []byte(fake), 0o755))

	open := Probe(context.Background(), dir, false)
	is.NoErr(open.Err) // network=open: no netns asked for, the sandbox works
	isolated := Probe(context.Background(), dir, true)
	is.True(isolated.Err != nil) // network isolated: the missing netns shows at the probe
	is.True(strings.Contains(isolated.Err.Error(), "RTM_NEWADDR"))
}

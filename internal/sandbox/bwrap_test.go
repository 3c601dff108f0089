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

// shellIn returns a func that runs a shell script under bwrap with layout
// l, in dir, with env added to this process's environment, and returns
// its combined output; a stuck script is killed after 20 s.
func shellIn(l Layout, bwrap, dir string, env ...string) func(script string) (string, error) {
	return func(script string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		argv := l.Args(bwrap, []string{"sh", "-c", script})
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		if len(env) > 0 {
			cmd.Env = append(os.Environ(), env...)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// A sandboxed agent tries every way to write what it must not; each fails
// at once, and what it may write, it can.
func TestSandboxHolds(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	wt, home, state, tmp, run := filepath.Join(root, "repo"), filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "tmp"), filepath.Join(root, "run")
	for _, d := range []string{wt + "/.beads", wt + "/.git/hooks", wt + "/.claude", home + "/.claude", state, tmp, run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{wt + "/.beads/issues.jsonl", wt + "/.git/config", wt + "/.claude/settings.json", state + "/attempts.txt", home + "/.gitconfig", run + "/bus"} {
		if err := os.WriteFile(f, []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"XDG_RUNTIME_DIR": run}
	getenv := func(k string) string { return env[k] }
	dirs, files := agent.Writable(agent.Claude{}, agent.Home{Dir: home, Getenv: getenv})
	projectDirs, projectFiles := agent.ProjectConfig()
	l := BuildLayout(Project{WorkTree: wt, GitDir: wt + "/.git", GitCommonDir: wt + "/.git", StateDir: state, Scratch: tmp,
		AgentDirs: dirs, AgentFiles: files, Home: home, Getenv: getenv, ProjectGuarded: append(projectDirs, projectFiles...)})
	sh := shellIn(l, bwrap, wt)
	refused := []struct{ name, script string }{
		{"edit the tracker", "echo x >> .beads/issues.jsonl"},
		{"replace the tracker", "rm .beads/issues.jsonl"},
		{"create .ralph", "mkdir -p .ralph && echo '{}' > .ralph/config.json"},
		{"git config", "echo '[core] fsmonitor = evil' >> .git/config"},
		{"git hook", "echo evil > .git/hooks/pre-commit"},
		{"the project's agent settings", "echo evil > .claude/settings.json"},
		{"a hook beside them", "echo evil > .claude/hook.sh"},
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
	for _, f := range []string{wt + "/.beads/issues.jsonl", wt + "/.git/config", wt + "/.claude/settings.json", state + "/attempts.txt", home + "/.gitconfig"} {
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

// What configures the agent's CLI inside its writable dirs is read-only
// by every route the agent could take (a write, a rename over it, a
// removal, a link swapped in, through $CLAUDE_CONFIG_DIR's other path);
// ~/.claude.json is a copy the agent may write, and the XDG cache is the
// agent's own: nothing reaches the user's. The CLI's own writes (a
// session file, its state) still work.
func TestSandboxKeepsAgentConfig(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	wt, home, state, tmp := filepath.Join(root, "repo"), filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "tmp")
	cache, own := filepath.Join(home, ".cache"), filepath.Join(home, ".cache", "ralph", "sandbox", "p")
	for _, d := range []string{wt + "/.git", home + "/.claude/plugins/x", home + "/dotfiles", cache + "/go-build", state, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	orig := map[string]string{
		home + "/.claude/settings.json":     `{"mine":1}`,
		home + "/.claude/plugins/x/hook.sh": "mine",
		home + "/dotfiles/CLAUDE.md":        "mine",
		home + "/.claude.json":              `{"numStartups":1}`,
		cache + "/go-build/obj":             "mine",
	}
	for f, c := range orig {
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(home+"/dotfiles/CLAUDE.md", home+"/.claude/CLAUDE.md"); err != nil {
		t.Fatal(err)
	}
	h := agent.Home{Dir: home, Getenv: func(string) string { return "" }}
	dirs, files := agent.Writable(agent.Claude{}, h)
	g := agent.Claude{}.Guarded(h)
	l := BuildLayout(Project{WorkTree: wt, GitDir: wt + "/.git", GitCommonDir: wt + "/.git", StateDir: state, Scratch: tmp,
		AgentDirs: dirs, AgentFiles: files, AgentGuarded: g.Paths, AgentCopies: g.Copies, Cache: own, CacheDir: cache,
		Home: home, Getenv: h.Getenv})
	is := is.New(t)
	is.NoErr(l.Prepare())
	sh := shellIn(l, bwrap, wt)
	for _, script := range []string{
		"echo evil > ~/.claude/settings.json",
		"echo evil > /tmp/s && mv /tmp/s ~/.claude/settings.json",
		"rm ~/.claude/settings.json",
		"echo evil > ~/.claude/plugins/x/hook.sh",
		"echo evil > ~/.claude/plugins/y",
		"rm -r ~/.claude/plugins",
		"echo evil > ~/.claude/CLAUDE.md",
		"echo evil > " + home + "/dotfiles/CLAUDE.md",
	} {
		out, err := sh("HOME=" + home + "; " + script)
		if err == nil {
			t.Errorf("%q succeeded inside the sandbox:\n%s", script, out)
		}
	}
	out, err := sh("HOME=" + home + "; echo '{\"mcpServers\":{}}' > ~/.claude.json && mkdir -p ~/.claude/projects && echo s > ~/.claude/projects/s.jsonl && " +
		"mkdir -p ~/.cache/go-build && echo obj > ~/.cache/go-build/obj2 && echo evil > ~/.cache/go-build/obj && cat ~/.claude/settings.json")
	is.NoErr(err)                                // the CLI's own writes, its copy and its cache work...
	is.True(strings.Contains(out, `{"mine":1}`)) // ...and it reads its settings
	for f, c := range orig {
		b, err := os.ReadFile(f)
		is.NoErr(err)
		is.Equal(string(b), c) // the user's are as they were
	}
	link, err := os.Readlink(home + "/.claude/CLAUDE.md")
	is.NoErr(err)
	is.Equal(link, home+"/dotfiles/CLAUDE.md")
	b, err := os.ReadFile(home + "/.claude/projects/s.jsonl")
	is.NoErr(err)
	is.Equal(string(b), "s\n") // a session file reaches the real dir
	b, err = os.ReadFile(own + "/go-build/obj2")
	is.NoErr(err)
	is.Equal(string(b), "obj\n") // the cache write went to the agent's own cache
	_, err = os.Stat(cache + "/go-build/obj2")
	is.True(os.IsNotExist(err))
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
	sh := shellIn(l, bwrap, linked, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CONFIG_NOSYSTEM=1")
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

// The user's forge logins (agent.ForgeLogins) are out of a sandboxed
// agent's reach by every route: read by path, through a link, by
// listing the dir, by unmounting or remounting what covers them, from a
// user namespace of its own, and with gh itself. What the agent needs
// of the home (git's own config) stays readable.
func TestSandboxHidesForgeLogins(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	// Under the temp dir, only the home, the work tree and the scratch
	// dir are in the sandbox's view (the rest of /tmp is private): the
	// logins live there, one of them in the writable work tree.
	wt, home, tmp := root+"/repo", root+"/home", root+"/tmp"
	cfg, vault := home+"/xdg", home+"/vault"
	ghDir := wt + "/.gh" // $GH_CONFIG_DIR, in a writable path
	const token = "ghp_SECRETforgeTOKEN"
	files := map[string]string{
		home + "/.config/gh/hosts.yml":    "github.com:\n    oauth_token: " + token + "\n    user: me\n",
		cfg + "/gh/hosts.yml":             "github.com:\n    oauth_token: " + token + "\n",
		ghDir + "/hosts.yml":              "github.com:\n    oauth_token: " + token + "\n",
		vault + "/git-credentials":        "https://me:" + token + "@github.com\n",
		cfg + "/git/credentials":          "https://me:" + token + "@github.com\n",
		cfg + "/tea/config.yml":           "logins:\n  - token: " + token + "\n",
		home + "/.config/tea/config.yml":  "logins:\n  - token: " + token + "\n",
		home + "/.config/git/credentials": "https://me:" + token + "@gitea.example\n",
		home + "/.netrc":                  "machine api.github.com login me password " + token + "\n",
		home + "/.gitconfig":              "[user]\n\tname = Me\n",
		cfg + "/git/config":               "[core]\n\teditor = vi\n",
		wt + "/README":                    "work\n",
		home + "/.cache/git/credential/x": token + "\n",
	}
	for f, body := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// ~/.git-credentials is a link to the file elsewhere.
	if err := os.Symlink(vault+"/git-credentials", home+"/.git-credentials"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_CONFIG_HOME": cfg, "GH_CONFIG_DIR": ghDir, "XDG_CACHE_HOME": home + "/.cache"}
	getenv := func(k string) string { return env[k] }
	h := agent.Home{Dir: home, Getenv: getenv}
	dirs, wfiles := agent.Writable(agent.Claude{}, h)
	l := BuildLayout(Project{WorkTree: wt, Scratch: tmp, AgentDirs: dirs, AgentFiles: wfiles, Home: home, Getenv: getenv,
		Secrets: agent.ForgeLogins(h)})
	if err := l.Prepare(); err != nil {
		t.Fatal(err)
	}
	sh := shellIn(l, bwrap, wt, "HOME="+home, "XDG_CONFIG_HOME="+cfg, "GH_CONFIG_DIR="+ghDir, "XDG_CACHE_HOME="+home+"/.cache")
	routes := []struct{ name, script string }{
		{"gh's hosts.yml in ~/.config", "cat " + home + "/.config/gh/hosts.yml"},
		{"gh's hosts.yml in XDG_CONFIG_HOME", `cat "$XDG_CONFIG_HOME/gh/hosts.yml"`},
		{"gh's hosts.yml in GH_CONFIG_DIR", `cat "$GH_CONFIG_DIR/hosts.yml"`},
		{"every file of gh's dirs", `cat "$GH_CONFIG_DIR"/* "$XDG_CONFIG_HOME"/gh/* ~/.config/gh/* ~/.config/gh/.* 2>/dev/null`},
		{"git's credential store", "cat ~/.git-credentials"},
		{"the store's link target", "cat " + vault + "/git-credentials"},
		{"git's XDG credential store", `cat "$XDG_CONFIG_HOME/git/credentials"`},
		{"git credential fill from the store", `printf 'protocol=https\nhost=github.com\n\n' | git -c credential.helper=store credential fill </dev/null; true`},
		{"the credential cache's dir", "cat ~/.cache/git/credential/*"},
		{"tea's config", `cat "$XDG_CONFIG_HOME/tea/config.yml"`},
		{"tea's config in ~/.config, XDG_CONFIG_HOME elsewhere", "cat ~/.config/tea/config.yml"},
		{"git's credential store in ~/.config, XDG_CONFIG_HOME elsewhere", "cat ~/.config/git/credentials"},
		{"netrc", "cat ~/.netrc"},
		{"a search of the home", "grep -r " + token + " " + home + " " + cfg + " " + ghDir + " " + vault},
		{"unmount the mask", "umount " + home + "/.config/gh; cat " + home + "/.config/gh/hosts.yml"},
		{"remount the mask", "mount -o remount,rw " + ghDir + "; cat " + ghDir + "/hosts.yml"},
		{"a user namespace of its own", "unshare -U -m -r sh -c 'umount " + ghDir + "; umount " + home + "/.netrc; cat " + ghDir + "/hosts.yml " + home + "/.netrc'"},
		{"gh auth token", "gh auth token"},
	}
	for _, tt := range routes {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := sh(tt.script)
			if strings.Contains(out, token) {
				t.Fatalf("%q read the forge token inside the sandbox:\n%s", tt.script, out)
			}
		})
	}
	is := is.New(t)
	out, err := sh(`cat ~/.gitconfig "$XDG_CONFIG_HOME/git/config" README && echo "x" > ` + ghDir + `/planted`)
	is.True(err != nil)                           // the hidden dir is read-only too: nothing planted for ralphd's gh
	is.True(strings.Contains(out, "name = Me"))   // git's own config is readable
	is.True(strings.Contains(out, "editor = vi")) // in XDG_CONFIG_HOME too
	is.True(strings.Contains(out, "work"))
	b, err := os.ReadFile(ghDir + "/hosts.yml")
	is.NoErr(err)
	is.True(strings.Contains(string(b), token)) // untouched outside
	_, err = os.Stat(ghDir + "/planted")
	is.True(os.IsNotExist(err))
}

// TestSandboxPrivateAgentState: what of its CLI's state a later run
// executes from (Gemini CLI's checkpoint repositories, whose git runs
// their hooks; Claude Code's session env scripts) is a dir of ralphd's
// in the sandbox: the agent's writes there land in it, are there at its
// next run, and never reach the user's. No such dir is made for a user
// who has none of the CLI's dirs.
func TestSandboxPrivateAgentState(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	for _, tc := range []struct {
		backend agent.Backend
		dir     string // the private dir, under home
	}{
		{agent.Gemini{}, ".gemini/history"},
		{agent.Claude{}, ".claude/session-env"},
	} {
		t.Run(tc.backend.Name(), func(t *testing.T) {
			is := is.New(t)
			root, _ := filepath.EvalSymlinks(t.TempDir())
			wt, home, state, tmp := filepath.Join(root, "repo"), filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "tmp")
			cache, own := filepath.Join(home, ".cache"), filepath.Join(home, ".cache", "ralph", "sandbox", "p")
			hook := filepath.Join(home, tc.dir, "p", ".git", "hooks", "pre-commit")
			for _, d := range []string{wt + "/.git", filepath.Dir(hook), state, tmp} {
				is.NoErr(os.MkdirAll(d, 0o755))
			}
			is.NoErr(os.WriteFile(hook, []byte("mine"), 0o755))
			h := agent.Home{Dir: home, Getenv: func(string) string { return "" }}
			dirs, files := agent.Writable(tc.backend, h)
			g := tc.backend.Guarded(h)
			is.True(len(g.Private) > 0)
			l := BuildLayout(Project{WorkTree: wt, GitDir: wt + "/.git", GitCommonDir: wt + "/.git", StateDir: state, Scratch: tmp,
				AgentDirs: dirs, AgentFiles: files, AgentGuarded: g.Paths, AgentPrivate: g.Private, Cache: own, CacheDir: cache,
				Home: home, Getenv: h.Getenv})
			is.NoErr(l.Prepare())
			sh := shellIn(l, bwrap, wt)
			rel := "~/" + tc.dir + "/p/.git/hooks/pre-commit"
			out, err := sh("HOME=" + home + "; mkdir -p $(dirname " + rel + ") && echo evil > " + rel)
			is.NoErr(err) // the CLI's state stays writable
			_ = out
			b, err := os.ReadFile(hook)
			is.NoErr(err)
			is.Equal(string(b), "mine") // the user's is untouched
			out, err = sh("HOME=" + home + "; cat " + rel)
			is.NoErr(err)
			is.Equal(strings.TrimSpace(out), "evil") // kept for the agent's next run

			// A home with none of the CLI's dirs gets none.
			bare := filepath.Join(root, "bare")
			is.NoErr(os.MkdirAll(bare, 0o755))
			hb := agent.Home{Dir: bare, Getenv: func(string) string { return "" }}
			gb := tc.backend.Guarded(hb)
			lb := BuildLayout(Project{WorkTree: wt, GitDir: wt + "/.git", GitCommonDir: wt + "/.git", StateDir: state, Scratch: tmp,
				AgentPrivate: gb.Private, Cache: filepath.Join(bare, ".cache", "ralph", "sandbox", "p"), CacheDir: filepath.Join(bare, ".cache"),
				Home: bare, Getenv: hb.Getenv})
			is.NoErr(lb.Prepare())
			_, err = os.Stat(filepath.Join(bare, strings.Split(tc.dir, "/")[0]))
			is.True(os.IsNotExist(err))
		})
	}
}

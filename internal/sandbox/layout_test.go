package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

// mounts returns bwrap's mount options from args as "op path" strings,
// after the fixed prefix, up to "--".
func mounts(args []string) []string {
	var out []string
	i := slices.Index(args, "/proc") + 1
	for i < len(args) && args[i] != "--" {
		switch args[i] {
		case "--bind", "--ro-bind":
			out = append(out, args[i]+" "+args[i+2])
			i += 3
		default:
			out = append(out, args[i]+" "+args[i+1])
			i += 2
		}
	}
	return out
}

func TestArgsOrder(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	wt := filepath.Join(root, "repo")
	for _, d := range []string{".beads", ".git/hooks", "run"} {
		is.NoErr(os.MkdirAll(filepath.Join(wt, d), 0o755))
	}
	is.NoErr(os.WriteFile(filepath.Join(wt, ".git/config"), nil, 0o644))
	l := Layout{
		Writable: []string{wt, wt + "/", filepath.Join(root, "missing")},
		ReadOnly: []string{filepath.Join(wt, ".git/config"), filepath.Join(wt, ".beads"), "relative/ignored"},
		Sealed:   []string{filepath.Join(wt, ".git/hooks"), filepath.Join(wt, ".ralph"), filepath.Join(root, "nodir/x"), filepath.Join(root, "x")},
		Hidden:   []string{filepath.Join(wt, "run")},
	}
	args := l.Args("/usr/bin/bwrap", []string{"agent", "--flag"})
	is.Equal(args[0], "/usr/bin/bwrap")
	is.Equal(args[len(args)-3:], []string{"--", "agent", "--flag"}) // the command comes last, after --
	for _, want := range []string{"--die-with-parent", "--unshare-pid", "--new-session"} {
		is.True(slices.Contains(args, want)) // containment flags
	}
	is.True(!slices.Contains(args, "--unshare-net")) // the network stays open
	is.Equal(mounts(args), []string{
		"--bind " + wt, // once, though listed twice
		"--tmpfs " + filepath.Join(wt, "run"),
		"--ro-bind " + filepath.Join(wt, ".beads"), // inside the work tree: after it
		"--tmpfs " + filepath.Join(wt, ".ralph"),   // missing: sealed by an empty read-only dir (root/x, outside the writable paths, is not)
		"--remount-ro " + filepath.Join(wt, ".ralph"),
		"--ro-bind " + filepath.Join(wt, ".git/config"),
		"--ro-bind " + filepath.Join(wt, ".git/hooks"),
	})
}

func TestBuildLayout(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "XDG_CACHE_HOME": "/c"}
	getenv := func(k string) string { return env[k] }
	home := agent.Home{Dir: "/h", Getenv: getenv}
	dirs, files := agent.Writable(agent.Claude{}, home)
	g := agent.Claude{}.Guarded(home)
	l := BuildLayout(Project{
		WorkTree: "/w/repo", GitDir: "/w/repo/.git", GitCommonDir: "/w/repo/.git", StateDir: "/s", Scratch: "/t/x",
		ReadOnly: []string{"/t/x/sock"}, AgentDirs: dirs, AgentFiles: files, Getenv: getenv,
		AgentGuarded: g.Paths, AgentCopies: g.Copies, Cache: "/c/ralph/sandbox/p", CacheDir: "/c",
	})
	is.Equal(l.Writable, []string{"/w/repo", "/t/x"})
	is.Equal(l.Dirs, []string{"/h/.claude"})                                                     // made when missing
	is.Equal(l.Binds, []Bind{{Src: "/c/ralph/sandbox/p", Dest: "/c"}})                           // the agent's own cache
	is.Equal(l.Copies, []Bind{{Src: "/t/x/home-copies/0-.claude.json", Dest: "/h/.claude.json"}, // a copy of its own
		{Src: "/t/x/home-copies/1-.claude.json.backup", Dest: "/h/.claude.json.backup"}})
	for _, p := range []string{"/s", "/t/x/sock", "/w/repo/.git/config", "/h/.claude/settings.json", "/h/.claude/plugins"} {
		is.True(slices.Contains(l.ReadOnly, p)) // read-only
	}
	for _, p := range []string{"/w/repo/.beads", "/w/repo/.ralph", "/w/repo/.git/hooks"} {
		is.True(slices.Contains(l.Sealed, p)) // sealed
	}
	is.Equal(l.Hidden, []string{"/run/user/1000", "/tmp", "/var/tmp", "/run", "/var/run"}) // private: no host sockets
}

// What a BUILD agent needs from inside the private /tmp and /run is bound
// back read-only: what the caller keeps, the dirs on PATH there, and the
// user's home and a linked worktree's main checkout when they live there
// (as in tests); nothing inside a writable path, and never a hidden dir
// itself.
func TestBuildLayoutKeeps(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"PATH": "/usr/bin:/tmp/tools/bin:/tmp:/run/current-system/sw/bin:/tmp/w/repo/bin"}
	l := BuildLayout(Project{
		WorkTree: "/tmp/w/linked", GitDir: "/tmp/w/repo/.git/worktrees/linked", GitCommonDir: "/tmp/w/repo/.git", Scratch: "/tmp/s",
		Home: "/tmp/h", Keep: []string{"/tmp/ralphd", "/tmp/s/bin", "/home/u/bin"}, Getenv: func(k string) string { return env[k] },
	})
	for _, p := range []string{"/tmp/ralphd", "/tmp/tools/bin", "/run/current-system/sw/bin", "/tmp/h", "/tmp/w/repo"} {
		is.True(slices.Contains(l.ReadOnly, p)) // kept
	}
	for _, p := range []string{"/tmp", "/usr/bin", "/home/u/bin", "/tmp/s/bin", "/tmp/w/repo/.git"} {
		is.True(!slices.Contains(l.ReadOnly, p)) // a hidden dir, visible anyway, or writable
	}
}

// With a cache of its own, what the agent needs of the user's real cache
// (its CLI installed there, a dir on PATH) is bound back read-only; the
// rest of the real cache is out of sight.
func TestBuildLayoutCacheKeeps(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"PATH": "/usr/bin:/h/.cache/tools/bin"}
	l := BuildLayout(Project{
		WorkTree: "/w/repo", Scratch: "/t/x", Home: "/h", Cache: "/h/.cache/ralph/sandbox/p", CacheDir: "/h/.cache",
		Keep: []string{"/h/.cache/npx/node_modules/.bin/claude", "/usr/local/bin/ralphd"}, Getenv: func(k string) string { return env[k] },
	})
	for _, p := range []string{"/h/.cache/npx", "/h/.cache/tools/bin"} {
		is.True(slices.Contains(l.ReadOnly, p)) // kept
	}
	for _, p := range []string{"/h/.cache", "/usr/local/bin/ralphd", "/usr/bin"} {
		is.True(!slices.Contains(l.ReadOnly, p)) // the cache itself is the agent's own; the rest is visible anyway
	}
}

func TestChoose(t *testing.T) {
	ok := Support{Path: "/usr/bin/bwrap"}
	missing := Support{Err: ErrNoBwrap}
	broken := Support{Path: "/usr/bin/bwrap", Err: os.ErrPermission}
	tests := []struct {
		setting string
		s       Support
		use     bool
		notice  string // a substring; "" means none
		err     string
	}{
		{Auto, ok, true, "", ""},
		{"", ok, true, "", ""},
		{Auto, missing, false, "apt install bubblewrap", ""},
		{Auto, broken, false, "fix that", ""},
		{Bwrap, ok, true, "", ""},
		{Bwrap, missing, false, "", "sandbox=bwrap, but bwrap not found"},
		{Off, ok, false, "", ""},
		{"firejail", ok, false, "", "use one of auto, bwrap, off"},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			is := is.New(t)
			d, err := Choose(tt.setting, tt.s)
			if tt.err != "" {
				is.True(err != nil && strings.Contains(err.Error(), tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(d.Use, tt.use)
			is.Equal(d.Notice != "", tt.notice != "")
			is.True(strings.Contains(d.Notice, tt.notice))
		})
	}
}

// With a Net, the sandbox has its own network namespace, and with a
// proxy the agent starts under the forwarder, whose binary and the
// proxy's socket dir are bound read-only.
func TestArgsNet(t *testing.T) {
	is := is.New(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	fwd, sock := filepath.Join(root, "ralphd"), filepath.Join(root, "net", "proxy.sock")
	is.NoErr(os.MkdirAll(filepath.Dir(sock), 0o700))
	is.NoErr(os.WriteFile(fwd, nil, 0o755))
	for _, want := range []string{"--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"} {
		is.True(slices.Contains(Layout{}.Args("bwrap", []string{"a"}), want)) // always
	}
	is.True(slices.Contains(Layout{Net: &Net{}}.Args("bwrap", []string{"a"}), "--unshare-net"))
	args := Layout{Net: &Net{Socket: sock, Forwarder: fwd, NoProxy: []string{"localhost", "::1"}}}.Args("bwrap", []string{"agent", "-p"})
	is.True(slices.Contains(args, "--unshare-net"))
	is.Equal(args[slices.Index(args, "--"):], []string{"--", fwd, ForwarderCommand, "-socket", sock, "-no-proxy", "localhost,::1", "--", "agent", "-p"})
	is.True(slices.Contains(mounts(args), "--ro-bind "+filepath.Dir(sock)))
	is.True(slices.Contains(mounts(args), "--ro-bind "+fwd))
}

// A program npm installed into a hidden dir (a clone's .tools/ under
// /tmp, in tests and CI) needs its whole package: node_modules/.bin/x is a
// link to a script beside the rest of the package and its dependencies.
// The agent's executable and the PATH dirs keep their install prefix in
// view, not only the link.
func TestKeptKeepsAnNpmInstallPrefix(t *testing.T) {
	is := is.New(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	is.NoErr(err)
	codex := filepath.Join(root, "tools", "codex")
	script := filepath.Join(codex, "node_modules", "@openai", "codex", "bin", "codex.js")
	is.NoErr(os.MkdirAll(filepath.Dir(script), 0o755))
	is.NoErr(os.WriteFile(script, []byte("#!/usr/bin/env node\n"), 0o755))
	bin := filepath.Join(codex, "node_modules", ".bin", "codex")
	is.NoErr(os.MkdirAll(filepath.Dir(bin), 0o755))
	is.NoErr(os.Symlink("../@openai/codex/bin/codex.js", bin))
	claudeBin := filepath.Join(root, "tools", "claude", "node_modules", ".bin")
	is.NoErr(os.MkdirAll(claudeBin, 0o755))
	plain := filepath.Join(root, "bin", "ralphd")

	got := kept([]string{root}, nil, []string{bin, plain}, claudeBin+":/usr/bin")
	for _, want := range []string{
		codex,                                  // the agent's install prefix, from its executable
		filepath.Join(root, "tools", "claude"), // and from a PATH dir inside one
		plain,                                  // a plain program: itself
	} {
		is.True(slices.Contains(got, want)) // kept in view
	}
	is.True(!slices.Contains(got, root))                                               // never the hidden dir itself
	is.True(!slices.ContainsFunc(got, func(p string) bool { return p == "/usr/bin" })) // nor what is not hidden
}

// The broker's socket ralphd gives the agent may lie in the home dir (a
// TMPDIR under it, as in tests): it is named in ReadOnly, and masking it
// as a stray socket would cut the agent off from its bd.
func TestStraysSkipWhatRalphdGives(t *testing.T) {
	is := is.New(t)
	home, err := filepath.EvalSymlinks(t.TempDir())
	is.NoErr(err)
	brokerDir := filepath.Join(home, "tmp", "ralphd-broker-1")
	is.NoErr(os.MkdirAll(brokerDir, 0o700))
	ln, err := net.Listen("unix", filepath.Join(brokerDir, "bd.sock"))
	is.NoErr(err)
	defer ln.Close()
	other, err := net.Listen("unix", filepath.Join(home, "agent.sock"))
	is.NoErr(err)
	defer other.Close()

	l := BuildLayout(Project{WorkTree: filepath.Join(home, "repo"), Scratch: t.TempDir(), Home: home, Getenv: os.Getenv,
		ReadOnly: []string{brokerDir}})
	is.True(!slices.Contains(l.Masked, filepath.Join(brokerDir, "bd.sock"))) // the broker's socket stays reachable
	is.True(slices.Contains(l.Masked, filepath.Join(home, "agent.sock")))    // another socket in the home dir is masked
}

// The proxy's socket may fall back to a short dir in a TMPDIR under the
// home dir, where the stray scan finds it: it is never masked.
func TestArgsDoNotMaskTheProxySocket(t *testing.T) {
	is := is.New(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	sock, other := filepath.Join(root, "tmp", "ralphd-net-1", "proxy.sock"), filepath.Join(root, "agent.sock")
	mask := filepath.Join(root, ".masked")
	is.NoErr(os.MkdirAll(filepath.Dir(sock), 0o700))
	is.NoErr(os.WriteFile(mask, nil, 0o444))
	l := Layout{Masked: []string{sock, other}, MaskWith: mask, Net: &Net{Socket: sock, Forwarder: mask}}
	ms := mounts(l.Args("bwrap", []string{"agent"}))
	is.True(!slices.Contains(ms, "--ro-bind "+sock)) // the proxy's socket stays reachable
	is.True(slices.Contains(ms, "--ro-bind "+other)) // another stray is masked
}

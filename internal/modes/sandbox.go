package modes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/sandbox"
)

// sandboxed reports whether an agent in mode, and the checks that run its
// code, run under bwrap: BUILD does when the run's sandbox decision says
// so; PLANNING never does, as it has full powers over the tracker.
func (l *Loop) sandboxed(mode string) bool { return mode == ModeBuild && l.Sandbox.Use }

// sandboxHint adds to the reason a sandboxed BUILD agent could not run
// what to do when the reason names a file that exists here but lies in a
// dir the sandbox hides (sandbox.HiddenIn): `--agent-cmd "sh
// /tmp/agent.sh"` cannot open its script there.
func (l *Loop) sandboxHint(out agent.Outcome) agent.Outcome {
	if !l.sandboxed(ModeBuild) {
		return out
	}
	if path, dir := sandbox.HiddenIn(out.Reason, l.getenv); path != "" && fileExists(path) {
		out.Reason += fmt.Sprintf("; %s is in %s, which BUILD's sandbox replaces with an empty private dir: "+
			"put it in the project or in a dir on PATH, or run with --sandbox off (docs/security.md, \"The sandbox\")", path, dir)
	}
	return out
}

// sandboxName is what the run log and history record say about the
// sandbox of an agent in mode: "bwrap" or "none".
func (l *Loop) sandboxName(mode string) string {
	if l.sandboxed(mode) {
		return "bwrap"
	}
	return "none"
}

// sandboxWrap returns the RunOptions.Wrap that runs a BUILD agent under
// bwrap, and the TMPDIR entry for its environment. gitDir and common are
// the work tree's git dirs when the caller found them since the last
// agent or check ended ("" to look them up here). net, when set, is the
// sandbox's own network (sandboxNet). readOnly are more paths the agent
// must not write (its bd client and the broker's socket).
func (l *Loop) sandboxWrap(ctx context.Context, scratch, gitDir, common string, net *sandbox.Net, readOnly ...string) (func(string, []string) (string, []string), string, error) {
	if gitDir == "" || common == "" {
		where, err := l.repo().Layout(ctx, "")
		if err != nil {
			return nil, "", fmt.Errorf("find the git dirs to protect: %w", err)
		}
		gitDir, common = where.GitDir, where.CommonDir
	}
	tmp := filepath.Join(scratch, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, "", fmt.Errorf("make the agent's temp dir: %w", err)
	}
	home := l.agentHome()
	dirs, files := agent.Writable(l.Backend, home)
	guarded := l.Backend.Guarded(home)
	projectDirs, projectFiles := agent.ProjectConfig()
	layout := sandbox.BuildLayout(sandbox.Project{
		WorkTree: l.Dir, GitDir: gitDir, GitCommonDir: common, StateDir: l.State.Dir(), Scratch: scratch,
		ReadOnly: readOnly, AgentDirs: dirs, AgentFiles: files, Home: home.Dir, Getenv: home.Getenv,
		AgentGuarded: guarded.Paths, AgentCopies: guarded.Copies, AgentPrivate: guarded.Private, ProjectGuarded: append(projectDirs, projectFiles...),
		Cache: l.sandboxCache(home), CacheDir: home.CacheDir(),
		Shared: l.pool().sandboxShared(l.State.Worker()),
		// ralphd itself, for the bd client, and the agent CLI, when they
		// live in the private /tmp.
		Keep: []string{l.Self, l.BDClient, lookPathIn(l.Backend.Binary(), home.Getenv("PATH"))},
		// The user's forge logins: with one the agent could approve or
		// merge its own pull request.
		Secrets: agent.ForgeLogins(home),
	})
	layout.Net = net
	if err := layout.Prepare(); err != nil {
		return nil, "", err
	}
	wrap := func(path string, argv []string) (string, []string) {
		// What ralphd inherited without close-on-exec stays outside.
		if err := sandbox.SealFDs(); err != nil {
			l.human().Warn("could not seal ralphd's open files from the sandbox", "err", err)
		}
		args := layout.Args(l.Sandbox.Bwrap, append([]string{path}, argv[1:]...))
		return args[0], args
	}
	return wrap, "TMPDIR=" + tmp, nil
}

// sandboxCache is the BUILD agent's own cache dir, which the sandbox
// binds at the user's XDG cache dir: <cache>/ralph/sandbox/<project id>,
// kept between iterations (a warm build cache) and shared by the
// project's workers; "" when the cache dir is unknown.
func (l *Loop) sandboxCache(home agent.Home) string {
	c := home.CacheDir()
	if c == "" {
		return ""
	}
	return filepath.Join(c, "ralph", "sandbox", l.State.Identity().ID)
}

// sandboxNet starts the network proxy of a sandboxed BUILD agent, unless
// network=open: the agent then gets a network namespace of its own whose
// only way out is the proxy, to its model API and network_allow. Each
// refused host is logged and passed to refused once per iteration, never
// after stop; stop ends the proxy and says how many connections it
// refused.
func (l *Loop) sandboxNet(scratch string, refused func(hostport string)) (net *sandbox.Net, stop func(), err error) {
	if l.Config.Network == sandbox.NetOpen {
		return nil, func() {}, nil
	}
	if l.Self == "" {
		return nil, nil, fmt.Errorf("network=%s needs ralphd's own executable to forward the agent's connections; set network=open to share the host's network", sandbox.NetAllowlist)
	}
	allow, err := sandbox.ParseAllow(l.allowEntries())
	if err != nil {
		return nil, nil, err
	}
	sock, err := sandbox.ProxyDir(scratch)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	stopped := false
	p, err := sandbox.ListenProxy(sock, allow, func(host string) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[host] && !stopped {
			seen[host] = true
			l.human().Warn("the sandbox refused a connection: not on the network allowlist (network_allow)", "host", host)
			refused(host)
		}
	}, sandbox.UpstreamFromEnv(l.getenv))
	if err != nil {
		_ = os.RemoveAll(filepath.Dir(sock))
		return nil, nil, err
	}
	stop = func() {
		_ = p.Close()
		_ = os.RemoveAll(filepath.Dir(sock)) // in scratch, or in the temp dir when scratch is too deep
		// A request the proxy was still answering reports no more.
		mu.Lock()
		stopped = true
		mu.Unlock()
		if n := p.Refused(); n > 0 {
			l.human().Info("the sandbox's network proxy refused connections", "count", n)
		}
	}
	return &sandbox.Net{Socket: sock, Forwarder: l.Self, NoProxy: allow.NoProxy(), Pass: allow.Loopback()}, stop, nil
}

// allowEntries is the network allowlist of a sandboxed agent: the
// backend's model API hosts, then network_allow.
func (l *Loop) allowEntries() []string {
	env := l.environ()
	getenv := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	var out []string
	for _, e := range append(l.Backend.Hosts(getenv), l.Config.NetworkAllow...) {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// networkName is what the history records say of the network of an
// agent in mode: "allowlist" or "open" when it runs sandboxed, "" when
// it does not (it then has the host's network, like any process).
func (l *Loop) networkName(mode string) string {
	switch {
	case !l.sandboxed(mode):
		return ""
	case l.Config.Network == sandbox.NetOpen:
		return sandbox.NetOpen
	}
	return sandbox.NetAllowlist
}

// networkAllowed is the allowlist of an agent in mode, for its history
// record; nil unless its network is the allowlist.
func (l *Loop) networkAllowed(mode string) []string {
	if l.networkName(mode) != sandbox.NetAllowlist {
		return nil
	}
	return l.allowEntries()
}

// sandboxNote is the one line a BUILD run says when it runs unsandboxed
// although the setting allowed a sandbox.
func (l *Loop) sandboxNote(mode string) string {
	if mode != ModeBuild {
		return ""
	}
	return l.Sandbox.Notice
}

// sandboxShared is what worker self's sandbox may write of the
// repository's refs: its own branch only (sandbox.Shared); the merge
// queue's verify (self "") no branch at all. Outside workers (p nil) it
// is nil.
func (p *Pool) sandboxShared(self string) *sandbox.Shared {
	switch {
	case p == nil:
		return nil
	case self == "":
		return &sandbox.Shared{}
	}
	return &sandbox.Shared{OwnRefs: "refs/heads/" + git.BranchDir(self)}
}

// lookPathIn returns where file is found on the PATH value path (file
// itself when it holds a slash), or "" when it is not found: the agent's
// executable, for the sandbox to keep in view.
func lookPathIn(file, path string) string {
	if strings.Contains(file, "/") {
		return file
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, file); isExecutable(p) {
			return p
		}
	}
	return ""
}

// isExecutable reports whether p is a regular file someone may execute.
func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// getenv reads key from the environment the Loop runs agents from (and so
// ralphd's own: Env, or the process's).
func (l *Loop) getenv(key string) string {
	env := l.environ()
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// fileExists reports whether path names something ralphd can stat.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

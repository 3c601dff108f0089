package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/sandbox"
	"github.com/ralphd/ralphd/internal/state"
)

// What each layer being off leaves open, as `ralphd doctor` and `ralphd
// status` say it.
const (
	openSandbox = "the agent can write .beads/, .ralph/, git's config and hooks and ralphd's state: such changes are found and reverted afterwards instead of failing when tried, and one made just before the agent kills ralphd (-9) can survive"
	openNetwork = "the agent can send what it reads to any host, and reach the services of this machine (its loopback, abstract unix sockets such as X11's and D-Bus's)"
	openCgroup  = "agents are contained by process group, run marker and subreaper only: a process an agent detaches and hides is ended only while ralphd runs"
)

// probeLayers finds which of ralphd's defences against a BUILD agent a run
// started now would have, with the probes the run itself makes: the
// sandbox (bwrap on PATH, tried with the namespaces a run asks for), its
// network, cgroup containment (cgroup, proc.Find in production) and the
// bd broker's client. The state dir is checked apart (stateLayer).
func probeLayers(ctx context.Context, a *app, cfg *config.Config, cgroup func() (proc.Parent, error)) []state.Layer {
	sb, net := sandboxLayers(ctx, a, cfg)
	return []state.Layer{sb, net, cgroupLayer(cgroup), brokerLayer(a.argv0)}
}

// sandboxLayers probes bubblewrap as a run does (with a network namespace
// unless network=open) and says what the sandbox and its network are.
func sandboxLayers(ctx context.Context, a *app, cfg *config.Config) (sb, net state.Layer) {
	isolate := cfg.Network != sandbox.NetOpen
	s := sandbox.Probe(ctx, a.getenv("PATH"), isolate)
	// Only the network namespace failing is worth its own fix: network=open
	// then still gives a sandbox.
	netOnly := !s.OK() && s.Path != "" && isolate && sandbox.Probe(ctx, a.getenv("PATH"), false).OK()

	sb = state.Layer{Name: "sandbox", On: s.OK() && cfg.Sandbox != sandbox.Off}
	switch {
	case cfg.Sandbox == sandbox.Off:
		sb.Detail = "sandbox=off: BUILD runs unsandboxed"
		if s.OK() {
			sb.Detail += " (bubblewrap works here)"
		}
		sb.Fix = "set sandbox to auto"
	case s.OK():
		sb.Detail = fmt.Sprintf("bubblewrap works here (%s); sandbox=%s: BUILD runs sandboxed", s.Path, orDefault(cfg.Sandbox, sandbox.Auto))
	case errors.Is(s.Err, sandbox.ErrNoBwrap):
		sb.Detail, sb.Fix = "bwrap not found: BUILD runs unsandboxed", sandbox.InstallHint
	case netOnly:
		// (s.Err's hint about user namespaces does not apply: they work.)
		sb.Detail = fmt.Sprintf("bubblewrap (%s) works, but cannot give the agent a network namespace (network=allowlist), so BUILD runs unsandboxed", s.Path)
		sb.Fix = "allow unprivileged network namespaces, or set network to open to sandbox without network isolation"
	default:
		sb.Detail, sb.Fix = s.Err.Error()+": BUILD runs unsandboxed", "enable unprivileged user namespaces"
	}
	if !sb.On {
		sb.Open = openSandbox
	}

	net = state.Layer{Name: "network", On: sb.On && isolate}
	switch {
	case !isolate:
		net.Detail = "network=open: a sandboxed agent has the host's network, unfiltered"
		net.Fix = "set network to allowlist, with the hosts the agent needs beyond its model API in network_allow"
	case !sb.On:
		net.Detail = "no sandbox, so no network namespace: BUILD has the host's network (network=allowlist)"
		net.Fix = "turn the sandbox on (see the sandbox line)"
	default:
		net.Detail = "network=allowlist: the agent's own network namespace, out only through ralphd's proxy, to " + allowlistText(a, cfg)
	}
	if !net.On {
		net.Open = openNetwork
	}
	return sb, net
}

// allowlistText lists the hosts a sandboxed agent may reach: its
// backend's model API hosts and network_allow.
func allowlistText(a *app, cfg *config.Config) string {
	var hosts []string
	b, err := agent.Lookup(cfg.Agent, agent.WithAgentCmd(cfg.AgentCmd))
	if err == nil {
		hosts = b.Hosts(a.getenv)
	}
	hosts = append(hosts, cfg.NetworkAllow...)
	s := strings.Join(hosts, ", ")
	switch {
	case err != nil:
		s = fmt.Sprintf("the agent's model API hosts (unknown: %v)", err)
		if len(cfg.NetworkAllow) > 0 {
			s += " and " + strings.Join(cfg.NetworkAllow, ", ")
		}
	case s == "":
		s = "no host (the " + b.Name() + " agent names none, and network_allow is empty)"
	}
	return s
}

// cgroupLayer says whether each iteration's processes can be contained in
// a cgroup v2 of their own (find is proc.Find, which the run uses).
func cgroupLayer(find func() (proc.Parent, error)) state.Layer {
	l := state.Layer{Name: "cgroup"}
	p, err := find()
	if err != nil {
		l.Detail, l.Open = err.Error(), openCgroup
		l.Fix = "run ralphd as a systemd user service (ralphd service install), which delegates a cgroup v2, or boot with the unified cgroup hierarchy"
		return l
	}
	l.On, l.Detail = true, "cgroup v2 at "+p.Dir+": each iteration runs in a cgroup of its own and ends with it"
	return l
}

// brokerLayer says how BUILD's bd calls reach ralphd's broker: through the
// small ralphd-bd client installed beside ralphd (self), or through ralphd
// itself. Either way every call is decided by the broker.
func brokerLayer(self string) state.Layer {
	l := state.Layer{Name: "broker", On: true}
	if c := bdClient(self); c != "" {
		l.Detail = "BUILD's bd calls are decided by ralphd's broker; the agent's bd is the small client " + c
		return l
	}
	l.Detail = fmt.Sprintf("BUILD's bd calls are decided by ralphd's broker; the agent's bd is ralphd itself, as ralphd-bd is not installed in %s (install it there for faster bd calls: go install ./cmd/ralphd-bd)", filepath.Dir(self))
	return l
}

// stateLayer checks the state dir as a run uses it (state.CheckRoot: it
// makes the dir when missing and writes a file in it).
func stateLayer(root string) state.Layer {
	l := state.Layer{Name: "state"}
	if err := state.CheckRoot(root); err != nil {
		l.Detail = fmt.Sprintf("cannot use %s: %v", root, err)
		l.Fix = "set RALPH_STATE_DIR to a writable directory of your own"
		return l
	}
	l.On, l.Detail = true, root+" is writable, and ralphd's own: no link is followed there"
	return l
}

// statusStateLayer is the state dir's layer as `ralphd status` found it:
// reading the status opened it with the same checks, and refuses to go
// on when they fail.
func statusStateLayer(st state.Status) state.Layer {
	l := state.Layer{Name: "state", On: true, Detail: st.StateDir + " passed its checks: ralphd's own, no link is followed there"}
	if !st.StateExists {
		l.Detail = st.StateDir + " is not made yet; the first run makes it, as ralphd's own"
	}
	return l
}

// layerVerdict is a layer's line in `ralphd doctor`: ok when it is on,
// else a warning (a failure when fail) with what it leaves open and its
// fix.
func layerVerdict(l state.Layer, fail bool) verdict {
	v := verdict{name: l.Name, level: levelOK, detail: l.Detail}
	if l.On {
		return v
	}
	v.level = levelWarn
	if fail {
		v.level = levelFail
	}
	if l.Open != "" {
		v.detail += "; leaves open: " + l.Open
	}
	v.fix = l.Fix
	return v
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

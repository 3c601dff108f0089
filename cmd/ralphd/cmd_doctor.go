package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/mergeq"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/sandbox"
)

// verdict is one line of `ralphd doctor`.
type verdict struct {
	name   string
	level  string // "ok", "warn" (works, with less) or "FAIL" (ralphd cannot run)
	detail string
	fix    string
}

const (
	levelOK   = "ok"
	levelWarn = "warn"
	levelFail = "FAIL"
)

func cmdDoctor(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "doctor", "doctor [--agent NAME] [--bd PATH]", `
Check everything ralphd depends on, one line each with a verdict and, when
something is wrong, how to fix it: bd and its version, the agent CLI and
whether it is logged in (where that can be told offline), git, the systemd
user manager, and the layers that hold the BUILD agent: the sandbox
(bubblewrap and user namespaces), its network (a network namespace, and
the hosts on its allowlist), cgroup v2 containment, the bd broker's client,
and the state dir (writable, no links). A layer that is off says what that
leaves open. Exits 1 when something ralphd cannot run without is missing.

With a bare --bd (no path after it), check instead the bd contract: every
bd command, output shape and exit code ralphd relies on, run against your bd
(from PATH, or --bd PATH) in a scratch git repository, one line each with ok
or the exact difference. Exits 1 when bd differs in something ralphd relies
on; the result is recorded per bd version for later runs.`)
	config.BindFlags(fs, "agent", "agent_cmd", "bd", "sandbox")
	args, contract := contractSwitch(args)
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(a, fs, "unexpected arguments: %q", pos)
	}
	if code, stop := a.parsedOnly(fs); stop {
		return code
	}
	cfg, err := loadConfigHere(ctx, a, fs)
	if err != nil {
		return reportErr(a, err)
	}
	if contract {
		return doctorBD(ctx, a, cfg)
	}
	vs := []verdict{
		checkBD(ctx, cfg.BD),
		checkAgent(ctx, a, cfg),
		checkGit(ctx),
		checkSystemd(ctx),
	}
	// The layers against the BUILD agent: a run refuses to start without
	// the sandbox when sandbox=bwrap, and without its state dir.
	sandboxed := false
	for _, l := range append(probeLayers(ctx, a, cfg, proc.Find), stateLayer(stateRoot(a))) {
		fail := l.Name == "state" || l.Name == "sandbox" && cfg.Sandbox == sandbox.Bwrap
		vs = append(vs, layerVerdict(l, fail))
		sandboxed = sandboxed || l.Name == "sandbox" && l.On
	}
	if cfg.Integrate == "pr" {
		vs = append(vs, checkReview(cfg, sandboxed))
	}
	return printVerdicts(a.stdout, vs)
}

// checkReview says what keeps the BUILD agent from approving or merging
// its own pull request (integrate = pr): the sandbox hides the user's
// forge logins and its network reaches no forge. Without the sandbox, or
// with the forge's API on the network allowlist, a warning: only the
// forge's branch protection then holds.
func checkReview(cfg *config.Config, sandboxed bool) verdict {
	v := verdict{name: "review", level: levelWarn}
	api, port := "api.github.com", "443"
	if cfg.ForgeHost != "" {
		api = cfg.ForgeHost
	}
	account := "the account ralphd's gh uses"
	if cfg.Forge == "gitea" {
		// forge_host is the Gitea server's URL: its host and port.
		account = "the account of ralphd's " + mergeq.GiteaTokenEnv
		if base, err := mergeq.GiteaBaseURL(cfg.ForgeHost); err == nil {
			if u, err := url.Parse(base); err == nil {
				api, port = u.Hostname(), u.Port()
				if port == "" && u.Scheme == "http" {
					port = "80"
				} else if port == "" {
					port = "443"
				}
			}
		}
	}
	allow, err := sandbox.ParseAllow(cfg.NetworkAllow)
	protect := "protect the target branch on the forge: require a review from someone other than " + account
	switch {
	case !sandboxed:
		v.detail = "integrate = pr with the BUILD agent unsandboxed: it runs as you, can read your gh login (~/.config/gh/hosts.yml, git's credentials) and reach " + api + ", so it could approve or merge its own pull request"
		v.fix = "install bubblewrap and set sandbox to bwrap, and " + protect
	case cfg.Network == sandbox.NetOpen:
		v.detail = "integrate = pr with network=open: the sandboxed agent sees no forge login, but reaches " + api + " with any token it comes by"
		v.fix = "set network to allowlist, and " + protect
	case err == nil && allow.Allows(api, port):
		v.detail = "integrate = pr with " + api + " on network_allow: the sandboxed agent sees no forge login, but reaches the forge with any token it comes by"
		v.fix = "take " + api + " off network_allow, and " + protect
	default:
		v.level = levelOK
		v.detail = "integrate = pr: the sandboxed BUILD agent sees none of your forge logins and its network refuses " + api + "; it cannot approve or merge"
	}
	return v
}

// printVerdicts prints one line per verdict and returns the exit code: 1
// when any failed.
func printVerdicts(w io.Writer, vs []verdict) int {
	code := exitOK
	for _, v := range vs {
		line := fmt.Sprintf("%-4s  %-8s  %s", v.level, v.name, v.detail)
		if v.fix != "" {
			line += "; fix: " + v.fix
		}
		fmt.Fprintln(w, line)
		if v.level == levelFail {
			code = exitError
		}
	}
	return code
}

// run briefly runs a probe and returns its first output line.
func firstLine(ctx context.Context, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := proc.Command(ctx, time.Second, bin, args...).Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, err
}

func checkBD(ctx context.Context, bin string) verdict {
	v := verdict{name: "bd"}
	if bin == "" {
		bin = "bd"
	}
	path, err := beads.LookPath(bin)
	if err != nil {
		v.level, v.detail = levelFail, bin+" not found"
		v.fix = `install beads ("go install github.com/steveyegge/beads/cmd/bd@latest" or "npm install -g @beads/bd"), or set bd (--bd) to its path`
		return v
	}
	ver, err := firstLine(ctx, path, "--version")
	if err != nil || ver == "" {
		v.level, v.detail, v.fix = levelFail, fmt.Sprintf("%s does not answer --version (%v)", path, err), "reinstall bd"
		return v
	}
	v.level, v.detail = levelOK, fmt.Sprintf("%s (%s)", ver, path)
	return v
}

func checkGit(ctx context.Context) verdict {
	v := verdict{name: "git"}
	path, err := exec.LookPath("git")
	if err != nil {
		v.level, v.detail, v.fix = levelFail, "git not found on PATH", "install git (sudo apt install git)"
		return v
	}
	ver, err := firstLine(ctx, path, "--version")
	if err != nil {
		v.level, v.detail, v.fix = levelFail, fmt.Sprintf("%s --version failed: %v", path, err), "reinstall git"
		return v
	}
	v.level, v.detail = levelOK, fmt.Sprintf("%s (%s)", ver, path)
	return v
}

func checkAgent(ctx context.Context, a *app, cfg *config.Config) verdict {
	v := verdict{name: "agent"}
	b, err := agent.Lookup(cfg.Agent, agent.WithAgentCmd(cfg.AgentCmd))
	if err != nil {
		v.level, v.detail, v.fix = levelFail, err.Error(), "set agent to one of "+strings.Join(agent.Names(), ", ")
		return v
	}
	bin := b.Binary()
	if b.Name() == "command" {
		v.level, v.detail = levelOK, fmt.Sprintf("%s: runs `%s` with sh -c", b.Name(), cfg.AgentCmd)
		return v
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		v.level, v.detail = levelFail, fmt.Sprintf("%s: %s not found on PATH", b.Name(), bin)
		v.fix = "install it"
		if h, ok := b.(agent.InstallHinter); ok {
			v.fix = h.InstallHint()
		}
		return v
	}
	ver := "version unknown"
	if vr, ok := b.(agent.Versioner); ok {
		if l, err := firstLine(ctx, path, vr.VersionArgs()...); err == nil && l != "" {
			ver = l
		}
	}
	v.level, v.detail = levelOK, fmt.Sprintf("%s %s (%s)", b.Name(), ver, path)
	switch cred := b.Credentials(agent.Home{Dir: a.getenv("HOME"), Getenv: a.getenv}); {
	case cred.Where != "":
		v.detail += "; logged in: " + cred.Where
	case cred.Checkable:
		v.level = levelWarn
		v.detail += "; not logged in"
		v.fix = "log in once by running " + bin + " by hand, or set its API key"
	default:
		v.detail += "; login cannot be checked offline"
	}
	return v
}

func checkSystemd(ctx context.Context) verdict {
	v := verdict{name: "systemd"}
	path, err := exec.LookPath("systemctl")
	if err != nil {
		v.level, v.detail = levelWarn, "systemctl not found: `ralphd service` is not available"
		v.fix = "run `ralphd daemon` under another supervisor"
		return v
	}
	state, err := firstLine(ctx, path, "--user", "is-system-running")
	if (state == "" && err != nil) || state == "offline" {
		v.level, v.detail = levelWarn, "no systemd user manager: `ralphd service` cannot install the unit"
		v.fix = "log in through a systemd session, or run `loginctl enable-linger $USER`"
		return v
	}
	v.level, v.detail = levelOK, "systemd user manager: "+state
	if state != "running" {
		v.level = levelWarn
		v.fix = "see `systemctl --user --failed`"
	}
	return v
}

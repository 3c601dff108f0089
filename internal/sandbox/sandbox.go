package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// The values of the `sandbox` setting.
const (
	Auto  = "auto"  // sandbox when bwrap works here, else run unsandboxed and say so
	Bwrap = "bwrap" // always sandbox; a run refuses to start when bwrap cannot
	Off   = "off"   // never sandbox
)

// Settings lists the values of the `sandbox` setting, default first.
func Settings() []string { return []string{Auto, Bwrap, Off} }

// InstallHint says how to get bubblewrap.
const InstallHint = "install the bubblewrap package (Debian/Ubuntu: sudo apt install bubblewrap; Fedora: sudo dnf install bubblewrap)"

// probeTimeout bounds the trial run of bwrap.
const probeTimeout = 10 * time.Second

// ErrNoBwrap is the Probe error when bwrap is not installed.
var ErrNoBwrap = errors.New("bwrap not found on PATH")

// Support is what Probe found.
type Support struct {
	// Path is bwrap's absolute path; empty when it is not installed.
	Path string
	// Err says why bwrap cannot make a sandbox here (not installed, user
	// namespaces disabled...); nil when it can.
	Err error
}

// OK reports whether bwrap can make a sandbox here.
func (s Support) OK() bool { return s.Path != "" && s.Err == nil }

// Probe looks for bwrap on pathEnv (a PATH value; the process's own PATH
// when empty) and runs it once with the namespaces and mounts a real
// sandbox uses, so that disabled user namespaces or a seccomp filter that
// refuses them show up here rather than as a failed iteration. With
// isolateNet (the network setting is not "open") it asks for a network
// namespace too, so a host that has user namespaces but not network ones
// is found out here; without it, such a host still gets a sandbox.
func Probe(ctx context.Context, pathEnv string, isolateNet bool) Support {
	path, err := lookPath("bwrap", pathEnv)
	if err != nil {
		return Support{Err: ErrNoBwrap}
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	l := Layout{}
	if isolateNet {
		l.Net = &Net{}
	}
	argv := l.Args(path, []string{"true"})
	cmd := proc.Command(ctx, time.Second, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return Support{Path: path, Err: fmt.Errorf("%s cannot make a sandbox here: %s%s", path, msg, usernsHint(msg))}
	}
	return Support{Path: path}
}

// usernsHint adds a fix for bwrap's usual complaint about user namespaces.
func usernsHint(msg string) string {
	if strings.Contains(msg, "namespace") || strings.Contains(msg, "Operation not permitted") {
		return " (user namespaces look disabled: enable them, e.g. sysctl kernel.unprivileged_userns_clone=1 or, under AppArmor, kernel.apparmor_restrict_unprivileged_userns=0)"
	}
	return ""
}

// lookPath finds file in pathEnv, or on the process's PATH when pathEnv
// is empty.
func lookPath(file, pathEnv string) (string, error) {
	if pathEnv == "" {
		return exec.LookPath(file)
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			continue
		}
		p := dir + "/" + file
		if lp, err := exec.LookPath(p); err == nil {
			return lp, nil
		}
	}
	return "", exec.ErrNotFound
}

// Decision is what Choose decided for a run.
type Decision struct {
	// Use says whether BUILD agents, and the checks that run their code,
	// run under bwrap.
	Use bool
	// Bwrap is bwrap's path when Use is set.
	Bwrap string
	// Notice, when set, is the one line to tell the user (once per run):
	// why the agent and its checks run unsandboxed although the setting
	// allows a sandbox.
	Notice string
}

// Choose turns the `sandbox` setting and what Probe found into a
// decision. sandbox=bwrap where bwrap cannot run is an error: the user
// asked for a guarantee ralphd cannot give.
func Choose(setting string, s Support) (Decision, error) {
	switch setting {
	case Off:
		return Decision{}, nil
	case Bwrap:
		if !s.OK() {
			return Decision{}, fmt.Errorf("sandbox=bwrap, but %v; %s, or set sandbox=auto to run unsandboxed", s.Err, InstallHint)
		}
		return Decision{Use: true, Bwrap: s.Path}, nil
	case Auto, "":
		if !s.OK() {
			hint := InstallHint
			if s.Path != "" {
				hint = "fix that"
			}
			return Decision{Notice: fmt.Sprintf("BUILD runs unsandboxed: %v; %s to have ralphd sandbox the agent and its checks (or set sandbox=off to silence this)", s.Err, hint)}, nil
		}
		return Decision{Use: true, Bwrap: s.Path}, nil
	}
	return Decision{}, fmt.Errorf("sandbox=%q: use one of %s", setting, strings.Join(Settings(), ", "))
}

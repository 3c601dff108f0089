package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/sandbox"
	"github.com/ralphd/ralphd/internal/state"
)

// binDir returns a dir holding an executable script name with body.
func binDir(t *testing.T, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDoctorLayers forces each layer on and off through the seams a run
// uses (the PATH bwrap is found on, the sandbox and network settings, the
// cgroup probe, what is installed beside ralphd) and checks what doctor
// and status say of it.
func TestDoctorLayers(t *testing.T) {
	realBwrap, _ := exec.LookPath("bwrap")
	works := realBwrap != "" && sandbox.Probe(context.Background(), "", true).OK()
	noNetns := binDir(t, "bwrap", `for a in "$@"; do
	if [ "$a" = --unshare-net ]; then echo 'bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted' >&2; exit 1; fi
done
exec `+realBwrap+` "$@"
`)
	noBwrap := t.TempDir()
	cgroupOK := func() (proc.Parent, error) { return proc.Parent{Dir: "/sys/fs/cgroup/user.slice/ralphd"}, nil }
	cgroupNo := func() (proc.Parent, error) { return proc.Parent{}, errors.New("cgroup v1 only") }

	type want struct {
		on     bool
		detail string // a part of the detail
		fix    string // a part of the fix; "" for none
	}
	for _, tc := range []struct {
		name     string
		path     string // PATH; "" for the process's own
		bwrap    bool   // needs a working bwrap
		sandbox  string
		network  string
		allow    []string
		cgroup   func() (proc.Parent, error)
		sb, net  want
		cg       want
		doctorSb string // the sandbox line's verdict in doctor
	}{
		{name: "everything on", bwrap: true, sandbox: sandbox.Auto, network: sandbox.NetAllowlist, allow: []string{"registry.npmjs.org"}, cgroup: cgroupOK,
			sb:  want{true, "bubblewrap works here (", ""},
			net: want{true, "out only through ralphd's proxy, to api.anthropic.com, registry.npmjs.org", ""},
			cg:  want{true, "cgroup v2 at /sys/fs/cgroup/user.slice/ralphd", ""}, doctorSb: levelOK},
		{name: "no bwrap on PATH", path: noBwrap, sandbox: sandbox.Auto, network: sandbox.NetAllowlist, cgroup: cgroupNo,
			sb:  want{false, "bwrap not found: BUILD runs unsandboxed", "install the bubblewrap package"},
			net: want{false, "no sandbox, so no network namespace", "turn the sandbox on"},
			cg:  want{false, "cgroup v1 only", "ralphd service install"}, doctorSb: levelWarn},
		{name: "no bwrap, sandbox=bwrap", path: noBwrap, sandbox: sandbox.Bwrap, network: sandbox.NetAllowlist, cgroup: cgroupOK,
			sb:  want{false, "bwrap not found", "install the bubblewrap package"},
			net: want{false, "no sandbox", "turn the sandbox on"},
			cg:  want{true, "cgroup v2", ""}, doctorSb: levelFail},
		{name: "bwrap without network namespaces", path: noNetns, bwrap: true, sandbox: sandbox.Auto, network: sandbox.NetAllowlist, cgroup: cgroupOK,
			sb:  want{false, "works, but cannot give the agent a network namespace (network=allowlist), so BUILD runs unsandboxed", "set network to open"},
			net: want{false, "no sandbox", "turn the sandbox on"},
			cg:  want{true, "cgroup v2", ""}, doctorSb: levelWarn},
		{name: "bwrap without network namespaces, network=open", path: noNetns, bwrap: true, sandbox: sandbox.Auto, network: sandbox.NetOpen, cgroup: cgroupOK,
			sb:  want{true, "BUILD runs sandboxed", ""},
			net: want{false, "network=open: a sandboxed agent has the host's network", "set network to allowlist"},
			cg:  want{true, "cgroup v2", ""}, doctorSb: levelOK},
		{name: "sandbox=off", bwrap: true, sandbox: sandbox.Off, network: sandbox.NetAllowlist, cgroup: cgroupOK,
			sb:  want{false, "sandbox=off: BUILD runs unsandboxed (bubblewrap works here)", "set sandbox to auto"},
			net: want{false, "no sandbox", "turn the sandbox on"},
			cg:  want{true, "cgroup v2", ""}, doctorSb: levelWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			if tc.bwrap && !works {
				t.Skip("bubblewrap cannot make a sandbox with a network namespace here")
			}
			env := map[string]string{"PATH": tc.path}
			if tc.path == "" {
				env["PATH"] = os.Getenv("PATH")
			}
			a := &app{getenv: func(k string) string { return env[k] }, argv0: filepath.Join(t.TempDir(), "ralphd")}
			cfg := &config.Config{Agent: "claude", Sandbox: tc.sandbox, Network: tc.network, NetworkAllow: tc.allow}
			ls := probeLayers(context.Background(), a, cfg, tc.cgroup)
			is.Equal(len(ls), 4) // sandbox, network, cgroup, broker
			for i, w := range []want{tc.sb, tc.net, tc.cg} {
				l := ls[i]
				t.Logf("%s on=%v %s; open: %s; fix: %s", l.Name, l.On, l.Detail, l.Open, l.Fix)
				is.Equal(l.On, w.on)                          // the layer is on or off
				is.True(strings.Contains(l.Detail, w.detail)) // and says why
				is.True(strings.Contains(l.Fix, w.fix))
				is.Equal(l.Open != "", !w.on) // an off layer says what it leaves open
				is.Equal(l.Fix != "", !w.on)  // and how to turn it on
			}
			fail := tc.sandbox == sandbox.Bwrap
			is.Equal(layerVerdict(ls[0], fail).level, tc.doctorSb) // doctor's verdict on the sandbox
		})
	}
}

// The broker is on either way; its client is ralphd-bd when that is
// installed beside ralphd, else ralphd itself.
func TestDoctorBrokerLayer(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	self := filepath.Join(dir, "ralphd")
	l := brokerLayer(self)
	is.True(l.On)
	is.True(strings.Contains(l.Detail, "the agent's bd is ralphd itself, as ralphd-bd is not installed in "+dir))
	is.NoErr(os.WriteFile(filepath.Join(dir, "ralphd-bd"), []byte("#!/bin/sh\n"), 0o755))
	l = brokerLayer(self)
	is.True(l.On)
	is.True(strings.Contains(l.Detail, "the small client "+filepath.Join(dir, "ralphd-bd")))
}

// The state dir passes its checks, or doctor FAILs it: a link where it
// should be is never followed.
func TestDoctorStateLayer(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	l := stateLayer(filepath.Join(dir, "state"))
	is.True(l.On)
	is.Equal(layerVerdict(l, true).level, levelOK)
	is.NoErr(os.Symlink(filepath.Join(dir, "state"), filepath.Join(dir, "link")))
	l = stateLayer(filepath.Join(dir, "link"))
	is.True(!l.On)
	is.True(strings.Contains(l.Detail, "never follows a link"))
	v := layerVerdict(l, true)
	is.Equal(v.level, levelFail)
	is.True(strings.Contains(v.fix, "RALPH_STATE_DIR"))
	is.Equal(statusStateLayer(state.Status{StateDir: "/s", StateExists: true}).On, true)
}

package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/proc"
)

func cmdAgents(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "agents", "agents", `
List the agent backends ralphd can drive: whether each one's binary is on
PATH, its version, and whether ralphd's end-to-end suite has verified that
version (the real CLI under `+"`ralphd build`"+` against a scripted model API),
then how to install what is missing. Choose one with --agent NAME or
"agent" in config.`)
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(a, fs, "unexpected arguments: %q", pos)
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tBINARY\tINSTALLED\tVERSION\tVERIFIED END TO END")
	var missing []string
	for _, name := range agent.Names() {
		b, err := agent.Lookup(name, agent.WithAgentCmd("true"))
		if err != nil {
			continue
		}
		bin := b.Binary()
		installed, version := "no", "-"
		if path, err := exec.LookPath(bin); err == nil {
			installed = path
			if v, ok := b.(agent.Versioner); ok {
				version = probeVersion(ctx, path, v.VersionArgs()...)
			}
		} else if h, ok := b.(agent.InstallHinter); ok {
			missing = append(missing, name+": "+h.InstallHint())
		}
		if name == "command" {
			bin, version = "sh -c <agent_cmd>", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, bin, installed, version, verifiedText(name, version))
	}
	tw.Flush()
	if len(missing) > 0 {
		fmt.Fprintln(a.stdout, "\nTo install:")
		for _, m := range missing {
			fmt.Fprintln(a.stdout, "  "+m)
		}
	}
	return exitOK
}

// verifiedText says whether the installed version of backend name is the
// one ralphd's end-to-end suite verified.
func verifiedText(name, version string) string {
	v, ok := agent.Verified(name)
	switch {
	case !ok:
		return "-"
	case v.Version == "":
		return "no: " + v.Why
	case version == "-" || version == "unknown":
		return "verified: " + v.Version
	case agent.VerifiedVersion(name, version):
		return "yes (" + v.Version + ")"
	}
	return "no: verified version is " + v.Version
}

// probeVersion runs the binary's version command briefly and returns the
// first line it prints.
func probeVersion(ctx context.Context, bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := proc.Command(ctx, time.Second, bin, args...)
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

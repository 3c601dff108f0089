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
List the agent backends ralphd can drive, whether each one's binary is on
PATH, and its version. Choose one with --agent NAME or "agent" in config.`)
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(a, fs, "unexpected arguments: %q", pos)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tBINARY\tINSTALLED\tVERSION")
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
		}
		if name == "command" {
			bin, version = "sh -c <agent_cmd>", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, bin, installed, version)
	}
	tw.Flush()
	return exitOK
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

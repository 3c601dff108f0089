package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ralphd/ralphd/internal/config"
)

func cmdConfig(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "config", "config [--json] [flags]", `
Print the effective configuration: every key, its value, and where the value
came from. Sources, highest first: flags, RALPH_* environment variables, the
project's .ralph/config.json, the global <XDG config home>/ralph/config.json,
and defaults. Pass any build/plan flag to see its effect.`)
	asJSON := fs.Bool("json", false, "print JSON")
	config.BindFlags(fs)
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
	dir := ""
	if id, err := identify(ctx, ""); err == nil {
		dir = id.TopLevel
	}
	// A broken config file is shown, not hidden behind its error: the
	// table has what still applies, and the error (exit 2) names the file.
	cfg, loadErr := loadConfigKeepGoing(a, dir, fs)
	if cfg == nil {
		return reportErr(a, loadErr)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cfg.Entries()); err != nil {
			return reportErr(a, err)
		}
	} else {
		fmt.Fprintf(a.stdout, "%-26s %-12s %s\n", "KEY", "VALUE", "SOURCE")
		cfg.WriteTable(a.stdout)
	}
	if loadErr != nil {
		for _, line := range strings.Split(loadErr.Error(), "\n") {
			errorf(a.stderr, "config: %s", line)
		}
		hintf(a.stderr, "fix it there; until then ralphd build, plan and daemon refuse to start (the values above leave out the broken parts)")
		return exitUsage
	}
	return exitOK
}

package main

import (
	"context"
	"encoding/json"
	"fmt"

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
	cfg, err := loadConfigHere(ctx, a, fs)
	if err != nil {
		return reportErr(a, err)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cfg.Entries()); err != nil {
			return reportErr(a, err)
		}
		return exitOK
	}
	fmt.Fprintf(a.stdout, "%-26s %-12s %s\n", "KEY", "VALUE", "SOURCE")
	cfg.WriteTable(a.stdout)
	return exitOK
}

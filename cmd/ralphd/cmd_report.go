package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ralphd/ralphd/internal/state"
)

func cmdReport(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "report", "report [RUN] [--json]", `
Print a run's end-of-run report again: completed over tried, each issue not
completed (attempts, last gate, fingerprint, stuck, failure branch, quality
warnings), the stop reason, cost and tokens, and the effective configuration.
RUN is a run id (or a prefix of one); the default is the latest run.`)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 1 {
		return usageErrorf(a, fs, "give at most one RUN")
	}
	dir, err := stateSubdir(ctx, a, state.ReportsDirName)
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitUsage
	}
	ext := ".md"
	if *asJSON {
		ext = ".json"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
	sort.Strings(files) // run ids start with their UTC start time
	if len(files) == 0 {
		fmt.Fprintf(a.stdout, "no reports yet in %s\nevery `ralphd build` and `ralphd plan` run writes one\n", dir)
		return exitOK
	}
	path := files[len(files)-1]
	if len(pos) == 1 {
		var match []string
		for _, f := range files {
			if strings.HasPrefix(filepath.Base(f), pos[0]) {
				match = append(match, f)
			}
		}
		switch len(match) {
		case 0:
			errorf(a.stderr, "no report for run %q", pos[0])
			hintf(a.stderr, "the reports are in %s; `ralphd logs` lists the runs", dir)
			return exitUsage
		case 1:
			path = match[0]
		default:
			errorf(a.stderr, "%q matches %d runs; give more of the id", pos[0], len(match))
			return exitUsage
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return reportErr(a, err)
	}
	_, _ = a.stdout.Write(data)
	return exitOK
}

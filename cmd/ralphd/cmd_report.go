package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

func cmdReport(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "report", "report [RUN] [--json]", `
Print a run's end-of-run report again: completed over tried, each issue not
completed (attempts, last gate, fingerprint, stuck, failure branch, quality
warnings), the stop reason, cost and tokens, and the effective configuration.
RUN is a run ID as 'ralphd logs' and 'ralphd status' show it, a prefix of
one, or "last" (the default).`)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 1 {
		return usageErrorf(a, fs, "give at most one RUN")
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
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
	reports, err := listReports(dir, ext)
	if err != nil {
		return reportErr(a, err)
	}
	if len(reports) == 0 {
		fmt.Fprintf(a.stdout, "no reports yet in %s\nevery `ralphd build` and `ralphd plan` run writes one\n", dir)
		return exitOK
	}
	want := "last"
	if len(pos) == 1 {
		want = pos[0]
	}
	e, err := logjsonl.ResolveRun(reports, want)
	if err != nil {
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "`ralphd logs` and `ralphd status` show run IDs; `ralphd report last` is the latest")
		return exitUsage
	}
	path := filepath.Join(dir, e.ID+ext)
	data, err := os.ReadFile(path)
	if err != nil {
		return reportErr(a, err)
	}
	_, _ = a.stdout.Write(data)
	return exitOK
}

// listReports lists the reports in dir with extension ext.
func listReports(dir, ext string) ([]logjsonl.RunEntry, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list reports: %w", err)
	}
	var es []logjsonl.RunEntry
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ext)
		if !ok || !de.Type().IsRegular() {
			continue
		}
		e := logjsonl.RunEntry{ID: id}
		e.Start, _ = logjsonl.ParseRunID(id)
		if info, err := de.Info(); err == nil {
			e.Modified = info.ModTime()
		}
		es = append(es, e)
	}
	return es, nil
}

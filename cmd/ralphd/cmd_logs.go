package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

func cmdLogs(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "logs", "logs [RUN] [--follow] [--raw] [-v] [--worker W]", `
Without RUN, list this project's run logs (written with RALPH_LOG=1 or --log):
time, mode, iterations and outcome. With RUN (a run ID as listed, a prefix
of one, a path, or "last"), render that run for a person; --raw prints the JSONL
as it is, --follow keeps printing as the run goes on. --follow without RUN
follows the run in progress or, when none is, waits for the next one to
start and follows it (as tail -F does). In a --workers run every line shows
its worker, [w1], [w2], …; --worker w2 shows only w2's lines and the run's.`)
	follow := fs.Bool("follow", false, "keep printing new lines until the run ends")
	raw := fs.Bool("raw", false, "print the JSONL unchanged")
	verbose := fs.Bool("v", false, "also show tool results, allowed bd calls and tokens")
	worker := fs.String("worker", "", "show only this worker's lines (and the run's own), e.g. w2")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 1 {
		return usageErrorf(a, fs, "give at most one RUN")
	}
	if *worker != "" && *raw {
		return usageErrorf(a, fs, "--worker filters the rendered log; with --raw, use jq 'select(.ralph_worker==\"%s\" or .data.worker==\"%s\")'", *worker, *worker)
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	dir, err := stateSubdir(ctx, a, state.LogsDirName)
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitUsage
	}
	runs, err := logjsonl.ListRuns(dir)
	if err != nil && !os.IsNotExist(err) {
		return reportErr(a, err)
	}
	if len(pos) == 0 && !*follow {
		if len(runs) == 0 {
			fmt.Fprintf(a.stdout, "no run logs in %s\nrun with RALPH_LOG=1 or --log to write one\n", dir)
			return exitOK
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tSTARTED\tMODE\tITERATIONS\tOUTCOME")
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.RunID, r.Start.Local().Format(time.DateTime), r.Mode, r.Iterations, r.Outcome)
		}
		tw.Flush()
		return exitOK
	}
	want := "last"
	if len(pos) == 1 {
		want = pos[0]
	}
	var path string
	if *follow && len(pos) == 0 && !inProgress(dir, runs) {
		// Like tail -F: with no run going, wait for the next one.
		fmt.Fprintf(a.stderr, "ralphd: no run in progress; waiting for the next one to start (Ctrl-C to stop)\n")
		path, err = waitNewLog(ctx, dir, runs)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			return reportErr(a, err)
		}
	} else {
		path, err = findRun(runs, want)
	}
	if err != nil {
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "run `ralphd logs` to list the runs")
		return exitUsage
	}
	opts := logjsonl.RenderOptions{Raw: *raw, Verbose: *verbose, Color: isTerminal(a.stdout), Worker: *worker}
	if *follow {
		err = logjsonl.Follow(ctx, path, a.stdout, opts)
	} else {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			err = logjsonl.Render(a.stdout, f, opts)
			f.Close()
		}
	}
	if err != nil && ctx.Err() == nil {
		return reportErr(a, err)
	}
	return exitOK
}

// inProgress reports whether the newest run log in dir belongs to a run
// still going: it has no run_end, and a ralphd holds the project's lock.
func inProgress(dir string, runs []logjsonl.RunSummary) bool {
	if len(runs) == 0 || runs[len(runs)-1].Outcome != logjsonl.OutcomeUnfinished {
		return false
	}
	holder, err := state.LockHolder(filepath.Join(filepath.Dir(dir), state.LockFile))
	return err != nil || holder != nil // when unsure, follow what is there
}

// followPoll is how often `logs --follow` looks for a run to start.
const followPoll = 250 * time.Millisecond

// waitNewLog waits until a run log that is not among runs appears in dir,
// and returns its path.
func waitNewLog(ctx context.Context, dir string, runs []logjsonl.RunSummary) (string, error) {
	old := map[string]bool{}
	for _, r := range runs {
		old[r.Name] = true
	}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		now, err := logjsonl.ListRuns(dir)
		if err != nil {
			return "", err
		}
		for i := len(now) - 1; i >= 0; i-- {
			if !old[now[i].Name] {
				return now[i].Path, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}

// findRun resolves a RUN argument to a log file: a path, "last", or a run
// ID (a prefix of one, or an older name for the same run).
func findRun(runs []logjsonl.RunSummary, want string) (string, error) {
	if strings.ContainsRune(want, os.PathSeparator) {
		if _, err := os.Stat(want); err != nil {
			return "", fmt.Errorf("no log at %s", want)
		}
		return want, nil
	}
	entries := make([]logjsonl.RunEntry, len(runs))
	for i, r := range runs {
		entries[i] = logjsonl.RunEntry{ID: r.RunID}
		if t, ok := logjsonl.ParseRunID(r.Name); ok {
			entries[i].Start = t
		}
	}
	if want == "last" || want == "latest" {
		if len(runs) == 0 {
			return "", fmt.Errorf("no run logs yet")
		}
		return runs[len(runs)-1].Path, nil // ListRuns lists oldest first
	}
	e, err := logjsonl.ResolveRun(entries, want)
	if err != nil {
		return "", err
	}
	return runs[slices.IndexFunc(entries, func(x logjsonl.RunEntry) bool { return x.ID == e.ID })].Path, nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

func cmdStatus(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "status", "status [--json]", `
Show this project's state: its id and which rule made it, the state dir, the
ralphd holding the lock (if any), the workers of a running --workers BUILD,
attempts per issue with stuck ones marked, the last run (with the sandbox
and network its agents had), the run logs, and which layers against the
BUILD agent a run started now would have (sandbox, network, cgroup, broker,
state dir), each off one with what it leaves open and how to turn it on.
Reads only; creates nothing.

--json prints one object whose keys are stable (keys may be added, never
renamed or removed). "workers" lists the running ralphd's workers, [] when
none run, each with: worker, actor, worktree, issue ("" when idle), attempt
(0 when idle), since (RFC 3339) and elapsed_seconds. The workers a killed
ralphd left in its status file are not listed; "warnings" says so.
"fleet" is, for a daemon on a tracker other daemons share, who it last saw
holding the planner lease: lease, planner ("" nobody), planner_host,
planner_clone, this_clone and since; null otherwise.
"layers" lists the layers, each with: name, on, detail, and when off,
open (what that leaves open) and fix.`)
	asJSON := fs.Bool("json", false, "print a stable JSON object for scripts")
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
	id, err := identify(ctx, "")
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitUsage
	}
	cfg, err := loadConfigKeepGoing(a, id.TopLevel, nil)
	if cfg == nil {
		return reportErr(a, err)
	}
	if err != nil { // status still shows the state; the broken config is named
		warnf(a.stderr, "config: %v", err)
		hintf(a.stderr, "ralphd build, plan and daemon refuse to start until it is fixed; `ralphd config` shows what applies")
	}
	st, err := state.ReadStatus(stateRoot(a), id, cfg.MaxStuck)
	if err != nil {
		errorf(a.stderr, "%v", err)
		stateDirHint(a)
		return exitUsage
	}
	st.Layers = append(probeLayers(ctx, a, cfg, proc.Find), statusStateLayer(st))
	live, prs, note := liveStatus(filepath.Join(st.StateDir, modes.WorkersStatusFile), st.Lock, time.Now())
	if note != "" {
		st.Warnings = append(st.Warnings, note)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(statusJSON{Status: st, Workers: live, PullRequests: prs}); err != nil {
			return reportErr(a, err)
		}
		return exitOK
	}
	if err := st.WriteText(a.stdout); err != nil {
		return reportErr(a, err)
	}
	writeWorkers(a.stdout, live)
	writePullRequests(a.stdout, prs)
	fmt.Fprintf(a.stdout, "Agent containment (for a ralphd started now): %s\n", describeContainment())
	return exitOK
}

// describeContainment says how a ralphd started now would contain its
// agents' processes, and why when it falls back.
func describeContainment() string {
	p, err := proc.Find()
	if err != nil {
		return fmt.Sprintf("process group and child subreaper (%v)", err)
	}
	return (&proc.Containment{Parent: p}).Describe()
}

func cmdReset(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "reset", "reset ISSUE-ID... | reset --all | reset --tracker", `
Clear the issues' attempt records (counter, escalation and the verbatim record
of past attempts, all together), and remove the `+modes.StuckLabel+` label, so
BUILD gives them a fresh start. This is the safe way to do what the bash
loop's docs call "rm attempts.txt".

With --tracker, forget which tracker bd opened when ralphd first ran in this
checkout: BUILD refuses to start when bd opens another one, and the next run
pins what bd opens then. Do it only when you moved the tracker on purpose.`)
	all := fs.Bool("all", false, "reset every issue")
	tracker := fs.Bool("tracker", false, "forget the pinned tracker of this checkout")
	config.BindFlags(fs, "bd") // the bd that removes the stuck label, as build's --bd
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if *tracker {
		if *all || len(pos) > 0 {
			return usageErrorf(a, fs, "--tracker takes no issues and no --all")
		}
		if code, stop := a.parsedOnly(nil); stop {
			return code
		}
		return resetTracker(ctx, a)
	}
	if *all == (len(pos) > 0) {
		return usageErrorf(a, fs, "name the issues to reset, or pass --all (not both)")
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	p, code := openProject(ctx, a, fs, "")
	if p == nil {
		return code
	}
	lock, err := p.store.Lock("reset")
	if err != nil {
		return reportErr(a, err)
	}
	defer lock.Release()

	var cleared map[string]int
	if *all {
		cleared, err = p.store.ResetAll()
	} else {
		cleared, err = p.store.Reset(pos...)
	}
	if err != nil {
		return reportErr(a, err)
	}
	ids := make([]string, 0, len(cleared))
	for id := range cleared {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(a.stdout, "reset %s (was %s)\n", id, text.Count(cleared[id], "attempt"))
	}
	if len(ids) == 0 {
		fmt.Fprintln(a.stdout, "no attempt counters to reset")
	}
	unknown := unstick(ctx, a, p.cfg, p.dir, pos, *all)
	var typos []string
	for _, id := range unknown {
		if _, had := cleared[id]; !had {
			typos = append(typos, id)
		}
	}
	if len(typos) > 0 {
		if len(typos) == 1 {
			errorf(a.stderr, "no issue %s: bd does not know it and ralphd holds no attempt record of it", typos[0])
		} else {
			errorf(a.stderr, "no issues %s: bd knows none of them and ralphd holds no attempt record of them", strings.Join(typos, ", "))
		}
		hintf(a.stderr, "check the id with `bd list --all`, or `ralphd status` for the issues with attempt records")
		return exitUsage
	}
	return exitOK
}

// resetTracker forgets the tracker pinned for this checkout.
func resetTracker(ctx context.Context, a *app) int {
	p, code := openProject(ctx, a, nil, "")
	if p == nil {
		return code
	}
	lock, err := p.store.Lock("reset")
	if err != nil {
		return reportErr(a, err)
	}
	defer lock.Release()
	checkout := p.store.Identity().TopLevel
	had, err := p.store.ClearTrackerPin(checkout)
	if err != nil {
		return reportErr(a, err)
	}
	if had {
		fmt.Fprintf(a.stdout, "forgot the tracker pinned for %s; the next run pins what bd opens then\n", checkout)
	} else {
		fmt.Fprintf(a.stdout, "no tracker pinned for %s\n", checkout)
	}
	return exitOK
}

// unstick removes the stuck label from the named issues (or all labelled
// ones), and returns the named ones bd does not know. bd trouble is a
// warning: the counters are already reset.
func unstick(ctx context.Context, a *app, cfg *config.Config, dir string, ids []string, all bool) (unknown []string) {
	bin, err := beads.LookPath(cfg.BD)
	if err != nil {
		warnf(a.stderr, "could not remove the %s labels: %v", modes.StuckLabel, err)
		return nil
	}
	bd, err := beads.NewClient(bin, dir)
	if err != nil {
		warnf(a.stderr, "could not remove the %s labels: %v", modes.StuckLabel, err)
		return nil
	}
	if all {
		issues, err := bd.List(ctx, beads.ListOptions{All: true})
		if err != nil {
			warnf(a.stderr, "could not list issues to remove %s labels: %v", modes.StuckLabel, err)
			return nil
		}
		ids = nil
		for _, is := range issues {
			if is.HasLabel(modes.StuckLabel) {
				ids = append(ids, is.ID)
			}
		}
	}
	for _, id := range ids {
		if !all { // named issues: remove the label only where it is
			is, err := bd.Show(ctx, id)
			if errors.Is(err, beads.ErrIssueNotFound) {
				unknown = append(unknown, id)
				continue
			}
			if err != nil {
				warnf(a.stderr, "could not read %s: %v", id, err)
				continue
			}
			if !is.HasLabel(modes.StuckLabel) {
				continue
			}
		}
		if err := bd.LabelRemove(ctx, id, modes.StuckLabel); err != nil {
			warnf(a.stderr, "could not remove %s from %s: %v", modes.StuckLabel, id, err)
			continue
		}
		fmt.Fprintf(a.stdout, "removed %s from %s\n", modes.StuckLabel, id)
	}
	return unknown
}

func cmdMigrate(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "migrate", "migrate", `
Import the attempt counts of a legacy in-repo .ralph-attempts file into the
state dir (adding to any counts already there), then remove the file.`)
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
	p, code := openProject(ctx, a, nil, "")
	if p == nil {
		return code
	}
	if !state.HasLegacyAttempts(p.dir) {
		fmt.Fprintf(a.stdout, "nothing to migrate: %s does not exist\n", state.LegacyAttemptsPath(p.dir))
		return exitOK
	}
	lock, err := p.store.Lock("migrate")
	if err != nil {
		return reportErr(a, err)
	}
	defer lock.Release()
	counts, err := p.store.Migrate(p.dir)
	if err != nil {
		return reportErr(a, err)
	}
	fmt.Fprintf(a.stdout, "imported %d issue counter(s) into %s and removed %s\n", len(counts), p.store.AttemptsPath(), state.LegacyAttemptsPath(p.dir))
	return exitOK
}

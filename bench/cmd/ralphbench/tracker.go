package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/testkit/standin"
)

// Section 8 measures what the size of the tracker costs ralphd: its own
// bd time per iteration on a generated 5,000-issue tracker against a
// 50-issue one, and its wall time per iteration there against the bash
// loop's, all in the same run and with the stand-in bd.

// Sizes and shape of section 8's trackers.
const (
	trackerSmall = 50
	trackerLarge = 5000
	// trackerOpen is how many of the large tracker's issues are open
	// (chains of three: about a third of them ready).
	trackerOpen = 300
	// trackerIters is the iterations of each run.
	trackerIters = 20
)

// trackerRun is one recorded ralphd run on one tracker.
type trackerRun struct {
	Issues     int
	Iterations int
	BDTime     time.Duration // ralphd's own bd calls, summed
	BDCalls    int
	ByCall     map[string]time.Duration // BDTime by subcommand
}

func (r trackerRun) perIter() time.Duration { return r.BDTime / time.Duration(max(r.Iterations, 1)) }

// trackerResult is what section 8 measured.
type trackerResult struct {
	Seeded              standin.Seeded
	Small, Large        trackerRun
	Runs                int
	RalphdWalls, Loops  []time.Duration // at trackerLarge, trackerIters iterations each
	RalphdSmall, LoopSm []time.Duration // at trackerSmall
	// BD names the bd every figure used ("stand-in bd", "real bd 1.0.5").
	BD string
	// MovedSmall and MovedLarge say how the trackers got into a real bd;
	// nil with the stand-in.
	MovedSmall, MovedLarge *moved
}

// trackerMix is the generated tracker of n issues, open of them open.
func trackerMix(n, open int) standin.Mix { return standin.Mix{Issues: n, Open: open, Seed: uint64(n)} }

// makeTracker makes a project whose tracker holds the generated mix m,
// written straight to the stand-in's store.
func (e *benchEnv) makeTracker(ctx context.Context, dir string, m standin.Mix) (standin.Seeded, error) {
	if err := e.makeProject(ctx, dir, 0); err != nil {
		return standin.Seeded{}, err
	}
	s, err := standin.Seed(dir, m)
	if err != nil {
		return s, fmt.Errorf("generate a %d-issue tracker: %w", m.Issues, err)
	}
	return s, nil
}

// generateTracker makes a project whose tracker holds n generated issues
// (open of them open) in e's bd: the stand-in's store, or a real bd's
// (moved there, see realbd.go; mv says how).
func (e *benchEnv) generateTracker(ctx context.Context, dir string, n, open int, say func(string, ...any)) (s standin.Seeded, mv *moved, err error) {
	if e.real == nil {
		s, err = e.makeTracker(ctx, dir, trackerMix(n, open))
		return s, nil, err
	}
	m, err := e.realTracker(ctx, dir, trackerMix(n, open), say)
	return m.Seeded, &m, err
}

// measureTracker runs section 8 with e's bd (the stand-in, or a real bd).
func measureTracker(ctx context.Context, e *benchEnv, runs int, say func(string, ...any)) (*trackerResult, error) {
	r := &trackerResult{Runs: runs, BD: e.bdLabel()}
	small, large := filepath.Join(e.work, "tpl-tracker-small"), filepath.Join(e.work, "tpl-tracker-large")
	say("tracker: generating a %d-issue and a %d-issue tracker (%s)", trackerSmall, trackerLarge, r.BD)
	var err error
	if _, r.MovedSmall, err = e.generateTracker(ctx, small, trackerSmall, trackerSmall, say); err != nil {
		return nil, err
	}
	if r.Seeded, r.MovedLarge, err = e.generateTracker(ctx, large, trackerLarge, trackerOpen, say); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		tpl string
		n   int
		out *trackerRun
	}{{small, trackerSmall, &r.Small}, {large, trackerLarge, &r.Large}} {
		say("tracker: recording ralphd's timed bd calls over %d iterations at %d issues", trackerIters, t.n)
		if *t.out, err = e.timedCalls(ctx, t.tpl, t.n); err != nil {
			return nil, err
		}
	}
	for i := range runs {
		for _, t := range []struct {
			tpl          string
			ralphd, loop *[]time.Duration
		}{{large, &r.RalphdWalls, &r.Loops}, {small, &r.RalphdSmall, &r.LoopSm}} {
			order := []string{"ralphd", "loop"}
			if i%2 == 1 {
				order = []string{"loop", "ralphd"}
			}
			for _, what := range order {
				say("tracker: timed run %d/%d: %s, %s", i+1, runs, what, filepath.Base(t.tpl))
				d, err := e.timedBuild(ctx, t.tpl, what, trackerIters, fmt.Sprintf("tracker-%s-%s-%d", filepath.Base(t.tpl), what, i))
				if err != nil {
					return nil, err
				}
				if what == "ralphd" {
					*t.ralphd = append(*t.ralphd, d)
				} else {
					*t.loop = append(*t.loop, d)
				}
			}
		}
	}
	return r, nil
}

// timedCalls runs ralphd over a copy of tpl with bdrec timing each of its
// bd calls, and sums ralphd's own.
func (e *benchEnv) timedCalls(ctx context.Context, tpl string, n int) (trackerRun, error) {
	out := trackerRun{Issues: n, ByCall: map[string]time.Duration{}}
	dir := filepath.Join(e.work, "tracker-rec-"+strconv.Itoa(n))
	if err := copyTree(ctx, tpl, dir); err != nil {
		return out, err
	}
	log := filepath.Join(e.work, fmt.Sprintf("calls-tracker-%d.jsonl", n))
	env := e.recordEnv(log, "BENCH_TIME_CALLS=1", "RALPH_STATE_DIR="+filepath.Join(e.work, "state-tracker-"+strconv.Itoa(n)))
	cmd := command(ctx, env, dir, e.ralphd(), e.ralphdArgs(trackerIters, filepath.Join(e.recBin, "bd"))...)
	m, err := measure(cmd, measureOptions{Capture: true})
	if err != nil {
		return out, err
	}
	if m.Exit != 0 && !capReached(m) {
		return out, fmt.Errorf("ralphd at %d issues exited %d:\n%s%s", n, m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
	}
	if mm := iterationsRE.FindStringSubmatch(m.Stdout); mm != nil {
		out.Iterations, _ = strconv.Atoi(mm[1])
	}
	if out.Iterations != trackerIters {
		return out, fmt.Errorf("ralphd at %d issues: %d iterations, want %d:\n%s", n, out.Iterations, trackerIters, m.Stdout)
	}
	calls, err := bench.ReadCalls(log)
	if err != nil {
		return out, err
	}
	for _, c := range calls {
		if c.Prog != "bd" || c.Origin() != "ralphd" {
			continue
		}
		d := time.Duration(c.Nanos)
		out.BDTime += d
		out.BDCalls++
		out.ByCall[callName(c.Argv)] += d
	}
	return out, nil
}

// capReached says whether a ralphd run stopped at its iteration cap with
// work left (exit 3), as a run over part of a big tracker does.
func capReached(m measured) bool {
	return m.Exit == 3 && strings.Contains(m.Stdout, "reached the cap of")
}

// callName is a bd call's subcommand and the flags that change its cost,
// for section 8's breakdown ("list --all", "list --all --updated-after").
func callName(argv []string) string {
	var words []string
	for i, a := range argv {
		switch {
		case i == 0, a == "--all", a == "--claim":
			words = append(words, a)
		case strings.HasPrefix(a, "--updated-after"):
			words = append(words, "--updated-after")
		}
	}
	return strings.Join(words, " ")
}

// breakdown formats a run's bd time by call, largest first.
func (r trackerRun) breakdown() string {
	names := make([]string, 0, len(r.ByCall))
	for k := range r.ByCall {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return r.ByCall[names[i]] > r.ByCall[names[j]] })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("`bd %s` %s", k, fmtDur(r.ByCall[k]/time.Duration(max(r.Iterations, 1))))
	}
	return strings.Join(parts, ", ")
}

// trackerSection is section 8 of the report.
func trackerSection(r *trackerResult, cmd string) bench.Section {
	med := bench.MedianDuration
	bdRatio := bench.Ratio(float64(r.Large.perIter()), float64(r.Small.perIter()))
	wallRatio := bench.Ratio(float64(med(r.RalphdWalls)), float64(med(r.Loops)))
	smallRatio := bench.Ratio(float64(med(r.RalphdSmall)), float64(med(r.LoopSm)))
	it := time.Duration(trackerIters)
	s := bench.Section{Title: "8. Tracker size: 5,000 issues against 50"}
	s.Figures = []bench.Figure{
		{ID: "8a", Name: fmt.Sprintf("ralphd's own bd time per iteration at %d issues ÷ at %d (same run, %s)", trackerLarge, trackerSmall, r.BD),
			Value: fmt.Sprintf("%.2f (%s ÷ %s)", bdRatio, fmtDur(r.Large.perIter()), fmtDur(r.Small.perIter())),
			Goal:  "≤ 1.5", Verdict: bench.Judge(bdRatio <= 1.5), Command: cmd},
		{ID: "8b", Name: fmt.Sprintf("wall per iteration at %d issues, ralphd ÷ the bash loop (bench/loop.sh; same run, %s)", trackerLarge, r.BD),
			Value: fmt.Sprintf("%.2f (%s ÷ %s)", wallRatio, fmtDur(med(r.RalphdWalls)/it), fmtDur(med(r.Loops)/it)),
			Goal:  "≤ 0.4", Verdict: bench.Judge(wallRatio <= 0.4), Command: cmd},
		{ID: "8c", Name: fmt.Sprintf("the same at %d issues, for comparison (%s)", trackerSmall, r.BD),
			Value:   fmt.Sprintf("%.2f (%s ÷ %s)", smallRatio, fmtDur(med(r.RalphdSmall)/it), fmtDur(med(r.LoopSm)/it)),
			Command: cmd},
	}
	s.Body = fmt.Sprintf(`**Method.** Two trackers generated with `+"`standin.Seed`"+`: %d issues, all
open, with the same epics and chains; and %d issues (%d closed, %d epics with 5 to 20 children each,
%d dependency links, %d comments on about a fifth of the issues, %d open issues in chains of three, so about a
third of them ready). ralphd runs %d BUILD iterations on each with the trivial agent (`+"`bd close`"+`) and bdrec
timing each bd call it makes (`+"`BENCH_TIME_CALLS`"+`: bdrec runs bd as its child and records how long it took);
8a is the sum of ralphd's own calls (not the agent's) per iteration. 8b and 8c time `+"`ralphd build %d`"+` and `+"`bash bench/loop.sh %d`"+`
on fresh copies, interleaved, %d runs each, medians.

%s ralphd's bd time per iteration by call: at %d issues %s; at %d issues %s.
`, trackerSmall, r.Seeded.Issues, r.Seeded.Closed, r.Seeded.Epics, r.Seeded.Deps, r.Seeded.Comments, trackerOpen,
		trackerIters, trackerIters, trackerIters, r.Runs, bdUsed(r.BD, r.MovedSmall, r.MovedLarge), trackerSmall, r.Small.breakdown(), trackerLarge, r.Large.breakdown())
	return s
}

// bdUsed says, for a method text, which bd the figures used and, for a
// real bd, how each tracker got into it.
func bdUsed(label string, mv ...*moved) string {
	if len(mv) == 0 || mv[0] == nil {
		return "Every figure here used the stand-in bd (`internal/testkit/fakebd`), which reads and parses its whole store on\n" +
			"every call, so even a call that prints one issue costs time that grows with the tracker, and in embedded mode\n" +
			"each call holds the store's lock while it does; real bd 1.0.5 reads Dolt tables (`-real-bd PATH` measures one)."
	}
	s := fmt.Sprintf("Every figure here used %s (`%s`) in embedded mode, on trackers", label, mv[0].Version)
	for _, m := range mv {
		if m != nil {
			s += fmt.Sprintf(" of %d issues %s;", m.Seeded.Issues, m.describe())
		}
	}
	return strings.TrimSuffix(s, ";") + ". Real trackers are compacted by `bd gc` and `bd flatten` in practice; an import leaves\n" +
		"its whole history in the Dolt journal, whose bootstrap every later call pays, so the figures are of flattened trackers."
}

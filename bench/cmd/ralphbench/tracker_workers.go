package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/testkit/standin"
)

// Section 9 is 6e on a big tracker: `ralphd build 40 --workers K` on a
// generated 5,000-issue tracker (section 8's), with the 2 s agent, K = 8
// against K = 1 in the same run, with the stand-in bd.

// bigWorkersIters is the iterations (issues worked) of each run.
const bigWorkersIters = 40

// bigAgent is 6e's agent closing with --force: the ready issues of the
// generated tracker include epics with open children, which real bd
// 1.0.5 refuses to close without it ("cannot close epic …: 6 open child
// issue(s)"; the stand-in does not check), so the agent would fail there
// three times and the issue end STUCK.
var bigAgent = strings.Replace(scaleAgent, `bd close "$RALPH_ISSUE_ID"`, `bd close --force "$RALPH_ISSUE_ID"`, 1)

// bigWorkersResult is what section 9 measured.
type bigWorkersResult struct {
	Seeded standin.Seeded
	One    time.Duration // wall, one worker
	Eight  time.Duration // wall, eight workers
	BD     string        // the bd every figure used
	Moved  *moved        // how the tracker got into a real bd; nil: the stand-in
}

// measureBigWorkers runs section 9.
func measureBigWorkers(ctx context.Context, e *benchEnv, say func(string, ...any)) (*bigWorkersResult, error) {
	r := &bigWorkersResult{BD: e.bdLabel()}
	tpl := filepath.Join(e.work, "tpl-bigworkers")
	say("bigworkers: generating a %d-issue tracker (%s)", trackerLarge, r.BD)
	var err error
	if r.Seeded, r.Moved, err = e.generateTracker(ctx, tpl, trackerLarge, trackerOpen, say); err != nil {
		return nil, err
	}
	for _, k := range []int{1, 8} {
		say("bigworkers: ralphd build %d --workers %d on %d issues, a 2 s agent", bigWorkersIters, k, trackerLarge)
		dir := filepath.Join(e.work, "bigworkers-"+strconv.Itoa(k))
		if err := copyTree(ctx, tpl, dir); err != nil {
			return nil, err
		}
		env := e.env("RALPH_STATE_DIR="+filepath.Join(e.work, "state-bigworkers-"+strconv.Itoa(k)), "RALPH_SANDBOX=off")
		cmd := command(ctx, env, dir, e.ralphd(), "build", strconv.Itoa(bigWorkersIters), "--workers", strconv.Itoa(k), "--bd", e.bd(), "--agent-cmd", bigAgent)
		m, err := measure(cmd, measureOptions{Capture: true})
		if err != nil {
			return nil, err
		}
		if m.Exit != 0 && !capReached(m) {
			return nil, fmt.Errorf("ralphd build --workers %d on %d issues exited %d:\n%s%s", k, trackerLarge, m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
		}
		n := 0
		if mm := iterationsRE.FindStringSubmatch(m.Stdout); mm != nil {
			n, _ = strconv.Atoi(mm[1])
		}
		if n != bigWorkersIters {
			return nil, fmt.Errorf("ralphd build --workers %d on %d issues: %d iterations, want %d:\n%s", k, trackerLarge, n, bigWorkersIters, m.Stdout)
		}
		if k == 1 {
			r.One = m.Wall
		} else {
			r.Eight = m.Wall
		}
	}
	return r, nil
}

// bigWorkersSection is section 9 of the report.
func bigWorkersSection(r *bigWorkersResult, cmd string) bench.Section {
	ratio := bench.Ratio(r.Eight.Seconds(), r.One.Seconds())
	s := bench.Section{Title: "10. Workers on a 5,000-issue tracker"}
	s.Figures = []bench.Figure{{
		ID:      "10a",
		Name:    fmt.Sprintf("wall with 8 workers ÷ with 1, %d issues worked on a %d-issue tracker, a 2 s agent (same run, %s)", bigWorkersIters, trackerLarge, r.BD),
		Value:   fmt.Sprintf("%.3f (%s ÷ %s)", ratio, fmtDur(r.Eight), fmtDur(r.One)),
		Goal:    "≤ 0.18",
		Verdict: bench.Judge(ratio <= 0.18),
		Command: cmd,
	}}
	s.Body = fmt.Sprintf(`**Method.** Section 8's large tracker (`+"`standin.Seed`"+`: %d issues, %d closed, %d epics,
%d dependency links, %d comments, %d open in chains of three). On fresh copies of it, `+"`ralphd build %d --workers K`"+`
with 6e's agent (`+"`sleep 2`"+`, commit, `+"`bd close --force`"+`: real bd 1.0.5 refuses to close an epic with open
children without it, and ready epics are among the issues worked), K = 1 and then K = 8, no sandbox; each run stops at its cap of
%d iterations with ready work left (exit 3). 16 workers in two clones sharing a tracker in server mode are section 11.

%s
`, r.Seeded.Issues, r.Seeded.Closed, r.Seeded.Epics, r.Seeded.Deps, r.Seeded.Comments, trackerOpen,
		bigWorkersIters, bigWorkersIters, bdUsed(r.BD, r.Moved))
	return s
}

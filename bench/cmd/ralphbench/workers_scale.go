package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/bench"
)

// Figures 6e and 6f measure `ralphd build --workers K` itself: the wall
// time of 40 independent issues with an agent that takes 2 s, with 8
// workers and with 1, in the same run; and the bd calls ralphd makes per
// iteration (the agents' own calls, through the guard, not counted).

const (
	scaleIssues = 40
	scaleAgent  = `sleep 2; echo "$RALPH_ISSUE_ID" > "$RALPH_ISSUE_ID.txt"; git add -A && git commit -q -m "$RALPH_ISSUE_ID" && bd close "$RALPH_ISSUE_ID" --reason "tests pass (exit 0)"`
)

// scaleRun is one `ralphd build --workers K` run.
type scaleRun struct {
	K          int
	Wall       time.Duration
	Iterations int
	RalphdBD   int // bd calls ralphd made itself
	// Kinds splits RalphdBD by what the call was for: "claim" (ready
	// --claim, update --claim), "reading" (list: the tracker read for a
	// read-back, a judgement or a baseline), "ready" and "other".
	Kinds map[string]int
}

// callKind is what one of ralphd's bd calls was for, for 6f's breakdown.
func callKind(argv []string) string {
	var sub string
	claim := false
	for _, a := range argv {
		switch {
		case a == "--claim":
			claim = true
		case sub == "" && !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "ralphd/"):
			sub = a
		}
	}
	switch {
	case claim:
		return "claim"
	case sub == "list":
		return "reading"
	case sub == "ready":
		return "ready"
	}
	return "other"
}

// kinds formats a run's breakdown.
func (r scaleRun) kinds() string {
	return fmt.Sprintf("%d claims, %d tracker readings, %d `ready`, %d other", r.Kinds["claim"], r.Kinds["reading"], r.Kinds["ready"], r.Kinds["other"])
}

// measureWorkerScale runs the K=1 and K=8 builds on copies of one project,
// recording ralphd's bd calls with bdrec (its git calls run unrecorded).
func measureWorkerScale(ctx context.Context, e *benchEnv, say func(string, ...any)) ([]scaleRun, error) {
	tpl := filepath.Join(e.work, "tpl-workers-scale")
	say("workers: a %d-issue project for the scaling run", scaleIssues)
	if err := e.makeProject(ctx, tpl, scaleIssues); err != nil {
		return nil, err
	}
	var out []scaleRun
	for _, k := range []int{1, 8} {
		say("workers: ralphd build --workers %d over %d issues, a 2 s agent", k, scaleIssues)
		dir := filepath.Join(e.work, "workers-scale-"+strconv.Itoa(k))
		if err := copyTree(ctx, tpl, dir); err != nil {
			return nil, err
		}
		callLog := filepath.Join(e.work, fmt.Sprintf("calls-workers-%d.jsonl", k))
		// bd is recorded (--bd names bdrec), git is not: bdrec on PATH as
		// git would add a process to each of ralphd's git calls, and the
		// workers make several times as many per iteration as one loop
		// does, so the recorder would weigh on K = 8 more than on K = 1.
		// No figure here counts git calls (1d does, in the single loop).
		env := e.recordEnv(callLog, "RALPH_STATE_DIR="+filepath.Join(e.work, "state-workers-"+strconv.Itoa(k)), "RALPH_SANDBOX=off")
		cmd := command(ctx, env, dir, e.ralphd(), "build", "0", "--workers", strconv.Itoa(k), "--bd", filepath.Join(e.recBin, "bd"), "--agent-cmd", scaleAgent)
		m, err := measure(cmd, measureOptions{Capture: true})
		if err != nil {
			return nil, err
		}
		if m.Exit != 0 {
			return nil, fmt.Errorf("ralphd build --workers %d exited %d:\n%s%s", k, m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
		}
		r := scaleRun{K: k, Wall: m.Wall, Kinds: map[string]int{}}
		if mm := iterationsRE.FindStringSubmatch(m.Stdout); mm != nil {
			r.Iterations, _ = strconv.Atoi(mm[1])
		}
		if r.Iterations != scaleIssues {
			return nil, fmt.Errorf("ralphd build --workers %d: %d iterations, want %d:\n%s", k, r.Iterations, scaleIssues, m.Stdout)
		}
		calls, err := bench.ReadCalls(callLog)
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			if c.Prog == "bd" && c.Origin() == "ralphd" {
				r.RalphdBD++
				r.Kinds[callKind(c.Argv)]++
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// scaleFigures are 6e and 6f, from the K=1 and K=8 runs.
func scaleFigures(runs []scaleRun) []bench.Figure {
	if len(runs) != 2 {
		return nil
	}
	one, eight := runs[0], runs[1]
	cmd := "ralphbench -only workers   # ralphd build 0 --workers K over 40 issues, agent: sleep 2, commit, bd close; K = 1, then 8"
	per := func(r scaleRun) float64 { return bench.Ratio(float64(r.RalphdBD), float64(r.Iterations)) }
	ratio := bench.Ratio(eight.Wall.Seconds(), one.Wall.Seconds())
	return []bench.Figure{
		{
			ID:      "6e",
			Name:    "wall time with 8 workers ÷ with 1, 40 independent issues, a 2 s agent (same run)",
			Value:   fmt.Sprintf("%.3f (%s ÷ %s)", ratio, fmtDur(eight.Wall), fmtDur(one.Wall)),
			Goal:    "≤ 0.18",
			Verdict: bench.Judge(ratio <= 0.18),
			Command: cmd,
		},
		{
			ID:   "6f",
			Name: "bd calls per iteration by ralphd itself, K = 1 and K = 8",
			Value: fmt.Sprintf("K=1: %.2f (%d ÷ %d); K=8: %.2f (%d ÷ %d)", per(one), one.RalphdBD, one.Iterations,
				per(eight), eight.RalphdBD, eight.Iterations),
			Goal:    "≤ 1.5",
			Verdict: bench.Judge(per(one) <= 1.5 && per(eight) <= 1.5),
			Command: cmd,
		},
	}
}

// scaleBody explains 6f from the runs' breakdowns.
func scaleBody(runs []scaleRun) string {
	if len(runs) != 2 {
		return ""
	}
	one, eight := runs[0], runs[1]
	return fmt.Sprintf(`6f's calls by what they were for: K = 1: %s; K = 8: %s.

With one worker an iteration costs one tracker reading (the judgement's; the next iteration reuses it as its
baseline, and reuses the last `+"`bd ready`"+` answer while nothing that could make other work ready changed). With
workers each iteration needs its own claim (1 call, as the worker's actor) and a reading that starts after it
(the claim's read-back), and its judgement needs a reading that starts after its agent ended. A worker claims
its next issue as soon as its agent ends, beside its judgement, so one reading serves both; it hands finished
work to the merge queue and goes on, so the queue, which integrates in a worktree of its own, no longer spreads
the workers apart. Every worktree is made before the first claim, so the workers start together. A reading
waits for the claims and ended agents about to ask, and 300 ms for agents still running: in step, the eight
agents end, are judged and start again together, and one reading serves a whole round.
`, one.kinds(), eight.kinds())
}

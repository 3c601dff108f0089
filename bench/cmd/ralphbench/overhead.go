package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/guard"
)

// overhead is what sections 1 (per-iteration overhead) and 2 (against the
// bash loop) measured.
type overhead struct {
	Issues     int
	Iterations int
	Runs       int

	// From the recorded run.
	RalphdBD  []bench.Call // ralphd's own bd calls
	AgentBD   []bench.Call // the agent's bd calls, through the guard
	RalphdGit []bench.Call // ralphd's own git calls

	// Timed runs, one entry per run.
	Walls, LoopWalls, LeanWalls []time.Duration

	// Replays, one entry per replay: the sums of each kind of call.
	ReplayBD, ReplayAgent, ReplayGit, ReplayGuarded []time.Duration
	// Every replayed `bd ready` and `bd list` call, for the scale section.
	ReadyCalls, ListCalls []time.Duration

	// Recorded bash loop runs.
	LoopBD, LeanBD             int // the loop's own bd calls
	LoopIterations, LeanIterat int

	Profile profile
}

func (o *overhead) perIter(d time.Duration) time.Duration {
	return d / time.Duration(max(o.Iterations, 1))
}

var iterationsRE = regexp.MustCompile(`iterations: (\d+)`)

// ralphdArgs is the ralphd command of the timed runs.
func (e *benchEnv) ralphdArgs(n int, bd string) []string {
	return []string{"build", strconv.Itoa(n), "--bd", bd, "--agent-cmd", agentCmd}
}

// measureOverhead runs sections 1 and 2.
func measureOverhead(ctx context.Context, e *benchEnv, issues, runs int, doProfile bool, say func(string, ...any)) (*overhead, error) {
	o := &overhead{Issues: issues, Runs: runs}
	tpl := filepath.Join(e.work, "tpl-overhead")
	say("creating a %d-issue project", issues)
	if err := e.makeProject(ctx, tpl, issues); err != nil {
		return nil, err
	}

	// 1. Record every bd and git call ralphd makes.
	say("recording ralphd's bd and git calls")
	recDir := filepath.Join(e.work, "rec-ralphd")
	if err := copyTree(ctx, tpl, recDir); err != nil {
		return nil, err
	}
	callLog := filepath.Join(e.work, "calls-ralphd.jsonl")
	cmd := command(ctx, e.recordEnv(callLog, e.pathWith(e.recBin)), recDir, e.ralphd(), e.ralphdArgs(issues, filepath.Join(e.recBin, "bd"))...)
	m, err := measure(cmd, measureOptions{Capture: true})
	if err != nil {
		return nil, err
	}
	if m.Exit != 0 {
		return nil, fmt.Errorf("recorded ralphd run exited %d:\n%s%s", m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
	}
	if mm := iterationsRE.FindStringSubmatch(m.Stdout); mm != nil {
		o.Iterations, _ = strconv.Atoi(mm[1])
	}
	if o.Iterations != issues {
		return nil, fmt.Errorf("recorded ralphd run: %d iterations, want %d:\n%s", o.Iterations, issues, m.Stdout)
	}
	calls, err := bench.ReadCalls(callLog)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		switch {
		case c.Prog == "bd" && c.Origin() == "agent":
			o.AgentBD = append(o.AgentBD, c)
		case c.Prog == "bd" && c.Origin() == "ralphd":
			o.RalphdBD = append(o.RalphdBD, c)
		case c.Prog == "git" && c.Origin() == "ralphd":
			o.RalphdGit = append(o.RalphdGit, c)
		}
	}

	// 2. Time ralphd and the two bash loops, interleaved.
	for r := range runs {
		order := []string{"ralphd", "loop", "lean"}
		for range r % len(order) {
			order = append(order[1:], order[0])
		}
		for _, what := range order {
			say("timed run %d/%d: %s", r+1, runs, what)
			d, err := e.timedBuild(ctx, tpl, what, issues, fmt.Sprintf("%s-%d", what, r))
			if err != nil {
				return nil, err
			}
			switch what {
			case "ralphd":
				o.Walls = append(o.Walls, d)
			case "loop":
				o.LoopWalls = append(o.LoopWalls, d)
			default:
				o.LeanWalls = append(o.LeanWalls, d)
			}
		}
	}

	// 3. Replay every recorded call alone, in order, on fresh copies.
	for r := range runs {
		say("replay %d/%d of the recorded calls", r+1, runs)
		if err := e.replay(ctx, o, tpl, recDir, calls, r); err != nil {
			return nil, err
		}
	}

	// 4. Count the bash loops' bd calls.
	for _, lean := range []bool{false, true} {
		say("recording the bash loop's bd calls (lean=%v)", lean)
		bdCalls, iters, err := e.recordLoop(ctx, tpl, issues, lean)
		if err != nil {
			return nil, err
		}
		if lean {
			o.LeanBD, o.LeanIterat = bdCalls, iters
		} else {
			o.LoopBD, o.LoopIterations = bdCalls, iters
		}
	}

	if doProfile {
		say("profiling one ralphd run with perf")
		o.Profile = e.profileBuild(ctx, tpl, issues)
	} else {
		o.Profile = profile{Skipped: "profiling was turned off (-profile=false)"}
	}
	return o, nil
}

// timedBuild runs ralphd ("ralphd"), the bash loop ("loop") or the lean
// bash loop ("lean") over a fresh copy of tpl and returns its wall time.
func (e *benchEnv) timedBuild(ctx context.Context, tpl, what string, issues int, name string) (time.Duration, error) {
	dir := filepath.Join(e.work, name)
	if err := copyTree(ctx, tpl, dir); err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var cmd = command(ctx, e.env(), dir, e.ralphd(), e.ralphdArgs(issues, e.bd())...)
	if what != "ralphd" {
		env := e.env("ATTEMPT_FILE="+filepath.Join(e.work, name+"-attempts.txt"), "LOOP_LEAN="+map[bool]string{true: "1", false: "0"}[what == "lean"])
		cmd = command(ctx, env, dir, "bash", e.loopSh(), strconv.Itoa(issues), agentCmd)
	}
	m, err := measure(cmd, measureOptions{Capture: true})
	if err != nil {
		return 0, err
	}
	if m.Exit != 0 && !(what == "ralphd" && capReached(m)) {
		return 0, fmt.Errorf("%s run exited %d:\n%s%s", what, m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
	}
	want := fmt.Sprintf("iterations: %d", issues)
	if what != "ralphd" {
		want = fmt.Sprintf("Loop finished after %d iterations", issues)
	}
	if !strings.Contains(m.Stdout, want) {
		return 0, fmt.Errorf("%s run did not report %q:\n%s", what, want, tail(m.Stdout, 2000))
	}
	return m.Wall, nil
}

// replay runs every recorded call again, each alone and timed, on a fresh
// copy of tpl, in the recorded order so that each sees the tracker state
// it saw under ralphd. ralphd's bd and git calls run as recorded; each
// agent run (consecutive guarded calls for one issue) runs as the agent
// command itself, once without ralphd's guard on a first copy and once
// with it on a second copy.
func (e *benchEnv) replay(ctx context.Context, o *overhead, tpl, recDir string, calls []bench.Call, r int) error {
	plain := filepath.Join(e.work, fmt.Sprintf("replay-%d", r))
	guarded := filepath.Join(e.work, fmt.Sprintf("replay-guarded-%d", r))
	for _, d := range []string{plain, guarded} {
		if err := copyTree(ctx, tpl, d); err != nil {
			return err
		}
		defer os.RemoveAll(d)
	}
	// The same bd and environment ralphd gives the agent: the broker's
	// client, with this process holding the broker as ralphd does.
	guardDir := filepath.Join(e.work, fmt.Sprintf("guard-%d", r))
	if err := os.MkdirAll(guardDir, 0o700); err != nil {
		return fmt.Errorf("make guard dir: %w", err)
	}
	defer os.RemoveAll(guardDir)
	g, err := guard.Serve(ctx, guardDir, guard.Setup{Self: e.ralphd(), Mode: guard.ModeBuild, RealBD: e.bd(), RunID: "bench", Iteration: 1, Env: e.env()})
	if err != nil {
		return err
	}
	defer g.Close()
	g.SetLeader(os.Getpid()) // the agent runs are this process's children
	guardEnv := append([]string{e.pathWith(g.BinDir())}, g.Env()...)
	mapDir := func(s, to string) string {
		if s == recDir || strings.HasPrefix(s, recDir+"/") {
			return to + strings.TrimPrefix(s, recDir)
		}
		return s
	}
	timeIn := func(dir string, env []string, name string, args ...string) (time.Duration, error) {
		mapped := make([]string, len(args))
		for i, a := range args {
			mapped[i] = mapDir(a, dir)
		}
		cmd := command(ctx, env, dir, name, mapped...)
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil && cmd.ProcessState == nil {
			return d, fmt.Errorf("replay %s %s: %w", name, strings.Join(args, " "), err)
		}
		return d, nil
	}
	var sumBD, sumAgent, sumGit, sumGuarded time.Duration
	lastIssue := ""
	for i, c := range calls {
		switch {
		case c.Prog == "bd" && c.Origin() == "ralphd":
			lastIssue = ""
			d, err := timeIn(mapDir(c.Dir, plain), e.env(), e.bd(), c.Argv...)
			if err != nil {
				return err
			}
			sumBD += d
			if len(c.Argv) > 0 && c.Argv[0] == "ready" {
				o.ReadyCalls = append(o.ReadyCalls, d)
			}
			if len(c.Argv) > 0 && c.Argv[0] == "list" {
				o.ListCalls = append(o.ListCalls, d)
			}
		case c.Prog == "bd" && c.Origin() == "agent":
			// One agent run per run of consecutive calls for one issue.
			if c.Issue == lastIssue && i > 0 {
				continue
			}
			lastIssue = c.Issue
			agentEnv := []string{"RALPH_ISSUE_ID=" + c.Issue, "RALPH_MODE=build", "RALPH_ATTEMPT=1"}
			d, err := timeIn(mapDir(c.Dir, plain), e.env(agentEnv...), "sh", "-c", agentCmd)
			if err != nil {
				return err
			}
			sumAgent += d
			d, err = timeIn(mapDir(c.Dir, guarded), e.env(append(agentEnv, guardEnv...)...), "sh", "-c", agentCmd)
			if err != nil {
				return err
			}
			sumGuarded += d
		case c.Prog == "git" && c.Origin() == "ralphd":
			lastIssue = ""
			d, err := timeIn(mapDir(c.Dir, plain), e.env(), e.git, c.Argv...)
			if err != nil {
				return err
			}
			sumGit += d
		}
	}
	o.ReplayBD = append(o.ReplayBD, sumBD)
	o.ReplayAgent = append(o.ReplayAgent, sumAgent)
	o.ReplayGit = append(o.ReplayGit, sumGit)
	o.ReplayGuarded = append(o.ReplayGuarded, sumGuarded)
	return nil
}

// recordLoop runs the bash loop over a copy of tpl with bdrec first on
// PATH and returns the loop's own bd calls and its iterations.
func (e *benchEnv) recordLoop(ctx context.Context, tpl string, issues int, lean bool) (int, int, error) {
	name := "rec-loop"
	if lean {
		name = "rec-lean"
	}
	dir := filepath.Join(e.work, name)
	if err := copyTree(ctx, tpl, dir); err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	log := filepath.Join(e.work, "calls-"+name+".jsonl")
	env := e.recordEnv(log, e.pathWith(e.recBin), "ATTEMPT_FILE="+filepath.Join(e.work, name+"-attempts.txt"),
		"LOOP_LEAN="+map[bool]string{true: "1", false: "0"}[lean])
	out, err := run(ctx, env, dir, "bash", e.loopSh(), strconv.Itoa(issues), agentCmd)
	if err != nil {
		return 0, 0, err
	}
	iters := 0
	if mm := regexp.MustCompile(`Loop finished after (\d+) iterations`).FindStringSubmatch(out); mm != nil {
		iters, _ = strconv.Atoi(mm[1])
	}
	calls, err := bench.ReadCalls(log)
	if err != nil {
		return 0, 0, err
	}
	own := bench.Filter(calls, func(c bench.Call) bool { return c.Prog == "bd" && c.Origin() != "agent" })
	return len(own), iters, nil
}

// argvCounts counts calls by their first two words ("ready --limit"),
// most frequent first, formatted as "51 × ready --limit 0 --json".
func argvCounts(calls []bench.Call) []string {
	counts := map[string]int{}
	for _, c := range calls {
		counts[strings.Join(c.Argv, " ")]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%d × `%s %s`", counts[k], calls[0].Prog, k)
	}
	return out
}

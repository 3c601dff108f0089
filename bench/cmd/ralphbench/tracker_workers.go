package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/testkit/standin"
)

// Section 9 is 6e on a big tracker: `ralphd build 40 --workers K` on a
// generated 5,000-issue tracker (section 8's), with the 2 s agent, K = 8
// against K = 1 in the same run, with the stand-in bd.

// bigWorkersIters is the iterations (issues worked) of each run.
const bigWorkersIters = 40

// bigWorkersPair is one worker's and eight workers' runs on the same
// set-up: their walls, and the issues each closed (the agent closes with
// a plain `bd close`, which the guard allows, and real bd 1.0.5 refuses it
// for a ready epic with open children, so some iterations fail there as
// an honest agent's would).
type bigWorkersPair struct {
	One, Eight             time.Duration
	ClosedOne, ClosedEight int
}

// closedRE finds how many issues a run closed in ralphd's summary.
var closedRE = regexp.MustCompile(`closed: (\d+) of \d+ tried`)

// bigWorkersResult is what section 9 measured.
type bigWorkersResult struct {
	Seeded   standin.Seeded
	Embedded bigWorkersPair // the tracker as bd keeps it by default
	// Server is the same two runs with the tracker served by a Dolt
	// sql-server (--real-bd with --dolt), ServerLabel its bd and server;
	// nil: not measured.
	Server      *bigWorkersPair
	ServerLabel string
	BD          string // the bd every figure used
	Moved       *moved // how the tracker got into a real bd; nil: the stand-in
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
	if r.Embedded, _, err = bigWorkersRuns(ctx, e, tpl, false, say); err != nil {
		return nil, err
	}
	if e.real == nil || e.real.Dolt == "" {
		return r, nil
	}
	server, label, err := bigWorkersRuns(ctx, e, tpl, true, say)
	if err != nil {
		return nil, err
	}
	r.Server, r.ServerLabel = &server, label
	return r, nil
}

// bigWorkersRuns runs one worker, then eight, on fresh copies of tpl,
// with the tracker moved under a Dolt sql-server when serve is set; label
// names that server's bd.
func bigWorkersRuns(ctx context.Context, e *benchEnv, tpl string, serve bool, say func(string, ...any)) (p bigWorkersPair, label string, err error) {
	where := "a 2 s agent"
	if serve {
		where = "the tracker on a Dolt sql-server"
	}
	for _, k := range []int{1, 8} {
		say("bigworkers: ralphd build %d --workers %d on %d issues, %s", bigWorkersIters, k, trackerLarge, where)
		wall, closed, l, err := bigWorkersRun(ctx, e, tpl, k, serve)
		if err != nil {
			return p, "", err
		}
		label = l
		if k == 1 {
			p.One, p.ClosedOne = wall, closed
		} else {
			p.Eight, p.ClosedEight = wall, closed
		}
	}
	return p, label, nil
}

// bigWorkersRun runs `ralphd build 40 --workers k` on a fresh copy of
// tpl and returns its wall and the issues it closed. With serve set, the
// copy's database is first moved under a Dolt sql-server of its own and
// the tracker switched to server mode (serveTracker), whose bd label names
// it.
func bigWorkersRun(ctx context.Context, e *benchEnv, tpl string, k int, serve bool) (wall time.Duration, closed int, label string, err error) {
	name := "bigworkers-" + strconv.Itoa(k)
	if serve {
		name += "-server"
	}
	dir := filepath.Join(e.work, name)
	if err := copyTree(ctx, tpl, dir); err != nil {
		return 0, 0, "", err
	}
	env := e.env("RALPH_STATE_DIR="+filepath.Join(e.work, "state-"+name), "RALPH_SANDBOX=off")
	if serve {
		stop, l, err := serveTracker(ctx, e, dir, env)
		if err != nil {
			return 0, 0, "", err
		}
		defer stop()
		label = l
	}
	cmd := command(ctx, env, dir, e.ralphd(), "build", strconv.Itoa(bigWorkersIters), "--workers", strconv.Itoa(k), "--bd", e.bd(), "--agent-cmd", scaleAgent)
	m, err := measure(cmd, measureOptions{Capture: true})
	if err != nil {
		return 0, 0, "", err
	}
	if m.Exit != 0 && !capReached(m) {
		return 0, 0, "", fmt.Errorf("ralphd build --workers %d on %d issues exited %d:\n%s%s", k, trackerLarge, m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
	}
	n := 0
	if mm := iterationsRE.FindStringSubmatch(m.Stdout); mm != nil {
		n, _ = strconv.Atoi(mm[1])
	}
	if n != bigWorkersIters {
		return 0, 0, "", fmt.Errorf("ralphd build --workers %d on %d issues: %d iterations, want %d:\n%s", k, trackerLarge, n, bigWorkersIters, m.Stdout)
	}
	if mm := closedRE.FindStringSubmatch(m.Stdout); mm != nil {
		closed, _ = strconv.Atoi(mm[1])
	}
	if closed == 0 {
		return 0, 0, "", fmt.Errorf("ralphd build --workers %d on %d issues closed no issue: the agent failed every iteration:\n%s%s", k, trackerLarge, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
	}
	return m.Wall, closed, label, nil
}

// serveTracker moves the embedded database of the project at dir under a
// Dolt sql-server of its own (startDolt) and switches the project's bd to
// server mode against it (metadata.json, then serverClone). stop stops the
// server.
func serveTracker(ctx context.Context, e *benchEnv, dir string, env []string) (stop func() error, label string, err error) {
	home := dir + "-dolt"
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, "", err
	}
	if err := os.Rename(filepath.Join(dir, ".beads", "embeddeddolt"), filepath.Join(home, "data")); err != nil {
		return nil, "", fmt.Errorf("move the database under the server: %w", err)
	}
	srv, err := startDolt(ctx, e, home)
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if err != nil {
			srv.stop()
		}
	}()
	meta := filepath.Join(dir, ".beads", "metadata.json")
	b, err := os.ReadFile(meta)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", meta, err)
	}
	port, _ := strconv.Atoi(srv.port)
	m["dolt_mode"], m["dolt_server_host"], m["dolt_server_port"], m["dolt_server_user"] = "server", "127.0.0.1", port, "root"
	if b, err = json.MarshalIndent(m, "", "  "); err == nil {
		err = os.WriteFile(meta, b, 0o644)
	}
	if err == nil {
		err = serverClone(ctx, e, env, dir)
	}
	if err != nil {
		return nil, "", fmt.Errorf("switch the tracker to server mode: %w", err)
	}
	return srv.stop, srv.label, nil
}

// figure is the pair's ratio, eight workers' wall ÷ one worker's, as
// figure id.
func (p bigWorkersPair) figure(id, name, cmd string) bench.Figure {
	ratio := bench.Ratio(p.Eight.Seconds(), p.One.Seconds())
	return bench.Figure{
		ID:      id,
		Name:    name,
		Value:   fmt.Sprintf("%.3f (%s ÷ %s; %d and %d of %d iterations closed their issue)", ratio, fmtDur(p.Eight), fmtDur(p.One), p.ClosedEight, p.ClosedOne, bigWorkersIters),
		Goal:    "≤ 0.18",
		Verdict: bench.Judge(ratio <= 0.18),
		Command: cmd,
	}
}

// bigWorkersSection is section 9 of the report.
func bigWorkersSection(r *bigWorkersResult, cmd string) bench.Section {
	s := bench.Section{Title: "10. Workers on a 5,000-issue tracker"}
	s.Figures = []bench.Figure{r.Embedded.figure("10a", fmt.Sprintf("wall with 8 workers ÷ with 1, %d issues worked on a %d-issue tracker, a 2 s agent (same run, %s)", bigWorkersIters, trackerLarge, r.BD), cmd)}
	if r.Server != nil {
		s.Figures = append(s.Figures, r.Server.figure("10b", fmt.Sprintf("the same with the tracker moved under a Dolt sql-server (%s)", r.ServerLabel), cmd))
	}
	s.Body = fmt.Sprintf(`**Method.** Section 8's large tracker (`+"`standin.Seed`"+`: %d issues, %d closed, %d epics,
%d dependency links, %d comments, %d open in chains of three). On fresh copies of it, `+"`ralphd build %d --workers K`"+`
with 6e's agent (`+"`sleep 2`"+`, commit, `+"`bd close`"+`; the figure says how many iterations closed their issue:
ralphd passes over a ready epic whose children are open, which bd would refuse to close), K = 1 and then K = 8, no sandbox; each run stops at its cap of
%d iterations with ready work left (exit 3). 16 workers in two clones sharing a tracker in server mode are section 11.

%s
`, r.Seeded.Issues, r.Seeded.Closed, r.Seeded.Epics, r.Seeded.Deps, r.Seeded.Comments, trackerOpen,
		bigWorkersIters, bigWorkersIters, bdUsed(r.BD, r.Moved))
	return s
}

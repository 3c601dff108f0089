package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/text"
)

// Section 11 is the fleet: two clones of one project, a bare git remote
// and one tracker in server mode, each clone running `ralphd build 0
// --workers 8 --workers-remote origin` at the same time, 16 workers in
// all, against one clone with one worker on the same set-up in the same
// run. The tracker is real bd's server mode against a Dolt sql-server the
// bench starts on a free port (docs/workers.md, "Many machines") when
// -real-bd and -dolt are given, else the stand-in's server mode. Issues
// worked twice are counted from the agents' own records, as 6a counts
// them.

const (
	// fleetIssues is the independent issues each set-up works: three
	// rounds of 16.
	fleetIssues = 48
	// fleetPerClone is the workers of each of the two clones.
	fleetPerClone = 8
	// fleetStandinPort is the port the stand-in's server mode names (it
	// listens on none: its "server" is a directory).
	fleetStandinPort = "45031"
)

// fleetResult is what section 11 measured.
type fleetResult struct {
	BD string // the bd and tracker every figure used
	// Why says why a real bd was not used in server mode, when one was
	// given.
	Why     string
	Issues  int
	CPUs    int      // of the machine
	Sixteen fleetRun // two clones, 8 workers each
	One     fleetRun // one clone, one worker
}

// fleetRun is one set-up's run.
type fleetRun struct {
	Wall        time.Duration
	Iterations  int // summed over the clones
	Won         int // agent runs recorded
	WorkedTwice int // issues with two or more agent runs
	Overlapping int // issues two agents worked at the same time
	Issues      int // distinct issues worked
	// FirstStart is from the daemons' start to the first agent's start
	// line, LastEnd from the last agent's end line to the last daemon's
	// exit: set-up and wind-down, against the agents' rounds between.
	FirstStart, LastEnd time.Duration
	// CPU is the ralphd processes' CPU with every child they waited for
	// (agents, git, bd); ServerCPU the Dolt server's over the same run
	// (0 with the stand-in, which has no server process).
	CPU, ServerCPU time.Duration
}

// fleetAgent is scaleAgent with a record of each run: a start line before
// its 2 s and an end line after its `bd close`, in a file of its own under
// records (countRecords reads them).
func fleetAgent(records string) string {
	rec := text.ShellQuote(records) + `/w-"$RALPH_ISSUE_ID"-$$`
	return `r=` + rec + `; echo "start $RALPH_ISSUE_ID $(date +%s%N)" > "$r"; ` + scaleAgent +
		`; s=$?; echo "end $RALPH_ISSUE_ID $(date +%s%N)" >> "$r"; exit $s`
}

// fleetTracker is the shared tracker's server: what bd's environment and
// `bd init` need to reach it.
type fleetTracker struct {
	label string   // for the figures: "real bd 1.0.5, server mode (…)"
	env   []string // extra environment for bd and ralphd
	init  []string // bd init's server flags
	port  string   // the server's port; "" for the stand-in's
	stop  func() error
	// cpu is the server process's CPU so far; nil: no server process.
	cpu func() time.Duration
}

// measureFleet runs section 11.
func measureFleet(ctx context.Context, e *benchEnv, say func(string, ...any)) (*fleetResult, error) {
	r := &fleetResult{Issues: fleetIssues, CPUs: runtime.NumCPU()}
	root := filepath.Join(e.work, "fleet")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	var srv *fleetTracker
	var err error
	switch {
	case e.real != nil && e.real.Dolt != "":
		say("fleet: starting a Dolt sql-server for %s in server mode", e.real.Label())
		if srv, err = startDolt(ctx, e, filepath.Join(root, "dolt")); err != nil {
			return nil, err
		}
	case e.real != nil:
		r.Why = "no -dolt given, so " + e.real.Label() + "'s server mode had no server; this is the stand-in's"
		fallthrough
	default:
		std := *e
		std.real = nil
		e = &std
		if srv, err = standinServer(root); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err := srv.stop(); err != nil {
			say("fleet: stopping the tracker's server: %v", err)
		}
	}()
	r.BD = srv.label
	for _, s := range []struct {
		name    string
		prefix  string
		clones  int
		workers int
		out     *fleetRun
	}{{"sixteen", "fa", 2, fleetPerClone, &r.Sixteen}, {"one", "fb", 1, 1, &r.One}} {
		say("fleet: %d clone(s) × %d worker(s) over %d issues, a 2 s agent (%s)", s.clones, s.workers, fleetIssues, r.BD)
		if *s.out, err = runFleet(ctx, e, srv, filepath.Join(root, s.name), s.prefix, s.clones, s.workers); err != nil {
			return nil, fmt.Errorf("%d clone(s) × %d worker(s): %w", s.clones, s.workers, err)
		}
	}
	return r, nil
}

// standinServer is the stand-in's server mode: one store under root that
// every clone's bd reaches, racing claims failing as Dolt's do.
func standinServer(root string) (*fleetTracker, error) {
	servers := filepath.Join(root, "servers")
	if err := os.MkdirAll(filepath.Join(servers, "127.0.0.1_"+fleetStandinPort), 0o755); err != nil {
		return nil, err
	}
	return &fleetTracker{
		label: "stand-in bd, its server mode",
		env:   []string{"BD_STANDIN_SERVER_ROOT=" + servers, "BD_STANDIN_TXN_WINDOW=2ms"},
		init:  []string{"--server", "--server-host", "127.0.0.1", "--server-port", fleetStandinPort, "--external"},
		stop:  func() error { return nil },
	}, nil
}

// startDolt starts a Dolt sql-server on a free loopback port with its data
// under dir, as docs/workers.md's tracker host does (root without a
// password, loopback only), and waits until it takes connections.
func startDolt(ctx context.Context, e *benchEnv, dir string) (*fleetTracker, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	dolt := e.real.Dolt
	env := e.env()
	for _, kv := range [][2]string{{"user.name", "Bench"}, {"user.email", "bench@example.com"}} {
		if out, err := run(ctx, env, dir, dolt, "config", "--global", "--get", kv[0]); err == nil && strings.TrimSpace(out) != "" {
			continue
		}
		if _, err := run(ctx, env, dir, dolt, "config", "--global", "--add", kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("give Dolt an identity: %w", err)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	version, _ := run(ctx, env, dir, dolt, "version")
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	cmd := command(sctx, env, dir, dolt, "sql-server", "-H", "127.0.0.1", "-P", port, "--data-dir", data)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		cancel()
		log.Close()
		return nil, fmt.Errorf("start dolt sql-server: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() error {
		cancel()
		err := <-done
		log.Close()
		if err != nil && sctx.Err() == nil {
			return err
		}
		return nil
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-done:
			log.Close()
			cancel()
			b, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("dolt sql-server exited before it took connections (%v):\n%s", err, tail(string(b), 2000))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("dolt sql-server took no connection on %s within a minute (its log: %s)", addr, log.Name())
		}
	}
	return &fleetTracker{
		label: fmt.Sprintf("%s, server mode against %s sql-server", e.real.Label(), strings.TrimSpace(firstLine(version))),
		init:  []string{"--server", "--server-host", "127.0.0.1", "--server-port", port, "--external", "--skip-hooks", "--skip-agents"},
		port:  port,
		stop:  stop,
		cpu: func() time.Duration {
			t, _ := bench.ReadThreads(cmd.Process.Pid)
			return t.CPU
		},
	}, nil
}

// serverClone readies the real bd of a project whose tracker is on a
// server, as docs/workers.md has a person do in each clone: `chmod 700
// .beads` and beads.role (which silence bd's first-run warnings), then
// `bd ping` to check the connection. bd's first call in a clone also
// writes .beads/dolt-server.port, which ralphd would otherwise find made
// during its first iteration.
func serverClone(ctx context.Context, e *benchEnv, env []string, dir string) error {
	if err := os.Chmod(filepath.Join(dir, ".beads"), 0o700); err != nil {
		return err
	}
	if _, err := run(ctx, env, dir, "git", "config", "beads.role", "maintainer"); err != nil {
		return err
	}
	if _, err := run(ctx, env, dir, e.bd(), "ping"); err != nil {
		return fmt.Errorf("bd ping in %s: %w", filepath.Base(dir), err)
	}
	return nil
}

// freePort is a loopback TCP port nothing listens on just now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// runFleet sets up a seed project whose tracker (issue ids prefix-…) is on
// srv, with fleetIssues open issues, a bare remote and clones of it, and
// runs `ralphd build 0 --workers workers --workers-remote origin` in every
// clone at once, timing them from the first start to the last end.
func runFleet(ctx context.Context, e *benchEnv, srv *fleetTracker, root, prefix string, clones, workers int) (fleetRun, error) {
	var out fleetRun
	seed, remote, records := filepath.Join(root, "seed"), filepath.Join(root, "remote.git"), filepath.Join(root, "records")
	for _, d := range []string{seed, records} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return out, err
		}
	}
	env := e.env(srv.env...)
	init := append([]string{"init", "--prefix", prefix, "--quiet", "--non-interactive"}, srv.init...)
	steps := [][]string{
		{"git", "init", "-q", "-b", "main"},
		{"sh", "-c", "echo '# fleet project' > README.md"},
		append([]string{e.bd()}, init...),
		{"git", "add", "-A"},
		{"git", "commit", "-q", "--allow-empty", "-m", "base"},
	}
	for i := range fleetIssues {
		steps = append(steps, []string{e.bd(), "create", fmt.Sprintf("Fleet issue %d", i+1), "-p", "2", "-q"})
	}
	for _, s := range steps {
		if _, err := run(ctx, env, seed, s[0], s[1:]...); err != nil {
			return out, fmt.Errorf("set up the seed project: %w", err)
		}
	}
	if _, err := run(ctx, env, root, "git", "clone", "-q", "--bare", seed, remote); err != nil {
		return out, err
	}
	dirs := make([]string, clones)
	for i := range dirs {
		dirs[i] = filepath.Join(root, "clone-"+string(rune('a'+i)))
		if _, err := run(ctx, env, root, "git", "clone", "-q", remote, dirs[i]); err != nil {
			return out, err
		}
		if e.real != nil {
			if err := serverClone(ctx, e, env, dirs[i]); err != nil {
				return out, err
			}
		}
	}
	results := make([]measured, clones)
	errs := make([]error, clones)
	var wg sync.WaitGroup
	var serverCPU time.Duration
	if srv.cpu != nil {
		serverCPU = srv.cpu()
	}
	start := time.Now()
	for i, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cenv := e.env(append(srv.env[:len(srv.env):len(srv.env)], "RALPH_STATE_DIR="+filepath.Join(root, "state-"+filepath.Base(dir)), "RALPH_SANDBOX=off")...)
			cmd := command(ctx, cenv, dir, e.ralphd(), "build", "0", "--workers", strconv.Itoa(workers), "--workers-remote", "origin",
				"--bd", e.bd(), "--agent-cmd", fleetAgent(records))
			results[i], errs[i] = measure(cmd, measureOptions{Capture: true})
		}()
	}
	wg.Wait()
	end := time.Now()
	out.Wall = end.Sub(start)
	if srv.cpu != nil {
		out.ServerCPU = srv.cpu() - serverCPU
	}
	for i, m := range results {
		if errs[i] != nil {
			return out, errs[i]
		}
		out.CPU += m.TotalCPU
		if m.Exit != 0 {
			return out, fmt.Errorf("ralphd in %s exited %d:\n%s%s", filepath.Base(dirs[i]), m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
		}
		if mm := iterationsRE.FindStringSubmatch(m.Stdout); mm != nil {
			n, _ := strconv.Atoi(mm[1])
			out.Iterations += n
		}
	}
	var w workersResult
	if err := countRecords(records, &w); err != nil {
		return out, err
	}
	out.Won, out.WorkedTwice, out.Overlapping = w.Won, w.WorkedTwice, w.Overlapping
	span, err := readSpan(records)
	if err != nil {
		return out, err
	}
	out.Issues = span.issues
	out.FirstStart, out.LastEnd = span.first.Sub(start), end.Sub(span.last)
	if out.Issues != fleetIssues {
		return out, fmt.Errorf("the agents worked %d distinct issues, want all %d (%d iterations)", out.Issues, fleetIssues, out.Iterations)
	}
	return out, nil
}

// span is what the agents' records say together: the distinct issues
// they name, the first start line and the last end line.
type span struct {
	issues      int
	first, last time.Time
}

// readSpan reads the agents' records under dir.
func readSpan(dir string) (span, error) {
	var sp span
	files, err := filepath.Glob(filepath.Join(dir, "w-*"))
	if err != nil {
		return sp, err
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return sp, err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var kind, id string
			var at int64
			if _, err := fmt.Sscanf(line, "%s %s %d", &kind, &id, &at); err != nil {
				return sp, fmt.Errorf("%s: %q: %w", f, line, err)
			}
			seen[id] = true
			t := time.Unix(0, at)
			if kind == "start" && (sp.first.IsZero() || t.Before(sp.first)) {
				sp.first = t
			}
			if kind == "end" && t.After(sp.last) {
				sp.last = t
			}
		}
	}
	sp.issues = len(seen)
	return sp, nil
}

// fleetSection is section 11 of the report.
func fleetSection(r *fleetResult, cmd string) bench.Section {
	ratio := bench.Ratio(r.Sixteen.Wall.Seconds(), r.One.Wall.Seconds())
	s := bench.Section{Title: "11. 16 workers in two clones sharing a tracker in server mode"}
	s.Figures = []bench.Figure{
		{
			ID:      "11a",
			Name:    fmt.Sprintf("wall with 16 workers (two clones × 8) ÷ one clone with 1 worker, %d issues, a 2 s agent (same run, %s)", r.Issues, r.BD),
			Value:   fmt.Sprintf("%.3f (%s ÷ %s)", ratio, fmtDur(r.Sixteen.Wall), fmtDur(r.One.Wall)),
			Goal:    "≤ 0.1",
			Verdict: bench.Judge(ratio <= 0.1),
			Command: cmd,
		},
		{
			ID:   "11b",
			Name: "issues worked twice with 16 workers, from the agents' own records (at the same time in brackets)",
			Value: fmt.Sprintf("%d of %d (%d at once; %d agent runs, %d iterations)", r.Sixteen.WorkedTwice, r.Sixteen.Issues,
				r.Sixteen.Overlapping, r.Sixteen.Won, r.Sixteen.Iterations),
			Goal:    "0",
			Verdict: bench.Judge(r.Sixteen.WorkedTwice == 0 && r.Sixteen.Overlapping == 0),
			Command: cmd,
		},
	}
	why := ""
	if r.Why != "" {
		why = "\n\nA real bd was given, but " + r.Why + "."
	}
	s.Body = fmt.Sprintf(`**Method.** A seed project whose tracker is in server mode (`+"`bd init --server --external`"+`), %d open,
independent issues, a bare remote cloned from it and clones of the remote. 11a's numerator: two clones, each
running `+"`ralphd build 0 --workers 8 --workers-remote origin`"+` at the same time, timed from the first start to the
last exit; its denominator: one clone of a second project of the same set-up on the same server,
`+"`ralphd build 0 --workers 1 --workers-remote origin`"+`. The agent is 6e's (`+"`sleep 2`"+`, commit, `+"`bd close`"+`), recording a start
line before its sleep and an end line after its close, each run in a file of its own; 11b counts issues with two
records, and with two whose times overlap, from those files, as 6a does. No sandbox. Every issue was worked in
both set-ups (the bench fails otherwise): one worker in %d iterations, the two clones in %d iterations together.
From the daemons' start to the first agent's start, and from the last agent's end to the last daemon's exit: 16
workers %s and %s, one worker %s and %s. CPU time (the ralphd processes with every child they waited for:
agents, git, bd; then the Dolt server's, when there is one): 16 workers %s + %s, one worker %s + %s; on %d
CPUs the 16 workers' run cannot take less than %s.

Tracker: %s.%s
`, r.Issues, r.One.Iterations, r.Sixteen.Iterations, fmtDur(r.Sixteen.FirstStart), fmtDur(r.Sixteen.LastEnd),
		fmtDur(r.One.FirstStart), fmtDur(r.One.LastEnd), fmtDur(r.Sixteen.CPU), fmtDur(r.Sixteen.ServerCPU),
		fmtDur(r.One.CPU), fmtDur(r.One.ServerCPU), r.CPUs, fmtDur((r.Sixteen.CPU+r.Sixteen.ServerCPU)/time.Duration(max(r.CPUs, 1))), r.BD, why)
	return s
}

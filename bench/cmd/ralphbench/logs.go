package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/testkit/logjsonltest"
	"github.com/ralphd/ralphd/internal/text"
)

// truncateAbove is the largest input whose run log is kept whole; above
// it the harness empties the log whenever it passes truncateAt, so that a
// 4 GiB run does not store 4 GiB. The log is opened with O_APPEND, so
// ralphd's next write simply lands at the new end.
const (
	truncateAbove = 1 << 30
	truncateAt    = 256 << 20
)

// logRun is one `ralphd build 1 --log` run whose agent printed Size bytes.
type logRun struct {
	Size      int64
	Wall      time.Duration
	OwnCPU    time.Duration // ralphd's own CPU, not its children's
	PeakRSS   int64         // ralphd's own VmHWM
	LogBytes  int64         // bytes the run log received (counting what the harness truncated away)
	Truncated bool
}

// logPass is what section 3 measured.
type logPass struct {
	CPUSize int64
	Base    logRun // the same run with no agent output
	Runs    []logRun
	Cat     measured // jsonlgen CPUSize | cat > file: the run with the median CPU
	CatRuns int
	// CatMin and CatMax are the least and most CPU of the cat runs.
	CatMin, CatMax time.Duration
	// Writer holds logjsonltest.Measure results of the log writer alone,
	// in a fresh process per size.
	Writer []logjsonltest.Result
	// Profile is a CPU profile of one pass-through run of ProfileSize.
	Profile     profile
	ProfileSize int64
	// Heap holds the live-heap runs (agent.Run, parser and log writer in
	// one process), one per size; AllocTop the top allocators of the
	// largest, from `go tool pprof -top`.
	Heap     []liveHeap
	AllocTop string
}

func (l *logPass) run(size int64) (logRun, bool) {
	for _, r := range l.Runs {
		if r.Size == size {
			return r, true
		}
	}
	return logRun{}, false
}

// logAgent is the agent of the log runs: it prints size bytes of
// stream-json, then closes its issue.
func logAgent(size int64) string {
	return fmt.Sprintf("jsonlgen %d && %s", size, agentCmd)
}

// measureLogs runs section 3.
func measureLogs(ctx context.Context, e *benchEnv, sizes []int64, cpuSize int64, writerSizes, heapSizes []int64, runs int, doProfile bool, say func(string, ...any)) (*logPass, error) {
	lp := &logPass{CPUSize: cpuSize}
	tpl := filepath.Join(e.work, "tpl-logs")
	if err := e.makeProject(ctx, tpl, 1); err != nil {
		return nil, err
	}
	say("log pass-through: ralphd with no agent output (baseline)")
	base, err := e.logRun(ctx, tpl, 0)
	if err != nil {
		return nil, err
	}
	lp.Base = base
	for _, size := range sizes {
		say("log pass-through: ralphd with %s of agent output", bench.FormatSize(size))
		r, err := e.logRun(ctx, tpl, size)
		if err != nil {
			return nil, err
		}
		lp.Runs = append(lp.Runs, r)
	}

	// cat's CPU is mostly copying into the page cache, which varies from
	// run to run: take the median of a few.
	var cats []measured
	for r := range max(runs, 1) {
		say("log pass-through: cat with %s (%d/%d)", bench.FormatSize(cpuSize), r+1, max(runs, 1))
		cat, err := e.catRun(ctx, cpuSize)
		if err != nil {
			return nil, err
		}
		cats = append(cats, cat)
	}
	sort.Slice(cats, func(i, j int) bool { return cats[i].TotalCPU < cats[j].TotalCPU })
	lp.Cat, lp.CatRuns = cats[len(cats)/2], len(cats)
	lp.CatMin, lp.CatMax = cats[0].TotalCPU, cats[len(cats)-1].TotalCPU

	for _, size := range writerSizes {
		say("log writer alone (logjsonltest.Measure) with %s", bench.FormatSize(size))
		dir := filepath.Join(e.work, "writer")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("make writer dir: %w", err)
		}
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find ralphbench: %w", err)
		}
		out, err := run(ctx, e.env(), dir, self, "measure-writer", "-dir", dir, "-size", strconv.FormatInt(size, 10), "-rounds", "2")
		if err != nil {
			return nil, err
		}
		var res logjsonltest.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			return nil, fmt.Errorf("read measure-writer output: %w\n%s", err, tail(out, 1000))
		}
		lp.Writer = append(lp.Writer, res)
	}

	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find ralphbench: %w", err)
	}
	heapDir := filepath.Join(e.work, "heap")
	if err := os.MkdirAll(heapDir, 0o700); err != nil {
		return nil, fmt.Errorf("make heap dir: %w", err)
	}
	for i, size := range heapSizes {
		say("live heap of the pass-through pipeline with %s", bench.FormatSize(size))
		args := []string{"live-heap", e.jsonlgen(), heapDir, strconv.FormatInt(size, 10)}
		prof := filepath.Join(e.work, "alloc.pprof")
		last := i == len(heapSizes)-1
		if last {
			args = append(args, prof)
		}
		out, err := run(ctx, e.env(), heapDir, self, args...)
		if err != nil {
			return nil, err
		}
		var h liveHeap
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			return nil, fmt.Errorf("read live-heap output: %w\n%s", err, tail(out, 1000))
		}
		lp.Heap = append(lp.Heap, h)
		if last {
			top, err := run(ctx, os.Environ(), heapDir, "go", "tool", "pprof", "-sample_index=alloc_space", "-top", "-nodecount=10", self, prof)
			if err != nil {
				lp.AllocTop = "go tool pprof failed: " + firstLine(top)
			} else {
				lp.AllocTop = pprofTable(top)
			}
		}
	}

	lp.ProfileSize = min(cpuSize, 256<<20)
	if !doProfile {
		lp.Profile = profile{Skipped: "profiling was turned off (-profile=false)"}
		return lp, nil
	}
	say("profiling one pass-through of %s with perf", bench.FormatSize(lp.ProfileSize))
	dir := filepath.Join(e.work, "logs-profile")
	if err := copyTree(ctx, tpl, dir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	stateDir := filepath.Join(e.work, "logs-profile-state")
	defer os.RemoveAll(stateDir)
	args := []string{"build", "1", "--log", "--bd", e.bd(), "--agent-cmd", logAgent(lp.ProfileSize)}
	display := "ralphd build 1 --log --bd bd --agent-cmd " + text.ShellQuote(logAgent(lp.ProfileSize))
	lp.Profile = e.perfProfile(ctx, dir, e.env("XDG_STATE_HOME="+stateDir), 1, args, display)
	lp.Profile.Per = "run"
	return lp, nil
}

// logRun runs `ralphd build 1 --log` with an agent that prints size bytes
// of stream-json, on a fresh copy of tpl with its own state directory.
func (e *benchEnv) logRun(ctx context.Context, tpl string, size int64) (logRun, error) {
	name := fmt.Sprintf("logs-%d", size)
	dir := filepath.Join(e.work, name)
	stateDir := filepath.Join(e.work, name+"-state")
	if err := copyTree(ctx, tpl, dir); err != nil {
		return logRun{}, err
	}
	defer os.RemoveAll(dir)
	defer os.RemoveAll(stateDir)
	r := logRun{Size: size, Truncated: size > truncateAbove}
	var logPath string
	var cut int64
	findLog := func() string {
		if logPath == "" {
			if m, _ := filepath.Glob(filepath.Join(stateDir, "ralph", "projects", "*", "logs", "*.log")); len(m) > 0 {
				logPath = m[0]
			}
		}
		return logPath
	}
	onSample := func(int) {
		if !r.Truncated {
			return
		}
		if p := findLog(); p != "" {
			if fi, err := os.Stat(p); err == nil && fi.Size() > truncateAt {
				if os.Truncate(p, 0) == nil {
					cut += fi.Size()
				}
			}
		}
	}
	cmd := command(ctx, e.env("XDG_STATE_HOME="+stateDir), dir, e.ralphd(), "build", "1", "--log", "--bd", e.bd(), "--agent-cmd", logAgent(size))
	m, err := measure(cmd, measureOptions{Capture: true, Sample: 10 * time.Millisecond, OnSample: onSample})
	if err != nil {
		return r, err
	}
	// A truncated log is one ralphd finds edited: its close is then
	// reopened, and the run ends at its cap of one iteration (exit 3).
	if m.Exit != 0 && !(r.Truncated && m.Exit == 3 && strings.Contains(m.Stderr, "run log was edited")) {
		return r, fmt.Errorf("ralphd build --log with %d bytes exited %d:\n%s%s", size, m.Exit, tail(m.Stdout, 2000), tail(m.Stderr, 2000))
	}
	if p := findLog(); p != "" {
		if fi, err := os.Stat(p); err == nil {
			r.LogBytes = cut + fi.Size()
		}
	}
	if r.LogBytes < size {
		return r, fmt.Errorf("the run log got %d bytes of a %d-byte agent stream", r.LogBytes, size)
	}
	r.Wall, r.OwnCPU, r.PeakRSS = m.Wall, m.OwnCPU, m.PeakRSS
	return r, nil
}

// catRun pipes size bytes from jsonlgen into `cat > file` and measures cat.
func (e *benchEnv) catRun(ctx context.Context, size int64) (measured, error) {
	path := filepath.Join(e.work, "cat.out")
	defer os.Remove(path)
	f, err := os.Create(path)
	if err != nil {
		return measured{}, fmt.Errorf("create cat output: %w", err)
	}
	defer f.Close()
	gen := command(ctx, e.env(), e.work, e.jsonlgen(), strconv.FormatInt(size, 10))
	cat := command(ctx, e.env(), e.work, "cat")
	pipe, err := gen.StdoutPipe()
	if err != nil {
		return measured{}, fmt.Errorf("pipe: %w", err)
	}
	cat.Stdin = pipe
	cat.Stdout = f
	if err := gen.Start(); err != nil {
		return measured{}, fmt.Errorf("start jsonlgen: %w", err)
	}
	m, err := measure(cat, measureOptions{Sample: 10 * time.Millisecond})
	if werr := gen.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("jsonlgen: %w", werr)
	}
	if err != nil {
		return m, err
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != size {
		return m, fmt.Errorf("cat wrote %v bytes of %d", fi, size)
	}
	return m, nil
}

// pprofTable keeps the table of `go tool pprof -top` output (from the
// header line "flat  flat%"), dropping the file and build lines above it.
func pprofTable(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") {
			start := max(i-1, 0) // the "Showing nodes accounting for" line before it
			return strings.Join(lines[start:], "\n")
		}
	}
	return strings.TrimSpace(out)
}

// measureWriter is the measure-writer subcommand: logjsonltest.Measure in
// this fresh process, its result as JSON on stdout.
func measureWriter(dir string, size int64, rounds int) error {
	res, err := logjsonltest.Measure(dir, size, rounds)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

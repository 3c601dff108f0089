// Command ralphbench measures ralphd's own cost: per-iteration overhead
// against the bd calls it makes, against a bash loop, log pass-through,
// the idle daemon, and scale. scripts/bench builds it with the programs
// it needs and runs it; it prints a table and writes docs/benchmarks.md.
//
//	ralphbench -bin DIR -repo DIR [-out docs/benchmarks.md] [-idle 60s] ...
//
// DIR holds ralphd, bd (the stand-in, internal/testkit/fakebd), bdrec and
// jsonlgen. `ralphbench measure-writer` is an internal subcommand: it runs
// the log writer alone in a fresh process, so its peak RSS is its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/bench"
)

// options are ralphbench's flags.
type options struct {
	bin, repo, out, work string
	keep                 bool
	idle                 time.Duration
	wakes, runs, issues  int
	claims               int
	logSizes             []int64
	cpuSize              int64
	writerSizes          []int64
	heapSizes            []int64
	benchtime            string
	profile              bool
	only                 []string
	brokerCalls          int
	args                 string // how the script was invoked, for the report
	// realBD, dolt and cache: a real bd for sections 8, 10 and 11 (empty:
	// the stand-in), a dolt for section 11's server, and where moved
	// trackers are kept between runs.
	realBD, dolt, cache string
}

// sections are the sections -only accepts, in the order they run.
var sections = []string{"overhead", "logs", "idle", "scale", "workers", "broker", "tracker", "resume", "bigworkers", "fleet"}

func (o options) want(section string) bool {
	return len(o.only) == 0 || slices.Contains(o.only, section)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "measure-writer" {
		os.Exit(cmdMeasureWriter(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "live-heap" {
		os.Exit(cmdLiveHeap(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run0(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func cmdMeasureWriter(args []string) int {
	fs := flag.NewFlagSet("measure-writer", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the log files")
	size := fs.String("size", "1GiB", "bytes to pipe through")
	rounds := fs.Int("rounds", 2, "rounds (best of)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	n, err := bench.ParseSize(*size)
	if err != nil || *dir == "" {
		fmt.Fprintln(os.Stderr, "ralphbench measure-writer: need -dir and a valid -size")
		return 2
	}
	if err := measureWriter(*dir, n, *rounds); err != nil {
		fmt.Fprintf(os.Stderr, "ralphbench measure-writer: %v\n", err)
		return 1
	}
	return 0
}

func run0(ctx context.Context, args []string) int {
	o, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ralphbench: %v\n", err)
		return 2
	}
	if err := bench0(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "ralphbench: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("ralphbench", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "", "directory with ralphd, bd (the stand-in), bdrec and jsonlgen")
	fs.StringVar(&o.repo, "repo", ".", "the ralphd checkout")
	fs.StringVar(&o.out, "out", "", "write the Markdown report here (docs/benchmarks.md)")
	fs.StringVar(&o.work, "work", "", "scratch directory (default: a new temporary one, removed at the end)")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch directory")
	fs.DurationVar(&o.idle, "idle", 60*time.Second, "how long to measure the idle daemon")
	fs.IntVar(&o.wakes, "wakes", 5, "bd creates to time the daemon's wake-up latency on")
	fs.IntVar(&o.runs, "runs", 3, "timed runs (and replays) per measurement; medians are reported")
	fs.IntVar(&o.issues, "issues", 50, "issues in the per-iteration project")
	fs.IntVar(&o.claims, "claims", 1000, "issues the parallel workers claim (section 6)")
	logSizes := fs.String("log-sizes", "100MiB,1GiB,4GiB", "agent output sizes for the log pass-through peak RSS")
	cpuSize := fs.String("cpu-size", "1GiB", "agent output size for the log pass-through CPU ratio (one of -log-sizes)")
	writerSizes := fs.String("writer-sizes", "100MiB,1GiB", "input sizes for the log writer alone (logjsonltest.Measure)")
	heapSizes := fs.String("heap-sizes", "100MiB,1GiB", "input sizes for the live heap of the pass-through pipeline")
	fs.StringVar(&o.benchtime, "benchtime", "300ms", "go test -benchtime for the scale benchmarks")
	fs.IntVar(&o.brokerCalls, "broker-calls", 200, "bd calls timed each way for the broker section")
	fs.BoolVar(&o.profile, "profile", true, "profile one ralphd run with perf, when perf is installed")
	only := fs.String("only", "", "comma-separated sections to run: "+strings.Join(sections, ", ")+" (default: all)")
	fs.StringVar(&o.realBD, "real-bd", "", "a real bd binary for sections 8, 10 and 11 (default: the stand-in)")
	fs.StringVar(&o.dolt, "dolt", "", "a dolt binary: with -real-bd, section 11 runs real bd in server mode against a dolt sql-server the bench starts")
	fs.StringVar(&o.cache, "cache", "", "where trackers moved into the real bd are kept between runs (default: .tools/bench-cache in -repo; \"off\": none)")
	fs.StringVar(&o.args, "invocation", "scripts/bench", "how the benchmark was started, for the report")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.bin == "" {
		return o, fmt.Errorf("-bin is required (scripts/bench sets it)")
	}
	var err error
	if o.logSizes, err = sizes(*logSizes); err != nil {
		return o, err
	}
	if o.writerSizes, err = sizes(*writerSizes); err != nil {
		return o, err
	}
	if o.heapSizes, err = sizes(*heapSizes); err != nil {
		return o, err
	}
	if o.cpuSize, err = bench.ParseSize(*cpuSize); err != nil {
		return o, err
	}
	if !slices.Contains(o.logSizes, o.cpuSize) {
		return o, fmt.Errorf("-cpu-size %s is not one of -log-sizes %s", *cpuSize, *logSizes)
	}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains(sections, s) {
				return o, fmt.Errorf("-only: unknown section %q (%s)", s, strings.Join(sections, ", "))
			}
			o.only = append(o.only, s)
		}
	}
	if o.runs < 1 || o.issues < 1 || o.wakes < 1 || o.idle <= 0 || o.claims < 1 {
		return o, fmt.Errorf("-runs, -issues, -wakes, -claims and -idle must be positive")
	}
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return o, err
	}
	if o.repo, err = filepath.Abs(o.repo); err != nil {
		return o, err
	}
	if o.dolt != "" && o.realBD == "" {
		return o, fmt.Errorf("-dolt needs -real-bd: the stand-in's server mode needs no server")
	}
	switch o.cache {
	case "":
		o.cache = filepath.Join(o.repo, ".tools", "bench-cache")
	case "off":
		o.cache = ""
	}
	return o, nil
}

func sizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := bench.ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// bench0 runs the sections and writes the report.
func bench0(ctx context.Context, o options) error {
	start := time.Now()
	work := o.work
	if work == "" {
		d, err := os.MkdirTemp("", "ralphbench-")
		if err != nil {
			return fmt.Errorf("make scratch dir: %w", err)
		}
		work = d
	}
	if !o.keep {
		defer os.RemoveAll(work)
	}
	e, err := newBenchEnv(o.bin, o.repo, work)
	if err != nil {
		return err
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	// te runs sections 8, 10 and 11: with the real bd when one is given.
	te := e
	if o.realBD != "" && (o.want("tracker") || o.want("bigworkers") || o.want("fleet")) {
		r, err := newRealBD(ctx, o.realBD, o.dolt, o.cache)
		if err != nil {
			return err
		}
		if te, err = e.withRealBD(r); err != nil {
			return err
		}
		say("sections 8, 10 and 11 run %s (%s)", r.Label(), r.Path)
	}
	facts := gatherFacts(ctx, o)
	var (
		ov *overhead
		lp *logPass
		id *idleResult
		sc *scaleResult
		wk *workersResult
		br *brokerResult
		tr *trackerResult
		rs []resumeResult
		bw *bigWorkersResult
		fl *fleetResult
	)
	if o.want("overhead") {
		if ov, err = measureOverhead(ctx, e, o.issues, o.runs, o.profile, say); err != nil {
			return fmt.Errorf("per-iteration overhead: %w", err)
		}
	}
	if o.want("logs") {
		if lp, err = measureLogs(ctx, e, o.logSizes, o.cpuSize, o.writerSizes, o.heapSizes, o.runs, o.profile, say); err != nil {
			return fmt.Errorf("log pass-through: %w", err)
		}
	}
	if o.want("idle") {
		if id, err = measureIdle(ctx, e, o.idle, o.wakes, say); err != nil {
			return fmt.Errorf("idle daemon: %w", err)
		}
		if id.Dashboard, err = measureIdleDashboard(ctx, e, o.idle, say); err != nil {
			return fmt.Errorf("idle daemon with the dashboard: %w", err)
		}
	}
	if o.want("scale") {
		if sc, err = measureScale(ctx, o.repo, o.benchtime, say); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if o.want("workers") {
		if wk, err = measureWorkers(ctx, e, o.claims, say); err != nil {
			return fmt.Errorf("parallel workers: %w", err)
		}
	}
	if o.want("broker") {
		if br, err = measureBroker(ctx, e, o.brokerCalls, say); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}
	if o.want("tracker") {
		if tr, err = measureTracker(ctx, te, o.runs, say); err != nil {
			return fmt.Errorf("tracker size: %w", err)
		}
	}
	if o.want("resume") {
		if rs, err = measureResume(ctx, e, say); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
	}
	if o.want("bigworkers") {
		if bw, err = measureBigWorkers(ctx, te, say); err != nil {
			return fmt.Errorf("workers on a big tracker: %w", err)
		}
	}
	if o.want("fleet") {
		if fl, err = measureFleet(ctx, te, say); err != nil {
			return fmt.Errorf("16 workers in two clones: %w", err)
		}
	}
	facts.elapsed = time.Since(start)
	rep := buildReport(o, facts, ov, lp, id, sc, wk)
	if br != nil {
		rep.Sections = append(rep.Sections, brokerSection(br, o.args))
	}
	if tr != nil {
		rep.Sections = append(rep.Sections, trackerSection(tr, o.args))
	}
	if rs != nil {
		rep.Sections = append(rep.Sections, resumeSection(rs, o.args))
	}
	if bw != nil {
		rep.Sections = append(rep.Sections, bigWorkersSection(bw, o.args))
	}
	if fl != nil {
		rep.Sections = append(rep.Sections, fleetSection(fl, o.args))
	}
	fmt.Print(rep.Table())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(rep.Markdown()), 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		say("wrote %s", o.out)
	}
	return nil
}

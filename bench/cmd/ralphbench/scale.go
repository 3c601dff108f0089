package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/ralphd/ralphd/bench"
)

// scaleSizes are the sizes the scale benchmarks run at.
var scaleSizes = []int{10, 1000, 10000}

// scaleBench names one scale benchmark and what it measures.
type scaleBench struct {
	ID, Name, What string
}

// scaleBenches are the scale benchmarks, in report order.
var scaleBenches = []scaleBench{
	{"5a", "BenchmarkScaleParsePick", "parse `bd ready --json` and pick the issue to work on"},
	{"5b", "BenchmarkScaleSnapshotDiff", "full snapshot diff: `tamper.NewSnapshot` of the issues after an iteration and `tamper.Diff` against the snapshot before"},
	{"5c", "BenchmarkScaleListParseSnapshotDiff", "what BUILD does with the tracker after each iteration: parse `bd list --all --json`, snapshot, diff"},
	{"5d", "BenchmarkScalePickAllStuck", "pick's longest walk: every ready issue but the last is labelled stuck"},
	{"5e", "BenchmarkScaleParseReady", "parse `bd ready --json` alone"},
}

// scaleResult is what section 5 measured.
type scaleResult struct {
	Command string
	Results []bench.GoBench
}

// scaleArgs is the go test command line of section 5.
func scaleArgs(benchtime string) []string {
	return []string{"test", "-run", "^$", "-bench", "^BenchmarkScale", "-benchtime", benchtime, "-count", "1",
		"./bench", "./internal/modes"}
}

// measureScale runs the scale benchmarks with go test in the repository.
func measureScale(ctx context.Context, repo, benchtime string, say func(string, ...any)) (*scaleResult, error) {
	say("go test -bench ^BenchmarkScale (10, 1,000 and 10,000 issues)")
	args := scaleArgs(benchtime)
	out, err := run(ctx, os.Environ(), repo, "go", args...)
	if err != nil {
		return nil, err
	}
	rs, err := bench.ParseGoBench(strings.NewReader(out))
	if err != nil {
		return nil, err
	}
	for _, b := range scaleBenches {
		for _, n := range scaleSizes {
			if _, ok := bench.Find(rs, sizeName(b.Name, n)); !ok {
				return nil, fmt.Errorf("go test printed no result for %s:\n%s", sizeName(b.Name, n), tail(out, 3000))
			}
		}
	}
	return &scaleResult{Command: "go " + strings.Join(args, " "), Results: rs}, nil
}

func sizeName(name string, n int) string { return fmt.Sprintf("%s/issues=%d", name, n) }

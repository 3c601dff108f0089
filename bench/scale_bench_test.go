package bench_test

import (
	"fmt"
	"testing"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/testkit/benchtest"
)

// scaleSizes are the tracker sizes of the scale benchmarks (issue 12, item
// 5). scripts/bench reads the results by these names.
var scaleSizes = []int{10, 1000, 10000}

// listInput returns `bd list --all --json` output of n issues, every
// fourth closed, and its parse.
func listInput(b *testing.B, n int) ([]byte, []beads.Issue) {
	b.Helper()
	data, err := benchtest.IssuesJSON(n, 4)
	if err != nil {
		b.Fatal(err)
	}
	issues, err := beads.ParseIssues(data)
	if err != nil || len(issues) != n {
		b.Fatalf("parse: %d issues, %v", len(issues), err)
	}
	return data, issues
}

// closeOne returns a copy of issues in which the first open one is closed
// with a reason citing evidence: what a BUILD iteration's agent does.
func closeOne(issues []beads.Issue) []beads.Issue {
	after := append([]beads.Issue(nil), issues...)
	for i := range after {
		if after[i].Status != beads.StatusClosed {
			after[i].Status, after[i].CloseReason = beads.StatusClosed, "go test ./... passes (exit 0)"
			break
		}
	}
	return after
}

// BenchmarkScaleParseReady parses `bd ready --json` output of n issues.
func BenchmarkScaleParseReady(b *testing.B) {
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("issues=%d", n), func(b *testing.B) {
			data, err := benchtest.IssuesJSON(n, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				issues, err := beads.ParseIssues(data)
				if err != nil || len(issues) != n {
					b.Fatalf("parse: %d issues, %v", len(issues), err)
				}
			}
		})
	}
}

// BenchmarkScaleSnapshotDiff indexes the after-iteration issues
// (tamper.NewSnapshot) and diffs them against the before snapshot with
// the evidence check BUILD uses: the full snapshot diff of one iteration,
// from parsed issues.
func BenchmarkScaleSnapshotDiff(b *testing.B) {
	opts := guard.Options{CitesEvidence: judge.CitesEvidence}
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("issues=%d", n), func(b *testing.B) {
			_, issues := listInput(b, n)
			before := guard.NewSnapshot(issues)
			after := closeOne(issues)
			b.ReportAllocs()
			for b.Loop() {
				if vs := guard.Diff(before, guard.NewSnapshot(after), opts); len(vs) != 0 {
					b.Fatalf("unexpected violations: %v", vs)
				}
			}
		})
	}
}

// BenchmarkScaleListParseSnapshotDiff is what BUILD does with the tracker
// after every iteration: parse `bd list --all --json`, index it, diff it.
func BenchmarkScaleListParseSnapshotDiff(b *testing.B) {
	opts := guard.Options{CitesEvidence: judge.CitesEvidence}
	for _, n := range scaleSizes {
		b.Run(fmt.Sprintf("issues=%d", n), func(b *testing.B) {
			data, issues := listInput(b, n)
			before := guard.NewSnapshot(closeOne(issues))
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				parsed, err := beads.ParseIssues(data)
				if err != nil {
					b.Fatal(err)
				}
				// The before snapshot had one issue open that is closed
				// now, as after an iteration; Diff walks every issue.
				_ = guard.Diff(before, guard.NewSnapshot(parsed), opts)
			}
		})
	}
}

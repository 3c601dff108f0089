package modes

import (
	"context"
	"fmt"
	"testing"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/testkit/benchtest"
)

// pickLoop returns a Loop with just what pick needs: a state directory (no
// attempts recorded) and the stuck limit.
func pickLoop(b *testing.B) *Loop {
	b.Helper()
	st, err := state.Open(context.Background(), b.TempDir(), state.Identity{ID: "0123456789ab"}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return &Loop{Deps: Deps{Config: &config.Config{MaxStuck: 3}, State: st}}
}

// BenchmarkScaleParsePick parses `bd ready --json` output of n issues and
// picks the issue to work on, as every BUILD iteration does (issue 12,
// item 5; scripts/bench reads the results by this name).
func BenchmarkScaleParsePick(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("issues=%d", n), func(b *testing.B) {
			data, err := benchtest.IssuesJSON(n, 0)
			if err != nil {
				b.Fatal(err)
			}
			l := pickLoop(b)
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				ready, err := beads.ParseIssues(data)
				if err != nil {
					b.Fatal(err)
				}
				is, err := l.pick(ctx, &Result{}, ready, map[string]bool{})
				if err != nil || is == nil || is.ID != ready[0].ID {
					b.Fatalf("pick: %v, %v", is, err)
				}
			}
		})
	}
}

// BenchmarkScalePickAllStuck picks from n parsed ready issues of which all
// but the last carry the stuck label: the longest walk pick can make.
func BenchmarkScalePickAllStuck(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("issues=%d", n), func(b *testing.B) {
			data, err := benchtest.IssuesJSON(n, 0)
			if err != nil {
				b.Fatal(err)
			}
			ready, err := beads.ParseIssues(data)
			if err != nil {
				b.Fatal(err)
			}
			for i := range ready[:n-1] {
				ready[i].Labels = append(ready[i].Labels, StuckLabel)
			}
			l := pickLoop(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				is, err := l.pick(ctx, &Result{}, ready, map[string]bool{})
				if err != nil || is == nil || is.ID != ready[n-1].ID {
					b.Fatalf("pick: %v, %v", is, err)
				}
			}
		})
	}
}

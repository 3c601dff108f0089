package state

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/testkit/benchtest"
)

// BenchmarkKeepTrackerHeld measures what keeping the reading held costs
// at 5,000 issues (issue 33), against the baseline every BUILD window
// writes already, in the same run: the full reading's file (written at
// each full reading), and the delta of one reading of what changed (50
// issues patched in since the full reading). Compare the ns/op and
// bytes/op of the sub-benchmarks as ratios.
func BenchmarkKeepTrackerHeld(b *testing.B) {
	data, err := benchtest.IssuesJSON(5000, 3)
	if err != nil {
		b.Fatal(err)
	}
	issues, err := beads.ParseIssues(data)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	s, err := Open(context.Background(), b.TempDir(), Identity{ID: "0123456789ab"}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name  string
		file  string
		write func() error
	}{
		{"baseline", BaselineFile, func() error {
			return s.WriteBaseline(Baseline{RunID: "r", Iteration: 1, IssueID: "x", TakenAt: at, Issues: issues})
		}},
		{"held", TrackerHeldFile, func() error { return s.WriteTrackerHeld(TrackerHeld{RunID: "r", TakenAt: at, Issues: issues}) }},
		{"delta-50", TrackerHeldDeltaFile, func() error {
			return s.WriteTrackerHeldDelta(TrackerHeldDelta{TakenAt: at, PrevStart: at, Issues: issues[:50]})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.write(); err != nil {
					b.Fatal(err)
				}
			}
			if fi, err := os.Stat(s.path(bc.file)); err == nil {
				b.ReportMetric(float64(fi.Size()), "file-bytes")
			}
		})
	}
}

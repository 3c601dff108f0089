package beads_test

import (
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/testkit/benchtest"
)

// readyJSON is bd ready --json output with n issues in the shape of the
// ready-mixed fixture (benchtest.IssuesJSON).
func readyJSON(tb testing.TB, n int) []byte {
	tb.Helper()
	data, err := benchtest.IssuesJSON(n, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func BenchmarkParseReady(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("issues=%d", n), func(b *testing.B) {
			data := readyJSON(b, n)
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

func TestReadyJSONParses(t *testing.T) {
	is := is.New(t)
	// The benchmark's input is valid ready output.
	issues, err := beads.ParseIssues(readyJSON(t, 50))
	is.NoErr(err)
	is.Equal(len(issues), 50)
	is.Equal(issues[10].Parent, "rt-0000")
	is.Equal(len(issues[35].Dependencies), 2)
	is.Equal(issues[3].Labels, []string{"backend", "parser"})
}

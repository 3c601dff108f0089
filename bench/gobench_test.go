package bench_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
)

func TestParseGoBench(t *testing.T) {
	is := is.New(t)
	rs, err := bench.ParseGoBench(bytes.NewReader(readFixture(t, "gobench-scale.txt")))
	is.NoErr(err)
	is.Equal(len(rs), 5*3) // five benchmarks at three sizes, across two packages

	r, ok := bench.Find(rs, "BenchmarkScaleParseReady/issues=1000")
	is.True(ok)
	is.Equal(r.N, int64(5))
	is.Equal(r.NsPerOp, 4487423.0)
	is.Equal(r.Metrics["MB/s"], 135.71)
	is.Equal(r.Metrics["B/op"], 2160419.0)
	is.Equal(r.Metrics["allocs/op"], 1022.0)

	_, ok = bench.Find(rs, "BenchmarkScalePickAllStuck/issues=10000")
	is.True(ok) // from the second package
	_, ok = bench.Find(rs, "BenchmarkScaleParseReady/issues=1000-2")
	is.True(!ok) // names carry no GOMAXPROCS suffix
}

func TestParseGoBenchEdges(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []bench.GoBench
		wantErr bool
	}{
		{
			name: "no procs suffix, custom metric",
			in:   "BenchmarkX\t10\t5.5 ns/op\t3 widgets/op\n",
			want: []bench.GoBench{{Name: "BenchmarkX", N: 10, NsPerOp: 5.5, Metrics: map[string]float64{"widgets/op": 3}}},
		},
		{
			name: "a dash in the name that is not GOMAXPROCS",
			in:   "BenchmarkY/case=a-b-8 2 100 ns/op\n",
			want: []bench.GoBench{{Name: "BenchmarkY/case=a-b", N: 2, NsPerOp: 100, Metrics: map[string]float64{}}},
		},
		{
			name: "log lines and summaries are skipped",
			in:   "goos: linux\nBenchmarkZ says hello there\nPASS\nok  \tpkg\t0.1s\n",
		},
		{name: "a value that is not a number", in: "BenchmarkX 10 fast ns/op\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := bench.ParseGoBench(strings.NewReader(tt.in))
			if tt.wantErr {
				is.True(err != nil)
				return
			}
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

func FuzzParseGoBench(f *testing.F) {
	f.Add(readFixture(f, "gobench-scale.txt"))
	f.Add([]byte("BenchmarkX-2 1 1 ns/op 2 B/op\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := bench.ParseGoBench(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range rs {
			if !strings.HasPrefix(r.Name, "Benchmark") || r.Metrics == nil {
				t.Fatalf("bad result %+v", r)
			}
		}
	})
}

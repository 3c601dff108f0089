package bench_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		is := is.New(t)
		in := append([]float64(nil), tt.in...)
		is.Equal(bench.Median(tt.in), tt.want)
		is.Equal(tt.in, in) // not sorted in place
	}
	is := is.New(t)
	is.Equal(bench.MedianDuration([]time.Duration{3 * time.Second, time.Second, 2 * time.Second}), 2*time.Second)
	is.Equal(bench.Ratio(1, 0), 0.0)
	is.Equal(bench.Ratio(3, 2), 1.5)
}

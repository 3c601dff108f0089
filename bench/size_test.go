package bench_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "1048576", want: 1 << 20},
		{in: "0", want: 0},
		{in: "100M", want: 100 << 20},
		{in: "100MiB", want: 100 << 20},
		{in: "100MB", want: 100 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "4g", want: 4 << 30},
		{in: "16K", want: 16 << 10},
		{in: " 2T ", want: 2 << 40},
		{in: "", wantErr: true},
		{in: "GiB", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "1.5G", wantErr: true},
		{in: "9999999999T", wantErr: true}, // overflows int64
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got, err := bench.ParseSize(tt.in)
			if tt.wantErr {
				is.True(err != nil)
				return
			}
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

func TestFormatSize(t *testing.T) {
	is := is.New(t)
	is.Equal(bench.FormatSize(4<<30), "4 GiB")
	is.Equal(bench.FormatSize(100<<20), "100 MiB")
	is.Equal(bench.FormatSize(1536), "1.5 KiB")
	is.Equal(bench.FormatSize(12), "12 B")
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1GiB", "100M", "4096", "16KiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := bench.ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("%q parsed to %d", s, n)
		}
	})
}

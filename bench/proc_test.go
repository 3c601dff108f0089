package bench_test

import (
	"os"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/proc"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bench.ProcStatus
	}{
		{
			name: "busy fixture",
			in:   string(readFixture(t, "status-busy.txt")),
			want: bench.ProcStatus{VmHWM: 1760 * 1024, VmRSS: 1760 * 1024, Switches: 1122},
		},
		{
			name: "a zombie has no memory lines",
			in:   "Name:\tx\nState:\tZ (zombie)\nvoluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t4\n",
			want: bench.ProcStatus{Switches: 7},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := bench.ParseStatus([]byte(tt.in))
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
	_, err := bench.ParseStatus([]byte("VmHWM:\tlots kB\n"))
	is.New(t).True(err != nil) // a memory line that is not a number
}

func TestParseStatusFixtureRSS(t *testing.T) {
	is := is.New(t)
	got, err := bench.ParseStatus(readFixture(t, "status-sleep.txt"))
	is.NoErr(err)
	is.True(got.VmHWM > 0)
	is.True(got.VmRSS > 0 && got.VmRSS <= got.VmHWM)
}

func TestParseSchedstat(t *testing.T) {
	is := is.New(t)
	d, err := bench.ParseSchedstat(readFixture(t, "schedstat-busy.txt"))
	is.NoErr(err)
	is.Equal(d, time.Duration(1287566168))
	_, err = bench.ParseSchedstat([]byte("12 34"))
	is.True(err != nil)
	_, err = bench.ParseSchedstat([]byte("x 1 2"))
	is.True(err != nil)
}

// burn uses the CPU for about d.
func burn(d time.Duration) int {
	n := 0
	for start := time.Now(); time.Since(start) < d; {
		for i := range 10000 {
			n += i % 7
		}
	}
	return n
}

func TestReadThisProcess(t *testing.T) {
	is := is.New(t)
	pid := os.Getpid()
	t0, err := bench.ReadThreads(pid)
	is.NoErr(err)
	s0, err := proc.ReadStat(pid)
	is.NoErr(err)
	_ = burn(60 * time.Millisecond)
	t1, err := bench.ReadThreads(pid)
	is.NoErr(err)
	s1, err := proc.ReadStat(pid)
	is.NoErr(err)
	is.True(t1.Count >= 1)
	is.True(t1.CPU > t0.CPU)                    // schedstat saw the CPU used
	is.True(s1.CPU() >= s0.CPU())               // ticks never go back
	is.True(s1.State == 'R' || s1.State == 'S') // alive, not a zombie
	st, err := bench.ReadStatus(pid)
	is.NoErr(err)
	is.True(st.VmHWM > 0)

	_, err = proc.ReadStat(-1)
	is.True(err != nil)
	_, err = bench.ReadThreads(-1)
	is.True(err != nil)
}

func FuzzParseStatus(f *testing.F) {
	f.Add(readFixture(f, "status-busy.txt"))
	f.Add(readFixture(f, "status-sleep.txt"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := bench.ParseStatus(b)
		if err == nil && (s.VmHWM%1024 != 0 || s.VmRSS%1024 != 0) {
			t.Fatalf("memory not in whole kB: %+v from %q", s, b)
		}
	})
}

func FuzzParseSchedstat(f *testing.F) {
	f.Add(readFixture(f, "schedstat-busy.txt"))
	f.Add(readFixture(f, "schedstat-sleep.txt"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = bench.ParseSchedstat(b)
	})
}

//go:build linux

package agent

import (
	"os"
	"testing"

	"github.com/matryer/is"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want procStat
		ok   bool
	}{
		{
			name: "plain",
			in:   "1234 (sleep) S 1200 1234 1100 34816 1234 4194560 97 0 0 0 0 0 0 0 20 0 1 0 987654 2572288 211 18446744073709551615",
			want: procStat{PID: 1234, State: 'S', PPID: 1200, PGID: 1234, SID: 1100, StartTime: 987654},
			ok:   true,
		},
		{
			name: "command with spaces and parens",
			in:   "77 (a (b) c) Z 1 77 77 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0 0",
			want: procStat{PID: 77, State: 'Z', PPID: 1, PGID: 77, SID: 77, StartTime: 42},
			ok:   true,
		},
		{name: "truncated", in: "77 (x) S 1 2 3", ok: false},
		{name: "no command", in: "77 x S 1 2 3", ok: false},
		{name: "empty", in: "", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			pid := tt.want.PID
			if pid == 0 {
				pid = 77
			}
			got, err := parseProcStat(pid, []byte(tt.in))
			is.Equal(err == nil, tt.ok)
			if tt.ok {
				is.Equal(got, tt.want)
			}
		})
	}
}

func TestProcessStartTime(t *testing.T) {
	is := is.New(t)
	st, err := ProcessStartTime(os.Getpid())
	is.NoErr(err)
	is.True(st > 0)
	is.True(ProcessAlive(os.Getpid(), st))
	is.True(!ProcessAlive(os.Getpid(), st+1)) // another start time is another process
	_, err = ProcessStartTime(-5)
	is.True(err != nil)
}

// FuzzParseProcStat checks that any /proc/<pid>/stat content parses or
// fails without panicking.
func FuzzParseProcStat(f *testing.F) {
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("1 (a) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseProcStat(1, b)
	})
}

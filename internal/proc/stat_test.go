package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Stat
	}{
		{"stat-cat.txt", "", Stat{PID: 17070, Comm: "cat", State: 'R', PPID: 17068, PGID: 17068, SID: 2772, Threads: 1, StartTime: 35994}},
		{"stat-init.txt", "", Stat{PID: 1, Comm: "process_api", State: 'S', UTime: 58, STime: 271, CUTime: 871, CSTime: 524, Threads: 13, StartTime: 24}},
		{"stat-odd.txt", "", Stat{PID: 17136, Comm: "a) b (c", State: 'S', PPID: 17135, PGID: 17131, SID: 2772, Threads: 1, StartTime: 36117}},
		{"stat-busy.txt", "", Stat{PID: 9972, Comm: "sleep", State: 'S', PPID: 9964, PGID: 9964, SID: 6202, UTime: 127, STime: 1, Threads: 1, StartTime: 269113}},
		{"spaces and parentheses", "42 (a) b (c)) Z 1 42 42 0 -1 0 0 0 0 0 7 3 5 2 20 0 9 0 1 0 0",
			Stat{PID: 42, Comm: "a) b (c)", State: 'Z', PPID: 1, PGID: 42, SID: 42, UTime: 7, STime: 3, CUTime: 5, CSTime: 2, Threads: 9, StartTime: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			in := []byte(tt.in)
			if tt.in == "" {
				in = readTestdata(t, tt.name)
			}
			got, err := ParseStat(in)
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

func TestParseStatErrors(t *testing.T) {
	for _, bad := range []string{
		"",
		"1 (x",
		"77 x S 1 2 3",
		"x (sh) S 1 1",
		"77 (x) S 1 2 3",
		"1 (sh) S 1 1 1 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0",    // no starttime
		"1 (sh) S a 1 1 0 -1 4 1 0 0 0 0 0 0 0 20 0 1 0 5",          // ppid
		"1 (sh) SS 1 1 1 0 -1 4 1 0 0 0 0 0 0 0 20 0 1 0 5",         // state
		"42 (a) S 1 42 42 0 -1 0 0 0 0 0 x 3 5 2 20 0 9 0 1 0 0",    // utime
		"42 (a) S 1 42 42 0 -1 0 0 0 0 0 1 3 5 2 20 0 9 0 -1 0 0",   // starttime
		"42 (a) S 1 42 42 0 -1 0 0 0 0 0 1 3 5 2 20 0 many 0 1 0 0", // threads
	} {
		t.Run(bad, func(t *testing.T) {
			_, err := ParseStat([]byte(bad))
			is.New(t).True(err != nil)
		})
	}
}

func TestStatCPU(t *testing.T) {
	is := is.New(t)
	is.Equal(Stat{UTime: 127, STime: 1, CUTime: 50}.CPU(), 1280*time.Millisecond) // children's CPU not counted
}

// FuzzParseStat checks that any /proc/<pid>/stat content parses or fails
// without panicking, and that a parsed command name is what lies between
// the first '(' and the last ')'.
func FuzzParseStat(f *testing.F) {
	for _, name := range []string{"stat-cat.txt", "stat-init.txt", "stat-odd.txt", "stat-busy.txt", "stat-sleep.txt"} {
		f.Add(readTestdata(f, name))
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(data)
		if err != nil {
			return
		}
		s := string(data)
		if want := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]; st.Comm != want {
			t.Fatalf("comm %q, want %q", st.Comm, want)
		}
	})
}

func TestLiveProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	is := is.New(t)
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "PROC_TEST_MARK=x1")
	SetGroup(cmd)
	is.NoErr(cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() { KillGroup(cmd); _ = cmd.Wait() })

	st, err := ReadStat(pid)
	is.NoErr(err)
	is.Equal(st.PGID, pid) // leads its own group
	is.Equal(st.PPID, os.Getpid())
	start, err := StartTime(pid)
	is.NoErr(err)
	is.Equal(start, st.StartTime)
	is.True(Alive(pid, start))
	is.True(Alive(pid, 0))
	is.True(!Alive(pid, start+1)) // another start time is another process
	is.True(HasEnv(pid, "PROC_TEST_MARK=x1"))
	is.True(!HasEnv(pid, "PROC_TEST_MARK=x"))
	pids, err := PIDs()
	is.NoErr(err)
	is.True(slices.Contains(pids, pid))

	KillGroup(cmd)
	_ = cmd.Wait()
	is.True(!Alive(pid, start)) // reaped: gone
	_, err = ReadStat(pid)
	is.True(err != nil)
	_, err = StartTime(-5)
	is.True(err != nil)
	is.True(!Alive(0, 0))
}

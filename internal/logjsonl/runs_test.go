package logjsonl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestListRuns(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()

	// A complete run, written by the Writer.
	full := writeSampleRun(t, dir)

	at := func(h int) string {
		return time.Date(2026, 1, 27, h, 0, 0, 0, time.Local).Format(FileTimeLayout) + ".log"
	}
	write := func(name, content string) {
		is.NoErr(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
	}
	// A run that died in its second iteration, its last line cut short.
	write(at(9), `{"type":"loop_meta","event":"run_start","timestamp":"2026-01-27T08:00:00Z","data":{"schema_version":1,"mode":"plan","max_iterations":0,"agent":"codex"}}`+"\n"+
		`{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-27T08:00:01Z","data":{"iteration":1,"mode":"plan"}}`+"\n"+
		`{"type":"thread.started","thread_id":"t"}`+"\n"+
		`{"type":"loop_meta","event":"iteration_end","timestamp":"2026-01-27T08:05:00Z","data":{"iteration":1,"exit_code":0,"duration_seconds":299,"outcome":"ok","cost_usd":0.5}}`+"\n"+
		`{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-27T08:05:01Z","data":{"iteration":2,"mode":"plan"}}`+"\n"+
		`{"type":"loop_meta","event":"iteration_end","timestamp":"2026-01-27T08:09:00Z","data":{"iteration":2,"exit_code":1,"duration_seconds":239,"outcome":"crashed","cost_usd":0.25}}`+"\n"+
		`{"type":"loop_meta","event":"stuck","timestamp":"2026-01-27T08:09:00Z","data":{"issue_id":"bd-1","attempts":3,"max_attempts":3}}`+"\n"+
		`{"type":"assist`)
	// A bash loop log: no run_start, stderr mixed in as raw text.
	write(at(8), `{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-27T08:00:00+01:00","data":{"iteration":1,"issue_id":"bd-a","mode":"build"}}`+"\n"+
		"Error: something on stderr\n"+
		`{"type":"loop_meta","event":"iteration_end","timestamp":"2026-01-27T08:10:00+01:00","data":{"iteration":1,"exit_code":124,"duration_seconds":600}}`+"\n")
	// An empty log and one that is all garbage, with a huge line.
	write(at(7), "")
	write(at(6), "\x00\x01garbage\n"+strings.Repeat("z", 2<<20)+"\n")
	// Files that are not logs.
	write("notes.txt", "not a log")

	runs, err := ListRuns(dir)
	is.NoErr(err)
	is.Equal(len(runs), 5) // every .log file, nothing else
	names := []string{}
	for _, r := range runs {
		names = append(names, r.Name)
	}
	is.Equal(names, []string{at(6), at(7), at(8), at(9), filepath.Base(full)}) // oldest first

	garbage, empty, bash, died, done := runs[0], runs[1], runs[2], runs[3], runs[4]

	is.Equal(garbage.Outcome, OutcomeUnfinished)
	is.Equal(garbage.BadLines, 1) // the huge line is skipped unread, the garbage counted
	is.Equal(garbage.Size, int64(len("\x00\x01garbage\n")+2<<20+1))
	is.Equal(garbage.Start, time.Date(2026, 1, 27, 6, 0, 0, 0, time.Local)) // from the file name

	is.Equal(empty.Outcome, OutcomeUnfinished)
	is.Equal(empty.Iterations, 0)
	is.Equal(empty.Size, int64(0))

	is.Equal(bash.SchemaVersion, 0)
	is.Equal(bash.Mode, "build") // from iteration_start
	is.Equal(bash.Iterations, 1)
	is.Equal(bash.Failed, 1) // exit 124
	is.Equal(bash.BadLines, 1)
	is.Equal(bash.Start, time.Date(2026, 1, 27, 7, 0, 0, 0, time.UTC).In(bash.Start.Location())) // the first event
	is.True(bash.CostUSD == nil)                                                                 // never invented

	is.Equal(died.Mode, "plan")
	is.Equal(died.Agent, "codex")
	is.Equal(died.SchemaVersion, 1)
	is.Equal(died.Outcome, OutcomeUnfinished)
	is.Equal(died.Iterations, 2)
	is.Equal(died.Failed, 1)
	is.Equal(died.Stuck, 1)
	is.Equal(died.BadLines, 1)                            // the cut last line
	is.True(died.CostUSD != nil && *died.CostUSD == 0.75) // summed over iterations
	is.True(died.End.IsZero())
	is.Equal(died.Last, time.Date(2026, 1, 27, 8, 9, 0, 0, time.UTC))

	is.Equal(done.Mode, "build")
	is.Equal(done.Agent, "claude")
	is.Equal(done.Version, "v0.1.0")
	is.Equal(done.ProjectID, "abc123def456")
	is.Equal(done.MaxIterations, 5)
	is.Equal(done.SchemaVersion, SchemaVersion)
	is.Equal(done.Outcome, "error")
	is.Equal(done.Reason, "agent is not logged in")
	is.Equal(done.Iterations, 3)
	is.Equal(done.Failed, 2)
	is.Equal(done.Denials, 2) // the denied bd_call and the violation
	is.Equal(done.BadLines, 0)
	is.True(done.CostUSD != nil && *done.CostUSD > 0.1283 && *done.CostUSD < 0.1284) // 0.0871345 + 0.0412
	is.Equal(done.Start, testTime)
	is.Equal(done.End, testTime.Add(87*time.Second))
	info, err := os.Stat(full)
	is.NoErr(err)
	is.Equal(done.Size, info.Size())
}

func TestListRunsMissingDir(t *testing.T) {
	is := is.New(t)
	runs, err := ListRuns(filepath.Join(t.TempDir(), "never"))
	is.NoErr(err)
	is.Equal(len(runs), 0) // no logs yet is not an error
}

func TestListRunsUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	is := is.New(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "2026-01-27T06-00-00.log")
	is.NoErr(os.WriteFile(path, []byte("{}\n"), 0o000))
	runs, err := ListRuns(dir)
	is.NoErr(err)
	is.Equal(len(runs), 1)
	is.True(strings.HasPrefix(runs[0].Outcome, "unreadable")) // listed, with the reason
}

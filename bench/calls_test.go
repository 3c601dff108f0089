package bench_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
)

func TestCallLogRoundTrip(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	calls, err := bench.ReadCalls(path)
	is.NoErr(err)
	is.Equal(len(calls), 0) // a missing log is no calls

	want := []bench.Call{
		{Prog: "bd", Argv: []string{"ready", "--limit", "0", "--json"}, Dir: "/p", Parent: "ralphd"},
		{Prog: "bd", Argv: []string{"close", "b-1", "--reason", "tests pass\n(exit 0)"}, Dir: "/p", Parent: "ralphd", Guarded: true, Issue: "b-1"},
		{Prog: "git", Argv: []string{"rev-parse", "HEAD"}, Dir: "/p", Parent: "bd"},
		{Prog: "bd", Argv: []string{"show", "b-1", "--json"}, Dir: "/p", Parent: "sh", Issue: "b-1"},
	}
	for _, c := range want {
		is.NoErr(bench.AppendCall(path, c))
	}
	got, err := bench.ReadCalls(path)
	is.NoErr(err)
	is.Equal(got, want)

	tests := []struct {
		call bench.Call
		want string
	}{
		{want[0], "ralphd"},
		{want[1], "agent"}, // through the guard
		{want[2], "bd"},    // git run by bd itself
		{want[3], "agent"}, // RALPH_ISSUE_ID set: the bash loop's agent
	}
	for _, tt := range tests {
		is.Equal(tt.call.Origin(), tt.want)
	}
	git := bench.Filter(got, func(c bench.Call) bool { return c.Prog == "git" })
	is.Equal(len(git), 1)
	is.Equal(git[0].Argv[0], "rev-parse")
}

func TestAppendCallConcurrent(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			long := make([]string, 200) // a line longer than one small write
			for j := range long {
				long[j] = "argument-that-takes-some-room"
			}
			if err := bench.AppendCall(path, bench.Call{Prog: "bd", Argv: append([]string{"list"}, long...), Parent: string(rune('a' + i))}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := bench.ReadCalls(path) // every line parses: none interleaved
	is.NoErr(err)
	is.Equal(len(got), 20)
}

func TestReadCallsRejectsGarbage(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	is.NoErr(os.WriteFile(path, []byte("{\"prog\":\"bd\"}\nnot json\n"), 0o600))
	_, err := bench.ReadCalls(path)
	is.True(err != nil)
}

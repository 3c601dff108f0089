package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/text"
)

func TestParseEpoch(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "1763750000.123456789\n", want: time.Unix(1763750000, 123456789)},
		{in: "1763750000.5", want: time.Unix(1763750000, 500000000)},
		{in: "1763750000", want: time.Unix(1763750000, 0)},
		{in: "x.1", wantErr: true},
		{in: "1.x", wantErr: true},
	}
	for _, tt := range tests {
		is := is.New(t)
		got, err := parseEpoch(tt.in)
		if tt.wantErr {
			is.True(err != nil)
			continue
		}
		is.NoErr(err)
		is.True(got.Equal(tt.want))
	}
}

func TestFormatting(t *testing.T) {
	is := is.New(t)
	is.Equal(thousands(10), "10")
	is.Equal(thousands(1000), "1,000")
	is.Equal(thousands(10000000), "10,000,000")
	is.Equal(fmtDur(580*time.Millisecond), "580.0 ms")
	is.Equal(fmtDur(6660*time.Microsecond), "6.66 ms")
	is.Equal(fmtDur(41*time.Microsecond), "41 µs")
	is.Equal(fmtDur(2910*time.Millisecond), "2.91 s")
	is.Equal(text.ShellQuote("plain-arg_1.2"), "plain-arg_1.2")
	is.Equal(text.ShellQuote(`bd close "$X"`), `'bd close "$X"'`)
	is.Equal(text.ShellQuote("it's"), `'it'\''s'`)
	is.Equal(text.ShellQuote(""), "''")
}

func TestArgvCounts(t *testing.T) {
	is := is.New(t)
	calls := []bench.Call{
		{Prog: "bd", Argv: []string{"list", "--json"}},
		{Prog: "bd", Argv: []string{"ready", "--json"}},
		{Prog: "bd", Argv: []string{"ready", "--json"}},
	}
	is.Equal(argvCounts(calls), []string{"2 × `bd ready --json`", "1 × `bd list --json`"})
}

func TestPerfLine(t *testing.T) {
	is := is.New(t)
	m := perfLineRE.FindStringSubmatch("    36.42%     0.00%  [.] github.com/ralphd/ralphd/internal/modes.(*Loop).Build")
	is.True(m != nil)
	is.Equal(m[1], "36.42")
	is.Equal(m[3], "github.com/ralphd/ralphd/internal/modes.(*Loop).Build")
	is.True(interesting.MatchString(m[3]))
	is.True(!interesting.MatchString("runtime.mallocgc"))
	is.True(perfLineRE.FindStringSubmatch("# Samples: 3K of event 'cpu-clock'") == nil)
}

// TestMeasureOwnCPU checks the zombie trick: a shell that only waits for
// a busy child has almost no CPU of its own, while its total (the child's
// included) is larger.
func TestMeasureOwnCPU(t *testing.T) {
	is := is.New(t)
	busy := `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`
	cmd := command(context.Background(), os.Environ(), "", "sh", "-c", "sh -c '"+busy+"'; exit 3")
	m, err := measure(cmd, measureOptions{Capture: true, Sample: 5 * time.Millisecond})
	is.NoErr(err)
	is.Equal(m.Exit, 3)
	is.True(m.TotalCPU > m.OwnCPU) // the child's CPU is in the total only
	is.True(m.Wall > 0)
	is.True(m.PeakRSS > 0)
}

func TestRunReportsFailure(t *testing.T) {
	is := is.New(t)
	out, err := run(context.Background(), os.Environ(), "", "sh", "-c", "echo boom; exit 1")
	is.True(err != nil)
	is.True(strings.Contains(out, "boom"))
	is.True(strings.Contains(err.Error(), "boom"))
}

// TestBdrec builds bdrec, installs it as bd and checks that it records the
// call and runs the real program in its place.
func TestBdrec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	is := is.New(t)
	dir := t.TempDir()
	bd := filepath.Join(dir, "bd")
	build := exec.Command("go", "build", "-o", bd, "github.com/ralphd/ralphd/bench/cmd/bdrec")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build bdrec: %v\n%s", err, out)
	}
	log := filepath.Join(dir, "calls.jsonl")
	real := filepath.Join(dir, "real-bd")
	is.NoErr(os.WriteFile(real, []byte("#!/bin/sh\necho \"real: $*\"\nexit 4\n"), 0o755))

	env := append(os.Environ(), "BENCH_CALL_LOG="+log, "BENCH_REAL_BD="+real, "RALPH_ISSUE_ID=b-7", "RALPHD_GUARD_MODE=build")
	cmd := exec.Command(bd, "close", "b-7", "--reason", "two words")
	cmd.Env, cmd.Dir = env, dir
	got, err := cmd.Output()
	var ee *exec.ExitError
	is.True(err != nil && errors.As(err, &ee) && ee.ExitCode() == 4) // the real program's exit code
	is.Equal(string(got), "real: close b-7 --reason two words\n")

	calls, err := bench.ReadCalls(log)
	is.NoErr(err)
	is.Equal(len(calls), 1)
	is.Equal(calls[0].Prog, "bd")
	is.Equal(calls[0].Argv, []string{"close", "b-7", "--reason", "two words"})
	is.Equal(calls[0].Issue, "b-7")
	is.True(calls[0].Guarded)
	is.Equal(calls[0].Origin(), "agent")
	wd, _ := filepath.EvalSymlinks(dir)
	cd, _ := filepath.EvalSymlinks(calls[0].Dir)
	is.Equal(cd, wd)

	// Without the real program's path it refuses, saying what to set.
	cmd = exec.Command(bd, "ready")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	msg, err := cmd.CombinedOutput()
	is.True(err != nil)
	is.True(strings.Contains(string(msg), "BENCH_REAL_BD"))
}

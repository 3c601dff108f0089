package logjsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestMain doubles as a helper process for the cross-process test.
// bdCallData is the shape of a bd_call event's data as the guard writes it
// (state.BDCall), with the fields these tests use.
type bdCallData struct {
	Argv      []string `json:"argv"`
	Mode      string   `json:"mode"`
	Allowed   bool     `json:"allowed"`
	ExitCode  *int     `json:"exit_code,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Rule      string   `json:"rule,omitempty"`
	Iteration int      `json:"iteration,omitempty"`
	IssueID   string   `json:"issue_id,omitempty"`
}

func TestMain(m *testing.M) {
	if os.Getenv("LOGJSONL_HELPER") == "append" {
		os.Exit(appendHelper())
	}
	os.Exit(m.Run())
}

// appendHelper appends LOGJSONL_N bd_call records to LOGJSONL_PATH, as the
// bd guard would.
func appendHelper() int {
	n, _ := strconv.Atoi(os.Getenv("LOGJSONL_N"))
	id := os.Getenv("LOGJSONL_ID")
	for i := range n {
		exit := i % 3
		data := bdCallData{Argv: []string{"bd", "update", id, "--notes", strings.Repeat("n", i*37%5000)},
			Mode: "build", Allowed: i%5 != 0, ExitCode: &exit, IssueID: id, Iteration: i}
		if err := AppendMeta(os.Getenv("LOGJSONL_PATH"), EventBDCall, data, time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func TestCreate(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), "projects", "abc", "logs")
	now := time.Date(2026, 1, 28, 15, 30, 5, 0, time.UTC)
	base := now.Local().Format(FileTimeLayout)

	var names []string
	for range 3 {
		w, err := Create(dir, now, 0)
		is.NoErr(err)
		names = append(names, filepath.Base(w.Path()))
		is.NoErr(w.Close())
	}
	is.Equal(names, []string{base + ".log", base + "-1.log", base + "-2.log"}) // a taken name gets a suffix

	info, err := os.Stat(filepath.Join(dir, names[0]))
	is.NoErr(err)
	is.Equal(info.Mode().Perm(), fs.FileMode(0o600)) // logs are private
	info, err = os.Stat(dir)
	is.NoErr(err)
	is.Equal(info.Mode().Perm(), fs.FileMode(0o700)) // and so is their directory
}

func TestCreateIsAppendOnly(t *testing.T) {
	is := is.New(t)
	w, err := CreateWith(t.TempDir(), testTime, 0, Options{Now: fixedClock})
	is.NoErr(err)
	defer w.Close()
	is.NoErr(w.Meta(EventRunStart, nil))
	is.NoErr(AppendMeta(w.Path(), EventBDCall, Fields{{"allowed", true}}, testTime))
	is.NoErr(w.Meta(EventRunEnd, nil))
	got, err := os.ReadFile(w.Path())
	is.NoErr(err)
	want := `{"type":"loop_meta","event":"run_start","timestamp":"2026-01-28T15:30:00Z","data":{}}` + "\n" +
		`{"type":"loop_meta","event":"bd_call","timestamp":"2026-01-28T15:30:00Z","data":{"allowed":true}}` + "\n" +
		`{"type":"loop_meta","event":"run_end","timestamp":"2026-01-28T15:30:00Z","data":{}}` + "\n"
	is.Equal(string(got), want) // the writer appends after the other process's record, never over it
}

func TestAppendMetaNeedsTheFile(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "missing.log")
	err := AppendMeta(path, EventBDCall, nil, testTime)
	is.True(err != nil && strings.Contains(err.Error(), "open run log")) // says what failed
	is.True(errors.Is(err, fs.ErrNotExist))                              // and wraps fs.ErrNotExist
	_, statErr := os.Stat(path)
	is.True(errors.Is(statErr, fs.ErrNotExist)) // no stray log file was created
}

func touch(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func remainingNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func TestRetention(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.Local)
	name := func(minutes int, suffix string) string {
		return start.Add(time.Duration(minutes)*time.Minute).Format(FileTimeLayout) + suffix + ".log"
	}
	now := start.Add(24 * time.Hour)
	newName := now.Format(FileTimeLayout) + ".log"

	tests := []struct {
		name      string
		files     []string // .log files to create, in any order
		retention int
		want      []string // the .log files left, besides the new one
	}{
		{
			name:      "keeps the newest",
			files:     []string{name(1, ""), name(2, ""), name(3, ""), name(4, ""), name(5, ""), name(6, "")},
			retention: 3,
			want:      []string{name(5, ""), name(6, "")},
		},
		{
			name:      "suffixes sort by number after the plain name",
			files:     []string{name(1, "-2"), name(1, "-10"), name(1, ""), name(1, "-1"), name(0, "")},
			retention: 3,
			want:      []string{name(1, "-2"), name(1, "-10")},
		},
		{
			name:      "0 means the default of 10",
			files:     []string{name(1, ""), name(2, ""), name(3, ""), name(4, ""), name(5, ""), name(6, ""), name(7, ""), name(8, ""), name(9, ""), name(10, ""), name(11, "")},
			retention: 0,
			want:      []string{name(3, ""), name(4, ""), name(5, ""), name(6, ""), name(7, ""), name(8, ""), name(9, ""), name(10, ""), name(11, "")},
		},
		{
			name:      "negative keeps everything",
			files:     []string{name(1, ""), name(2, ""), name(3, "")},
			retention: -1,
			want:      []string{name(1, ""), name(2, ""), name(3, "")},
		},
		{
			name:      "1 keeps only the new log",
			files:     []string{name(1, ""), name(2, "")},
			retention: 1,
			want:      nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			for _, f := range tt.files {
				touch(t, filepath.Join(dir, f), now) // same mtime: the names decide
			}
			// Files that are not logs are never touched.
			others := []string{"notes.txt", "old.log.gz", "metadata.json"}
			for _, f := range others {
				touch(t, filepath.Join(dir, f), start.Add(-time.Hour))
			}
			is.NoErr(os.Mkdir(filepath.Join(dir, "archive.log"), 0o700))

			w, err := CreateWith(dir, now, tt.retention, Options{})
			is.NoErr(err)
			defer w.Close()
			is.Equal(filepath.Base(w.Path()), newName)
			removed, err := w.Retention()
			is.NoErr(err)
			is.Equal(len(removed), len(tt.files)-len(tt.want)) // reports what it deleted

			want := slices.Concat(tt.want, []string{newName}, others, []string{"archive.log"})
			slices.Sort(want)
			is.Equal(remainingNames(t, dir), want)
		})
	}
}

func TestPruneOrdersOtherNamesByModTime(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.Local)
	touch(t, filepath.Join(dir, "ancient.log"), base.Add(-48*time.Hour))
	touch(t, filepath.Join(dir, base.Format(FileTimeLayout)+".log"), base)
	touch(t, filepath.Join(dir, "recent.log"), base.Add(time.Hour))
	removed, err := Prune(dir, 2, "")
	is.NoErr(err)
	is.Equal(removed, []string{filepath.Join(dir, "ancient.log")}) // the oldest by mtime goes
	is.Equal(remainingNames(t, dir), []string{base.Format(FileTimeLayout) + ".log", "recent.log"})
}

// linePipe feeds lines into a CopyLines call through an io.Pipe.
func linePipe(t *testing.T, w *Writer, stream string, lines []string, wg *sync.WaitGroup) {
	pr, pw := io.Pipe()
	wg.Go(func() {
		if err := w.CopyLines(stream, pr); err != nil {
			t.Errorf("CopyLines: %v", err)
		}
	})
	wg.Go(func() {
		for _, l := range lines {
			if _, err := io.WriteString(pw, l); err != nil {
				t.Errorf("pipe: %v", err)
				return
			}
		}
		pw.Close()
	})
}

func TestConcurrentWriters(t *testing.T) {
	is := is.New(t)
	const maxLine = 4096
	w, err := CreateWith(t.TempDir(), testTime, 0, Options{MaxLine: maxLine})
	is.NoErr(err)

	var wg sync.WaitGroup
	// Three stdout readers with JSON lines under the bound.
	const stdoutReaders, linesEach = 3, 400
	for g := range stdoutReaders {
		var lines []string
		for n := range linesEach {
			lines = append(lines, fmt.Sprintf(`{"type":"assistant","g":%d,"n":%d,"pad":"%s"}`+"\n", g, n, strings.Repeat("p", (n*131)%3000)))
		}
		linePipe(t, w, StreamStdout, lines, &wg)
	}
	// One stderr reader with long lines that are chunked, split across writes.
	var stderrIn strings.Builder
	var stderrLines []string
	for n := range 100 {
		l := fmt.Sprintf("stderr %d %s\n", n, strings.Repeat("é", (n*997)%9000))
		stderrIn.WriteString(l)
		stderrLines = append(stderrLines, l)
	}
	linePipe(t, w, StreamStderr, stderrLines, &wg)
	// Loop events from several goroutines.
	const metaWriters, metaEach = 4, 100
	for g := range metaWriters {
		wg.Go(func() {
			for n := range metaEach {
				if err := w.Meta(EventDecision, Decision{Iteration: g, Decision: strconv.Itoa(n), Reason: strings.Repeat("r", n*50)}); err != nil {
					t.Errorf("Meta: %v", err)
				}
			}
		})
	}
	wg.Wait()
	is.NoErr(w.Close())

	log, err := os.ReadFile(w.Path())
	is.NoErr(err)
	lines := checkAllJSON(t, log) // every line is a whole JSON object

	next := make([]int, stdoutReaders)
	metas := make([]int, metaWriters)
	var stderrOut strings.Builder
	for line := range bytes.Lines(log) {
		var rec struct {
			Type  string `json:"type"`
			G, N  int
			Line  string `json:"line"`
			Final *bool  `json:"final"`
			Data  Decision
		}
		is.NoErr(json.Unmarshal(line, &rec))
		switch rec.Type {
		case "assistant":
			is.Equal(rec.N, next[rec.G]) // each reader's lines arrive whole and in order
			next[rec.G]++
		case TypeAgentOutput:
			stderrOut.WriteString(rec.Line)
			if rec.Final == nil || *rec.Final {
				stderrOut.WriteString("\n")
			}
		case TypeMeta:
			is.Equal(rec.Data.Decision, strconv.Itoa(metas[rec.Data.Iteration])) // each writer's events in order
			metas[rec.Data.Iteration]++
		default:
			t.Fatalf("unexpected record %.100s", line)
		}
	}
	for g := range next {
		is.Equal(next[g], linesEach) // no stdout line lost
	}
	for g := range metas {
		is.Equal(metas[g], metaEach) // no event lost
	}
	is.Equal(stderrOut.String(), stderrIn.String()) // stderr chunks reassemble to the input
	t.Logf("%d lines", lines)
}

func TestAppendMetaFromOtherProcesses(t *testing.T) {
	is := is.New(t)
	w, err := CreateWith(t.TempDir(), testTime, 0, Options{})
	is.NoErr(err)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const procs, each = 4, 100
	var cmds []*exec.Cmd
	for p := range procs {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), "LOGJSONL_HELPER=append", "LOGJSONL_PATH="+w.Path(),
			"LOGJSONL_N="+strconv.Itoa(each), "LOGJSONL_ID=bd-"+strconv.Itoa(p))
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		is.NoErr(cmd.Start())
		cmds = append(cmds, cmd)
	}
	// Meanwhile this process writes agent output and events.
	var wg sync.WaitGroup
	var lines []string
	for n := range 1000 {
		lines = append(lines, fmt.Sprintf(`{"type":"user","n":%d,"pad":"%s"}`+"\n", n, strings.Repeat("u", n*7%3000)))
	}
	linePipe(t, w, StreamStdout, lines, &wg)
	wg.Go(func() {
		for n := range 300 {
			if err := w.Meta(EventSweep, Fields{{"n", n}}); err != nil {
				t.Errorf("Meta: %v", err)
			}
		}
	})
	for _, cmd := range cmds {
		is.NoErr(cmd.Wait())
	}
	wg.Wait()
	is.NoErr(w.Close())

	log, err := os.ReadFile(w.Path())
	is.NoErr(err)
	checkAllJSON(t, log)
	seen := map[string]int{}
	users, sweeps := 0, 0
	for line := range bytes.Lines(log) {
		var rec struct {
			Type  string
			Event string
			N     int
			Data  bdCallData
		}
		is.NoErr(json.Unmarshal(line, &rec))
		switch {
		case rec.Type == "user":
			is.Equal(rec.N, users) // in order, none lost
			users++
		case rec.Event == EventSweep:
			sweeps++
		case rec.Event == EventBDCall:
			is.Equal(rec.Data.Iteration, seen[rec.Data.IssueID]) // each process's records whole and in order
			seen[rec.Data.IssueID]++
		}
	}
	is.Equal(users, 1000)
	is.Equal(sweeps, 300)
	is.Equal(len(seen), procs)
	for _, n := range seen {
		is.Equal(n, each) // every appended record of each process is there
	}
}

// writeSampleRun writes a three-iteration run log like ralphd would, with
// the fixture streams as agent output, and returns its path.
func writeSampleRun(t testing.TB, dir string) string {
	t.Helper()
	clock := testTime
	w, err := CreateWith(dir, testTime, 0, Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	fixture := func(name string) io.Reader {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		must(err)
		return bytes.NewReader(b)
	}
	cost1, cost2 := 0.0871345, 0.0412
	exit0 := 0
	must(w.Meta(EventRunStart, RunStart{SchemaVersion: SchemaVersion, Mode: "build", MaxIterations: 5,
		Version: "v0.1.0", ProjectID: "abc123def456", Agent: "claude", MaxAttempts: 3}))

	must(w.Meta(EventIterationStart, IterationStart{Iteration: 1, IssueID: "bd-a1b2", Mode: "build",
		IssueTitle: "Add retry backoff", Attempt: 2, MaxAttempts: 3}))
	must(w.CopyLines(StreamStdout, fixture("claude-success.jsonl")))
	must(w.CopyLines(StreamStderr, strings.NewReader("npm warn deprecated something\n")))
	must(AppendMeta(w.Path(), EventBDCall, bdCallData{Argv: []string{"bd", "close", "bd-a1b2", "--reason", "Implemented retry backoff; tests pass"},
		Mode: "build", Allowed: true, ExitCode: &exit0, Iteration: 1}, clock))
	clock = clock.Add(45 * time.Second)
	must(w.Meta(EventIterationEnd, IterationEnd{Iteration: 1, ExitCode: 0, DurationSeconds: 45, Outcome: "ok",
		IssueID: "bd-a1b2", Attempt: 2, IssueClosed: true, Turns: 3, CostUSD: &cost1}))

	must(w.Meta(EventIterationStart, IterationStart{Iteration: 2, IssueID: "bd-c3d4", Mode: "build",
		IssueTitle: "Fix flaky test", Attempt: 1, MaxAttempts: 3}))
	must(w.CopyLines(StreamStdout, fixture("claude-error-max-turns.jsonl")))
	must(AppendMeta(w.Path(), EventBDCall, bdCallData{Argv: []string{"bd", "delete", "bd-c3d4", "--force"},
		Mode: "build", Allowed: false, Reason: "BUILD may not delete issues", Iteration: 2}, clock))
	must(w.Meta(EventViolation, Violation{Iteration: 2, IssueID: "bd-c3d4", Mode: "build", Kind: "priority_changed",
		Detail: "priority 2 -> 0", Command: "bd update bd-c3d4 --priority 0"}))
	clock = clock.Add(30 * time.Second)
	must(w.Meta(EventIterationEnd, IterationEnd{Iteration: 2, ExitCode: 1, DurationSeconds: 30, Outcome: "agent_error",
		Reason: "max turns", IssueID: "bd-c3d4", Attempt: 1, Turns: 2, CostUSD: &cost2}))

	must(w.Meta(EventIterationStart, IterationStart{Iteration: 3, IssueID: "bd-c3d4", Mode: "build", Attempt: 2, MaxAttempts: 3}))
	must(w.CopyLines(StreamStdout, fixture("real-claude-2.1.197-not-logged-in.jsonl")))
	clock = clock.Add(12 * time.Second)
	must(w.Meta(EventIterationEnd, IterationEnd{Iteration: 3, ExitCode: 1, DurationSeconds: 12, Outcome: "fatal_config",
		Reason: "Not logged in"}))
	must(w.Meta(EventRunEnd, RunEnd{Iterations: 3, Outcome: "error", DurationSeconds: 87, Reason: "agent is not logged in",
		IssuesClosed: 1}))
	return w.Path()
}

// jqPath finds jq, which the issue asks to test with. It may be missing
// only outside CI.
func jqPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("jq")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("jq is required in CI: %v", err)
		}
		t.Skip("jq not installed")
	}
	return p
}

func TestJQQueries(t *testing.T) {
	jq := jqPath(t)
	is := is.New(t)
	logs := filepath.Join(t.TempDir(), "logs")
	path := writeSampleRun(t, logs)
	ctx := t.Context()

	run := func(name string, args ...string) string {
		t.Helper()
		f, err := os.Open(path)
		is.NoErr(err)
		defer f.Close()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = filepath.Dir(logs)
		cmd.Stdin = f
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %q: %v: %s", name, args, err, stderr.String())
		}
		return string(out)
	}

	// Every line parses for jq.
	compact := run(jq, "-c", ".")
	log, err := os.ReadFile(path)
	is.NoErr(err)
	is.Equal(strings.Count(compact, "\n"), bytes.Count(log, []byte("\n"))) // jq read every line as one value

	// grep '"type":"loop_meta"' logs/*.log | …
	metas := run("sh", "-c", `grep '"type":"loop_meta"' logs/*.log | wc -l`)
	is.Equal(strings.TrimSpace(metas), "11") // run_start, 3×(start, end), 2 bd_call, violation, run_end

	// jq -s '[.[] | select(.event=="iteration_end") | .data.duration_seconds] | add' < run.log
	sum := run(jq, "-s", `[.[] | select(.event=="iteration_end") | .data.duration_seconds] | add`)
	is.Equal(sum, "87\n") // 45 + 30 + 12

	// jq 'select(.event=="iteration_end" and .data.exit_code != 0)' < run.log
	failed := run(jq, `select(.event=="iteration_end" and .data.exit_code != 0)`)
	dec := json.NewDecoder(strings.NewReader(failed))
	var iterations []int
	for dec.More() {
		var rec struct {
			Event string
			Data  IterationEnd
		}
		is.NoErr(dec.Decode(&rec))
		is.Equal(rec.Event, EventIterationEnd)
		iterations = append(iterations, rec.Data.Iteration)
	}
	is.Equal(iterations, []int{2, 3}) // the two failed iterations
}

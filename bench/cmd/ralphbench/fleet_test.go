package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/bench"
)

// TestFleetAgent runs section 11's agent in a scratch repository with a
// bd that records its arguments: each run leaves a record of its own with
// a start and an end line (the end after its close, also when the close
// or the commit fails), which countRecords and readSpan read; the
// agent's exit is its commit's and close's.
func TestFleetAgent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	records := filepath.Join(root, "rec ords") // a space: the path is quoted
	bin := filepath.Join(root, "bin")
	repo := filepath.Join(root, "repo")
	for _, d := range []string{records, bin, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fakeBD := "#!/bin/sh\necho \"$*\" >> " + filepath.Join(root, "bd-calls") + "\nexit ${BD_EXIT:-0}\n"
	if err := os.WriteFile(filepath.Join(bin, "bd"), []byte(fakeBD), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
	if _, err := run(context.Background(), env, repo, "git", "init", "-q"); err != nil {
		t.Fatal(err)
	}
	agent := fleetAgent(records)
	for _, tc := range []struct {
		issue, bdExit string
		wantExit      int
	}{
		{"fa-1", "0", 0},
		{"fa-2", "1", 1}, // its close fails
		{"fa-1", "0", 1}, // worked again: nothing to commit, no close
	} {
		cmd := exec.Command("sh", "-c", strings.Replace(agent, "sleep 2", "sleep 0", 1))
		cmd.Dir, cmd.Env = repo, append(env, "RALPH_ISSUE_ID="+tc.issue, "BD_EXIT="+tc.bdExit)
		out, err := cmd.CombinedOutput()
		exit := 0
		if ee, ok := err.(*exec.ExitError); ok {
			exit = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if exit != tc.wantExit {
			t.Errorf("%s: exit %d, want %d\n%s", tc.issue, exit, tc.wantExit, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(records, "w-*"))
	if len(files) != 3 {
		t.Fatalf("records %v, want one per run", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "start ") || !strings.HasPrefix(lines[1], "end ") {
			t.Errorf("%s: %q, want a start and an end line", f, b)
		}
	}
	var w workersResult
	if err := countRecords(records, &w); err != nil {
		t.Fatal(err)
	}
	if w.Won != 3 || w.WorkedTwice != 1 || w.Overlapping != 0 {
		t.Errorf("counted %+v, want 3 runs, fa-1 worked twice, none at once", w)
	}
	if sp, err := readSpan(records); err != nil || sp.issues != 2 || sp.first.IsZero() || !sp.last.After(sp.first) {
		t.Errorf("readSpan = %+v, %v; want 2 issues, first start before last end", sp, err)
	}
	calls, _ := os.ReadFile(filepath.Join(root, "bd-calls"))
	if strings.Count(string(calls), "close fa-1 --reason") != 1 || strings.Count(string(calls), "close fa-2 --reason") != 1 {
		t.Errorf("bd calls:\n%s", calls)
	}
}

// TestFleetSection: 11a is sixteen workers' wall over one worker's, met at
// 0.1 or below; 11b is met only with no issue worked twice, at once or not.
func TestFleetSection(t *testing.T) {
	for _, tc := range []struct {
		sixteen, one       time.Duration
		twice, overlapping int
		value              string
		wall, double       bench.Verdict
	}{
		{10 * time.Second, 200 * time.Second, 0, 0, "0.050", bench.Met, bench.Met},
		{80 * time.Second, 200 * time.Second, 0, 0, "0.400", bench.Missed, bench.Met},
		{10 * time.Second, 200 * time.Second, 1, 0, "0.050", bench.Met, bench.Missed},
		{10 * time.Second, 200 * time.Second, 1, 1, "0.050", bench.Met, bench.Missed},
	} {
		r := &fleetResult{BD: "stand-in bd, its server mode", Issues: 48,
			Sixteen: fleetRun{Wall: tc.sixteen, WorkedTwice: tc.twice, Overlapping: tc.overlapping, Issues: 48},
			One:     fleetRun{Wall: tc.one, Issues: 48}}
		s := fleetSection(r, "cmd")
		if len(s.Figures) != 2 {
			t.Fatalf("figures: %+v", s.Figures)
		}
		a, b := s.Figures[0], s.Figures[1]
		if !strings.HasPrefix(a.Value, tc.value) || a.Verdict != tc.wall || b.Verdict != tc.double || a.Command != "cmd" {
			t.Errorf("%v ÷ %v, %d twice: %+v", tc.sixteen, tc.one, tc.twice, s.Figures)
		}
		if !strings.Contains(a.Name, "stand-in bd, its server mode") {
			t.Errorf("11a does not name its bd: %q", a.Name)
		}
	}
	s := fleetSection(&fleetResult{BD: "stand-in bd, its server mode", Why: "no -dolt given"}, "cmd")
	if !strings.Contains(s.Body, "A real bd was given, but no -dolt given.") {
		t.Errorf("the section does not say why it used the stand-in:\n%s", s.Body)
	}
}

func TestFreePort(t *testing.T) {
	p, err := freePort()
	if err != nil || p == "" || p == "0" {
		t.Fatalf("freePort() = %q, %v", p, err)
	}
}

// TestReadSpan: the first start and the last end across every record,
// and a bad line is an error rather than a zero.
func TestReadSpan(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"w-a-1": "start a 300\nend a 900\n",
		"w-b-2": "start b 100\nend b 500\n",
		"w-a-3": "start a 950\nend a 1200\n",
		"other": "not a record\n", // not w-*: not read
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := readSpan(dir)
	if err != nil || sp.issues != 2 || sp.first.UnixNano() != 100 || sp.last.UnixNano() != 1200 {
		t.Errorf("readSpan = %+v, %v; want 2 issues from 100 to 1200", sp, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "w-bad"), []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSpan(dir); err == nil {
		t.Error("a bad record was read as nothing")
	}
}

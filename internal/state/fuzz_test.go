package state

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// addSeeds adds testdata files (data recorded from the bash loop's format,
// ralphd's own writes and /proc) as fuzz seeds, whole and line by line.
func addSeeds(f *testing.F, files ...string) {
	f.Helper()
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(line)
		}
	}
}

func FuzzParseAttempts(f *testing.F) {
	addSeeds(f, "bash-attempts.txt")
	f.Add([]byte("bd-a:1\nbd-a:2\n\x00\nbd-b:\n:3\r\n  c:4  \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		counts, bad := ParseAttempts(data)
		// Nothing is lost: every non-blank line is a count or a bad line.
		lines := 0
		for l := range strings.SplitSeq(string(data), "\n") {
			if strings.Trim(l, " \t\r") != "" {
				lines++
			}
		}
		if len(counts)+len(bad) != lines {
			t.Fatalf("%d counts + %d bad lines != %d lines", len(counts), len(bad), lines)
		}
		seen := map[string]bool{}
		for _, c := range counts {
			if c.Count < 0 || seen[c.IssueID] || validIssueID(c.IssueID) != nil {
				t.Fatalf("bad count %+v", c)
			}
			seen[c.IssueID] = true
		}
		// What ralphd writes reads back the same, with no bad lines.
		again, bad2 := ParseAttempts(FormatAttempts(counts))
		if len(bad2) != 0 || len(again) != len(counts) {
			t.Fatalf("round trip: %v, bad %q", again, bad2)
		}
		for i := range again {
			if again[i] != counts[i] {
				t.Fatalf("round trip: %v != %v", again, counts)
			}
		}
	})
}

func FuzzParseHistoryLine(f *testing.F) {
	addSeeds(f, "history.jsonl")
	f.Add([]byte(`{"cost_usd":null,"tokens":{},"extra":{"a":[1,{"b":null}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ParseHistoryLine(line)
		if err != nil {
			return
		}
		first, err := json.Marshal(r)
		if err != nil {
			return // e.g. a time with a year out of range: not writable, not a crash
		}
		if bytes.ContainsAny(first, "\n\r") {
			t.Fatalf("encoded record has a line break: %q", first)
		}
		r2, err := ParseHistoryLine(first)
		if err != nil {
			t.Fatalf("re-parse %s: %v", first, err)
		}
		second, err := json.Marshal(r2)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n%s\n%s (%v)", first, second, err)
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	addSeeds(f, "bash-metadata.json")
	f.Add([]byte(`{"project_id":"x","other":{"nested":[1,2,3]},"n":1.5e3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMetadata(data)
		if err != nil {
			return
		}
		first, err := m.Encode()
		if err != nil {
			t.Fatalf("encode parsed metadata: %v", err)
		}
		m2, err := ParseMetadata(first)
		if err != nil {
			t.Fatalf("re-parse %s: %v", first, err)
		}
		if len(m2.Other) != len(m.Other) {
			t.Fatalf("unknown keys lost: %v vs %v", m.Other, m2.Other)
		}
		second, err := m2.Encode()
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n%s\n%s (%v)", first, second, err)
		}
	})
}

func FuzzParseRunning(f *testing.F) {
	addSeeds(f, "running.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRunning(data)
		if err != nil {
			return
		}
		first, err := json.Marshal(r)
		if err != nil {
			return
		}
		r2, err := ParseRunning(first)
		if err != nil {
			t.Fatalf("re-parse %s: %v", first, err)
		}
		second, _ := json.Marshal(r2)
		if !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n%s\n%s", first, second)
		}
	})
}

func FuzzParseLockInfo(f *testing.F) {
	addSeeds(f, "lock.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseLockInfo(data)
		if err != nil {
			return
		}
		msg := (&LockedError{PID: info.PID, Mode: info.Mode, Since: info.Since}).Error()
		if !strings.HasPrefix(msg, "another ralphd (") || !strings.HasSuffix(msg, ") is running on this project") {
			t.Fatalf("message %q", msg)
		}
	})
}

// bdStdout is the stdout section of a recorded bd fixture
// (internal/beads/testdata, copied from ../shared/beads-contract).
func bdStdout(f *testing.F, name string) []byte {
	f.Helper()
	data, err := os.ReadFile(filepath.Join("..", "beads", "testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	_, out, ok := bytes.Cut(data, []byte("=== STDOUT ===\n"))
	out, _, ok2 := bytes.Cut(out, []byte("=== STDERR ==="))
	if !ok || !ok2 {
		f.Fatalf("%s: no stdout section", name)
	}
	return out
}

// FuzzParseBaseline checks that a baseline file never panics the parser,
// that only a JSON object parses, and that what ralphd writes of a parsed
// baseline reads back the same. Seeds are baselines of the recorded
// trackers (bd list --all, bd show with comments).
func FuzzParseBaseline(f *testing.F) {
	for _, fx := range []string{"list-all-json.txt", "show-with-comments-json.txt", "show-all-fields-json.txt", "list-empty.txt"} {
		issues, err := beads.ParseIssues(bdStdout(f, fx))
		if err != nil {
			f.Fatalf("%s: %v", fx, err)
		}
		b, err := json.Marshal(Baseline{RunID: "20261124-013000", Iteration: 3, IssueID: "t-a", TakenAt: time.Date(2026, 11, 24, 1, 30, 0, 0, time.UTC), Issues: issues})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, '\n'))
	}
	for _, s := range []string{`null`, `[]`, `{}`, `{"issues":null}`, `{"issues":[{"id":"x","created_at":"0000-01-01T00:00:00Z"}]}`, ` {"iteration":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBaseline(data)
		if err != nil {
			if !reflect.DeepEqual(b, Baseline{}) {
				t.Fatalf("error %v with a baseline %+v", err, b)
			}
			return
		}
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			t.Fatalf("%q parsed as a baseline", data)
		}
		first, err := json.Marshal(b)
		if err != nil {
			return // e.g. a time with a year out of range: not writable, not a crash
		}
		b2, err := ParseBaseline(first)
		if err != nil {
			t.Fatalf("re-parse %s: %v", first, err)
		}
		second, err := json.Marshal(b2)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n%s\n%s (%v)", first, second, err)
		}
	})
}

// FuzzParseJudgement checks an issue's judgement file the same way: only
// an object parses, and what ralphd writes reads back the same. Seeds are
// judgements ralphd wrote in the testdata tree.
func FuzzParseJudgement(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "attempts", "*.json"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{`null`, `{}`, `{"escalation":{"level":2},"next":{"model":"x"},"auto_fixed":["a"]}`, `{"escalation":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := ParseJudgement(data)
		if err != nil {
			return
		}
		first, err := json.Marshal(j)
		if err != nil {
			return
		}
		j2, err := ParseJudgement(first)
		if err != nil {
			t.Fatalf("re-parse %s: %v", first, err)
		}
		second, err := json.Marshal(j2)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n%s\n%s (%v)", first, second, err)
		}
	})
}

// FuzzParseReadWindows: a windows file never panics the parser, only a
// JSON object parses, and what ralphd writes of a parsed one reads back
// the same.
func FuzzParseReadWindows(f *testing.F) {
	at := time.Date(2026, 11, 24, 1, 30, 0, 0, time.UTC)
	b, err := json.Marshal(ReadWindows{RunID: "r", LastFull: at, Windows: []ReadWindow{{Iteration: 1, IssueID: "t-a", StartedAt: at, Closed: true}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{`null`, `[]`, `{}`, `{"windows":null}`, `{"windows":[{"iteration":1e400}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseReadWindows(data)
		if err != nil {
			if !reflect.DeepEqual(w, ReadWindows{}) {
				t.Fatalf("error %v with %+v", err, w)
			}
			return
		}
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			t.Fatalf("%q parsed as a windows file", data)
		}
		first, err := json.Marshal(w)
		if err != nil {
			return
		}
		w2, err := ParseReadWindows(first)
		if err != nil {
			t.Fatalf("re-parse %s: %v", first, err)
		}
		if second, err := json.Marshal(w2); err != nil || !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n%s\n%s (%v)", first, second, err)
		}
	})
}

// FuzzParseTrackerHeld: the kept reading and its delta never panic their
// parsers, and only a JSON object parses.
func FuzzParseTrackerHeld(f *testing.F) {
	at := time.Date(2026, 11, 24, 1, 30, 0, 0, time.UTC)
	for _, v := range []any{
		TrackerHeld{RunID: "r", TakenAt: at, Issues: []beads.Issue{{ID: "t-a", Title: "A", Labels: []string{"x"}}}},
		TrackerHeldDelta{TakenAt: at, PrevStart: at, Issues: []beads.Issue{{ID: "t-b"}}, Deleted: []string{"t-c"}},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`null`, `[]`, `{}`, `{"issues":null}`, `{"issues":[{"priority":1e400}]}`, `{"deleted":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		object := bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
		if h, err := ParseTrackerHeld(data); err == nil && !object {
			t.Fatalf("%q parsed as a kept reading: %+v", data, h)
		}
		if d, err := ParseTrackerHeldDelta(data); err == nil && !object {
			t.Fatalf("%q parsed as a kept delta: %+v", data, d)
		}
	})
}

// FuzzParseTreeWork: tree-work.json as ralphd writes it parses back; any
// input gives a record naming an issue, a commit and a tree, or an error
// and the zero record, never a panic.
func FuzzParseTreeWork(f *testing.F) {
	b, err := json.Marshal(TreeWork{IssueID: "t-a", Iteration: 2, RunID: "r", At: time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC),
		Head: "3177b12a", Tree: "4b825dc6"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{`null`, `[]`, `{}`, `{"issue_id":"t-a"}`, `{"issue_id":"t-a","head":"h","tree":"t","iteration":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseTreeWork(data)
		if err != nil {
			if w != (TreeWork{}) {
				t.Fatalf("error %v with a record %+v", err, w)
			}
			return
		}
		if w.IssueID == "" || w.Head == "" || w.Tree == "" {
			t.Fatalf("a record without an issue, commit or tree: %+v", w)
		}
	})
}

package state

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

package logjsonl

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	utc := time.Date(2026, 11, 23, 18, 59, 36, 0, time.UTC)
	local := time.Date(2026, 11, 23, 18, 59, 36, 0, time.Local)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"20261123T185936Z-5c602e8c", utc, true},
		{"20261123T185936Z-5c602e8c.log", utc, true},
		{"20261123T185936Z-5c602e8c.json", utc, true},
		{"20261123T185936Z", utc, true},
		{"20261123T185936-5286", utc, true}, // older build/plan report ID
		{"20261123T185936-5286.md", utc, true},
		{"2026-11-23T18-59-36", local, true}, // the bash loop's log name
		{"2026-11-23T18-59-36-2.log", local, true},
		{"2026-11-23T18-59-36-x.log", time.Time{}, false},
		{"20261123T185936Z-", time.Time{}, false},
		{"20261123T185936Z-XYZ", time.Time{}, false},
		{"20261323T185936Z-5c60", time.Time{}, false},
		{"notes.log", time.Time{}, false},
		{"", time.Time{}, false},
		{"2026", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseRunID(tt.in)
		if ok != tt.ok || (ok && !got.Equal(tt.want)) {
			t.Errorf("ParseRunID(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNewParsesBack(t *testing.T) {
	start := time.Date(2026, 11, 23, 19, 0, 40, 123456789, time.FixedZone("CET", 3600))
	id := NewRunID(start)
	if !strings.HasPrefix(id, "20261123T180040Z-") || len(id) != len(RunIDLayout)+9 {
		t.Fatalf("NewRunID = %q", id)
	}
	got, ok := ParseRunID(id)
	if !ok || !got.Equal(start.Truncate(time.Second)) {
		t.Fatalf("ParseRunID(NewRunID) = %v, %v", got, ok)
	}
	if NewRunID(start) == id {
		t.Fatal("two runs started at the same time got the same ID")
	}
}

func TestResolve(t *testing.T) {
	at := func(sec int) time.Time { return time.Date(2026, 11, 23, 18, 59, sec, 0, time.UTC) }
	mod := func(ms int) time.Time { return at(50).Add(time.Duration(ms) * time.Millisecond) }
	// Two runs started in the same second: the one written later is newer,
	// whatever their random suffixes say.
	es := []RunEntry{
		{ID: "20261123T185936Z-ffff0000", Start: at(36), Modified: mod(1)},
		{ID: "20261123T185936Z-0000ffff", Start: at(36), Modified: mod(2)},
		{ID: "20261123T185930-5286", Start: at(30), Modified: mod(0)},
	}
	tests := []struct {
		want, id, err string
	}{
		{"last", "20261123T185936Z-0000ffff", ""},
		{"latest", "20261123T185936Z-0000ffff", ""},
		{"20261123T185936Z-ffff0000", "20261123T185936Z-ffff0000", ""},
		{"20261123T185936Z-ffff0000.md", "20261123T185936Z-ffff0000", ""},
		{"20261123T185936Z-f", "20261123T185936Z-ffff0000", ""},
		{"20261123T1859", "", "matches 3 runs"},
		{"20261123T185936Z", "", "matches 2 runs"},
		{"20261123T185930", "20261123T185930-5286", ""},
		{"nope", "", `no run "nope"`},
	}
	for _, tt := range tests {
		got, err := ResolveRun(es, tt.want)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ResolveRun(%q) error = %v, want %q", tt.want, err, tt.err)
			}
			continue
		}
		if err != nil || got.ID != tt.id {
			t.Errorf("ResolveRun(%q) = %q, %v; want %q", tt.want, got.ID, err, tt.id)
		}
	}
	if _, err := ResolveRun(nil, "last"); !errors.Is(err, ErrNoRuns) {
		t.Errorf("ResolveRun(nil) error = %v", err)
	}
}

func TestResolveLegacyLogName(t *testing.T) {
	// A bash-loop log name (local time) finds the run started that second.
	start := time.Date(2026, 11, 23, 18, 59, 36, 0, time.Local)
	es := []RunEntry{{ID: NewRunID(start), Start: start}, {ID: NewRunID(start.Add(time.Minute)), Start: start.Add(time.Minute)}}
	got, err := ResolveRun(es, start.Format(LegacyLogLayout))
	if err != nil || got.ID != es[0].ID {
		t.Fatalf("ResolveRun = %q, %v", got.ID, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"20261123T185936Z-5c602e8c", "20261123T185936-5286", "2026-11-23T18-59-36-2.log", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseRunID(s)
		if !ok {
			return
		}
		// Whatever parses names a second, and a NewRunID ID for it parses back.
		if got.Nanosecond() != 0 {
			t.Fatalf("ParseRunID(%q) = %v has sub-second precision", s, got)
		}
		if back, ok := ParseRunID(NewRunID(got)); !ok || !back.Equal(got) {
			t.Fatalf("ParseRunID(NewRunID(%v)) = %v, %v", got, back, ok)
		}
	})
}

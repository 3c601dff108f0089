package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/bench"
)

func TestCallName(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"list", "--limit", "0", "--all", "--json"}, "list --all"},
		{[]string{"list", "--limit", "0", "--all", "--updated-after", "2026-01-01T00:00:00Z", "--json"}, "list --all --updated-after"},
		{[]string{"list", "--all", "--updated-after=2026-01-01T00:00:00Z"}, "list --all --updated-after"},
		{[]string{"show", "--json", "--include-comments", "b-1", "b-2"}, "show"},
		{[]string{"update", "b-1", "--claim", "--json"}, "update --claim"},
		{nil, ""},
	} {
		if got := callName(tc.argv); got != tc.want {
			t.Errorf("callName(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

func TestCapReached(t *testing.T) {
	for _, tc := range []struct {
		m    measured
		want bool
	}{
		{measured{Exit: 3, Stdout: "ralphd build: reached the cap of 20 iterations with 12 ready issues left"}, true},
		{measured{Exit: 3, Stdout: "ralphd build: max_cost_usd"}, false},
		{measured{Exit: 1, Stdout: "reached the cap of 20 iterations"}, false},
		{measured{Exit: 0}, false},
	} {
		if got := capReached(tc.m); got != tc.want {
			t.Errorf("capReached(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

// TestBigWorkersSection: 10a is eight workers' wall over one worker's, and
// judged against 0.18 from that ratio.
func TestBigWorkersSection(t *testing.T) {
	for _, tc := range []struct {
		one, eight time.Duration
		value      string
		verdict    bench.Verdict
	}{
		{100 * time.Second, 15 * time.Second, "0.150", bench.Met},
		{100 * time.Second, 30 * time.Second, "0.300", bench.Missed},
	} {
		s := bigWorkersSection(&bigWorkersResult{Embedded: bigWorkersPair{One: tc.one, Eight: tc.eight}}, "cmd")
		if len(s.Figures) != 1 || !strings.HasPrefix(s.Figures[0].Value, tc.value) || s.Figures[0].Verdict != tc.verdict || s.Figures[0].Command != "cmd" {
			t.Errorf("%v ÷ %v: %+v", tc.eight, tc.one, s.Figures)
		}
	}
}

// TestBigWorkersServerFigure: with the server-mode runs, section 10 has
// 10b beside 10a, each its own ratio.
func TestBigWorkersServerFigure(t *testing.T) {
	r := &bigWorkersResult{Embedded: bigWorkersPair{One: 100 * time.Second, Eight: 50 * time.Second, ClosedOne: 30, ClosedEight: 29},
		Server: &bigWorkersPair{One: 100 * time.Second, Eight: 10 * time.Second, ClosedOne: 31, ClosedEight: 32}, ServerLabel: "real bd, server mode"}
	s := bigWorkersSection(r, "cmd")
	if len(s.Figures) != 2 || s.Figures[1].ID != "10b" {
		t.Fatalf("figures: %+v", s.Figures)
	}
	if !strings.HasPrefix(s.Figures[0].Value, "0.500 (") || !strings.Contains(s.Figures[0].Value, "29 and 30 of 40") {
		t.Errorf("10a: %q", s.Figures[0].Value)
	}
	if !strings.HasPrefix(s.Figures[1].Value, "0.100 (") || !strings.Contains(s.Figures[1].Value, "32 and 31 of 40") || !strings.Contains(s.Figures[1].Name, "real bd, server mode") {
		t.Errorf("10b: %+v", s.Figures[1])
	}
	if s.Figures[0].Verdict == s.Figures[1].Verdict {
		t.Errorf("0.5 and 0.1 judged alike against ≤ 0.18: %q", s.Figures[0].Verdict)
	}
}

// TestClosedRE: the closes are read from ralphd's summary line.
func TestClosedRE(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want string
	}{
		{"  iterations: 40, closed: 34 of 38 tried, newly stuck: [b-1]", "34"},
		{"  iterations: 40, closed: 0 of 14 tried", "0"},
		{"  iterations: 40", ""},
	} {
		got := ""
		if m := closedRE.FindStringSubmatch(tc.out); m != nil {
			got = m[1]
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.out, got, tc.want)
		}
	}
}

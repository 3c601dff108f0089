package main

import "testing"

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

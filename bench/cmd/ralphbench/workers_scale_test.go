package main

import "testing"

func TestCallKind(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"--actor", "ralphd/vm/1afe46/w4", "ready", "--claim", "--json"}, "claim"},
		{[]string{"--actor", "ralphd/vm/1afe46/w4", "update", "t-1", "--claim", "--json"}, "claim"},
		{[]string{"list", "--limit", "0", "--all", "--json"}, "reading"},
		{[]string{"--actor", "ralphd/vm/1afe46/w2", "list", "--limit", "0", "--all", "--json"}, "reading"},
		{[]string{"ready", "--limit", "0", "--json"}, "ready"},
		{[]string{"stats", "--json"}, "other"},
		{[]string{"show", "t-1", "--json"}, "other"},
		{nil, "other"},
	} {
		if got := callKind(tt.argv); got != tt.want {
			t.Errorf("callKind(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

package main

import (
	"slices"
	"testing"
)

// TestContractSwitch: a bare --bd asks for the contract check; --bd PATH
// and --bd=PATH name the binary, as before.
func TestContractSwitch(t *testing.T) {
	for _, tc := range []struct {
		args, rest []string
		on         bool
	}{
		{[]string{"--bd"}, nil, true},
		{[]string{"-bd"}, nil, true},
		{[]string{"--bd", "--bd", "/x/bd"}, []string{"--bd", "/x/bd"}, true},
		{[]string{"--bd", "/x/bd", "--bd"}, []string{"--bd", "/x/bd"}, true},
		{[]string{"--bd", "/x/bd"}, []string{"--bd", "/x/bd"}, false},
		{[]string{"--bd=/x/bd"}, []string{"--bd=/x/bd"}, false},
		{[]string{"--agent", "codex", "--bd"}, []string{"--agent", "codex"}, true},
		{[]string{"--", "--bd"}, []string{"--", "--bd"}, false},
		{nil, nil, false},
	} {
		rest, on := contractSwitch(tc.args)
		if on != tc.on || !slices.Equal(rest, tc.rest) {
			t.Errorf("contractSwitch(%q) = %q, %v; want %q, %v", tc.args, rest, on, tc.rest, tc.on)
		}
	}
}

package main

import (
	"testing"

	"github.com/matryer/is"
)

func TestVerifiedText(t *testing.T) {
	tests := []struct{ name, version, want string }{
		{"codex", "codex-cli 0.169.0", "yes (0.169.0)"},
		{"codex", "codex-cli 0.170.0", "no: verified version is 0.169.0"},
		{"opencode", "-", "verified: 1.18.33"},
		{"claude", "unknown", "verified: 2.1.197"},
		{"amp", "1.0.0", "no: recorded streams only: Amp talks only to its vendor's service"},
		{"nope", "1", "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.version, func(t *testing.T) {
			is.New(t).Equal(verifiedText(tt.name, tt.version), tt.want)
		})
	}
}

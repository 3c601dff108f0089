package agent

import (
	"testing"

	"github.com/matryer/is"
)

func TestVerifiedVersion(t *testing.T) {
	tests := []struct {
		name, printed string
		want          bool
	}{
		{"claude", "2.1.197 (Claude Code)", true},
		{"claude", "2.1.198 (Claude Code)", false},
		{"codex", "codex-cli 0.169.0", true},
		{"codex", "codex-cli 0.169.01", false},
		{"opencode", "1.18.33", true},
		{"gemini", "v0.61.0", true},
		{"gemini", "0.61.0-nightly", false},
		{"amp", "0.0.1", false}, // no version is verified
		{"nope", "1.0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.printed, func(t *testing.T) {
			is.New(t).Equal(VerifiedVersion(tt.name, tt.printed), tt.want)
		})
	}
}

// TestVerifiedCoversEveryBackend: every backend has a row, and a row
// without a version says why.
func TestVerifiedCoversEveryBackend(t *testing.T) {
	is := is.New(t)
	for _, name := range Names() {
		v, ok := Verified(name)
		is.True(ok) // every backend is in the table
		is.True(v.Version != "" || v.Why != "")
	}
}

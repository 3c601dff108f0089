package main

import (
	"os"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
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

// TestVerifiedTableMatchesPins: the versions `ralphd agents` calls
// verified are the ones the end-to-end suite runs (scriptedapi's pins,
// which scripts/install-agents installs).
func TestVerifiedTableMatchesPins(t *testing.T) {
	is := is.New(t)
	for name, pin := range map[string]string{
		"claude": scriptedapi.ClaudeVersion, "codex": scriptedapi.CodexVersion,
		"opencode": scriptedapi.OpencodeVersion, "gemini": scriptedapi.GeminiVersion,
	} {
		v, ok := agent.Verified(name)
		is.True(ok)
		is.Equal(v.Version, pin)
	}
	script, err := os.ReadFile("../../scripts/install-agents")
	is.NoErr(err)
	for _, pin := range []string{scriptedapi.ClaudeVersion, scriptedapi.CodexVersion, scriptedapi.OpencodeVersion, scriptedapi.GeminiVersion} {
		is.True(strings.Contains(string(script), ":-"+pin+"}")) // pinned in scripts/install-agents
	}
}

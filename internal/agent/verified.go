package agent

import "strings"

// Verification is what ralphd's end-to-end suite proves about one
// backend: the CLI version it runs for real under `ralphd build` against a
// scripted model API (only the model faked), or why it cannot.
type Verification struct {
	// Version is the CLI version verified end to end; empty when the
	// backend is checked against recorded streams only.
	Version string
	// Package is the npm package the CLI comes from.
	Package string
	// Why says, for a backend without Version, why it is not verified
	// end to end.
	Why string
}

// verified is the table `ralphd agents` and the README show. The
// end-to-end tests (cmd/ralphd e2e_backends_test.go, e2e_test.go) keep
// it true: they run exactly these versions, pinned by
// scripts/install-agents, and fail under CI when the installed CLI is any
// other.
var verified = map[string]Verification{
	"claude":   {Version: "2.1.197", Package: "@anthropic-ai/claude-code"},
	"codex":    {Version: "0.169.0", Package: "@openai/codex"},
	"opencode": {Version: "1.18.33", Package: "opencode-ai"},
	"gemini":   {Version: "0.61.0", Package: "@google/gemini-cli"},
	// Amp's model calls go through its vendor's own service (an Amp
	// account and AMP_API_KEY), not a documented model API that a local
	// stand-in could speak.
	"amp":     {Package: "@sourcegraph/amp", Why: "recorded streams only: Amp talks only to its vendor's service"},
	"command": {Why: "any command; its output is read as Claude Code's stream-json"},
}

// Verified returns what the end-to-end suite proves about the backend
// called name.
func Verified(name string) (Verification, bool) {
	v, ok := verified[name]
	return v, ok
}

// VerifiedVersion reports whether a version string a CLI printed
// (`codex-cli 0.169.0`, `2.1.197 (Claude Code)`, `1.18.33`) names the
// version verified end to end for backend name.
func VerifiedVersion(name, printed string) bool {
	v, ok := verified[name]
	if !ok || v.Version == "" {
		return false
	}
	for _, f := range strings.Fields(printed) {
		if strings.TrimPrefix(f, "v") == v.Version {
			return true
		}
	}
	return false
}

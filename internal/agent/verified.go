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

// Verified returns what the end-to-end suite proves about the backend
// called name (its Verified method, which `ralphd agents` and the README
// show). The end-to-end tests (cmd/ralphd e2e_backends_test.go,
// e2e_test.go) keep it true: they run exactly these versions, which
// scripts/install-agents must pin too (TestInstallAgentsPins), and fail
// under CI when the installed CLI is any other.
func Verified(name string) (Verification, bool) {
	b, ok := Describe(name)
	if !ok {
		return Verification{}, false
	}
	return b.Verified(), true
}

// VerifiedVersion reports whether a version string a CLI printed
// (`codex-cli 0.169.0`, `2.1.197 (Claude Code)`, `1.18.33`) names the
// version verified end to end for backend name.
func VerifiedVersion(name, printed string) bool {
	v, ok := Verified(name)
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

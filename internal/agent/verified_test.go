package agent

import (
	"os"
	"regexp"
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

// TestInstallAgentsPins: scripts/install-agents, which installs the CLIs
// the end-to-end suite runs, pins exactly the versions the backends say
// are verified, and every backend with a verified version is in it. The
// backends' Verified methods are the one source of truth; this test keeps
// the script equal to them.
func TestInstallAgentsPins(t *testing.T) {
	is := is.New(t)
	script, err := os.ReadFile("../../scripts/install-agents")
	is.NoErr(err)
	// A pin is a line of spec(): `name) echo "package ${RALPHD_NAME_VERSION:-version} binary" ;;`.
	pin := regexp.MustCompile(`(?m)^\s*([a-z]+)\) echo "(\S+) \$\{RALPHD_[A-Z]+_VERSION:-([^}]+)\} (\S+)" ;;$`)
	pinned := map[string][2]string{}
	for _, m := range pin.FindAllStringSubmatch(string(script), -1) {
		pinned[m[1]] = [2]string{m[2], m[3]}
	}
	is.True(len(pinned) > 0) // the script's pins were found
	for _, name := range Names() {
		v, _ := Verified(name)
		got, ok := pinned[name]
		if v.Version == "" {
			is.True(!ok) // a backend with no verified version is not installed for the suite
			continue
		}
		is.True(ok)                 // a verified backend is pinned in scripts/install-agents
		is.Equal(got[1], v.Version) // the script pins the verified version
		is.Equal(got[0], v.Package) // from the backend's package
		delete(pinned, name)
	}
	is.Equal(len(pinned), 0) // the script pins no CLI that no backend verifies
}

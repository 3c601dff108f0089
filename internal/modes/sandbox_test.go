package modes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/sandbox"
)

// TestSandboxHint: when a sandboxed BUILD agent cannot run because its
// command names a file that exists here but lies where the sandbox hides
// it (`sh /tmp/agent.sh`), the reason says so and what to do; a file
// missing here too, one on PATH, and a run without the sandbox get the
// reason as it was.
func TestSandboxHint(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "ralphd-hint-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte("exit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cannot := func(p string) string {
		return "agent command failed to start (exit code 2): sh: 0: cannot open " + p + ": No such file; check --agent-cmd"
	}
	for _, tc := range []struct {
		name   string
		use    bool
		path   string // the environment's PATH
		reason string
		hinted bool
	}{
		{"hidden script", true, "/usr/bin", cannot(script), true},
		{"missing here too", true, "/usr/bin", cannot(filepath.Join(dir, "nope.sh")), false},
		{"on PATH, bound back", true, dir + ":/usr/bin", cannot(script), false},
		{"no sandbox", false, "/usr/bin", cannot(script), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Loop{Deps: Deps{Sandbox: sandbox.Decision{Use: tc.use}, Env: []string{"PATH=" + tc.path, "HOME=" + t.TempDir()}}}
			got := l.sandboxHint(agent.Outcome{Status: agent.StatusFatal, Reason: tc.reason}).Reason
			hinted := strings.Contains(got, script+" is in /tmp, which BUILD's sandbox replaces with an empty private dir") &&
				strings.Contains(got, "--sandbox off")
			if hinted != tc.hinted || !strings.HasPrefix(got, tc.reason) {
				t.Errorf("reason %q; want the hint: %v, after the reason as it was", got, tc.hinted)
			}
		})
	}
}

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A real tmux server of the user's, on its default socket dir
// (/tmp/tmux-UID): from inside the sandbox, tmux ls and tmux send-keys
// fail, and the command send-keys would have typed never runs. In the old
// sandbox (the whole filesystem read-only, the network shared) both
// work, which is the route this closes.
func TestSandboxNoTmux(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but tmux is not installed: scripts/install-system-deps installs it")
		}
		t.Skip("tmux is not installed")
	}
	name := fmt.Sprintf("ralphd-test-%d", os.Getpid())
	run := func(argv ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Env = append(os.Environ(), "TMUX=", "TMUX_TMPDIR=")
		return cmd.CombinedOutput()
	}
	if out, err := run(tmux, "-L", name, "-f", "/dev/null", "new-session", "-d", "-s", "victim", "sh"); err != nil {
		t.Fatalf("start a tmux server: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = run(tmux, "-L", name, "kill-server") })

	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside := filepath.Join(root, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	attack := func(l Layout, marker string) (ls, send error) {
		inside := func(args ...string) error {
			argv := l.Args(bwrap, append([]string{tmux, "-L", name}, args...))
			out, err := run(argv...)
			t.Logf("tmux %v: %v %s", args, err, out)
			return err
		}
		return inside("ls"), inside("send-keys", "-t", "victim", "touch "+marker, "Enter")
	}
	appears := func(marker string) bool {
		for range 20 {
			if _, err := os.Stat(marker); err == nil {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}

	old := filepath.Join(outside, "old")
	ls, send := attack(Layout{}, old)
	if ls != nil || send != nil || !appears(old) {
		t.Fatalf("in the old sandbox tmux should reach the server (ls: %v, send-keys: %v): the test cannot tell", ls, send)
	}

	wt := filepath.Join(root, "repo")
	if err := os.Mkdir(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	l := BuildLayout(Project{WorkTree: wt, Scratch: t.TempDir(), Getenv: os.Getenv})
	l.Net = &Net{}
	marker := filepath.Join(outside, "new")
	ls, send = attack(l, marker)
	if ls == nil {
		t.Error("tmux ls reached the user's server from inside the sandbox")
	}
	if send == nil {
		t.Error("tmux send-keys reached the user's server from inside the sandbox")
	}
	if appears(marker) {
		t.Error("the command send-keys typed ran outside the sandbox")
	}
}

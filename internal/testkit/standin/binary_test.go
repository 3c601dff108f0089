package standin

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// subprocess builds a subprocess in its own process group that ctx
// cancellation kills as a whole.
func subprocess(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// TestBinary builds the standalone bd and drives it like a user would in
// a fresh git repository, comparing with the recorded shapes.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fixtures := loadFixtures(t)
	s := newScratch(t)
	bin := filepath.Join(t.TempDir(), "bd")
	build := subprocess(ctx, "go", "build", "-o", bin, "../fakebd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(dir string, args ...string) result {
		cmd := subprocess(ctx, bin, args...)
		cmd.Dir = dir
		cmd.Env = s.baseEnv
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run bd %v: %v", args, err)
		}
		return result{s.normalize(out.String()), s.normalize(errb.String()), code}
	}
	is := is.New(t)

	r := run(s.repo, "ready", "--json")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, fixtures["err-not-initialized-ready"].Stderr)

	r = run(s.repo, "init", "--prefix", "rt", "--non-interactive")
	is.Equal(r.code, 0)

	r = run(s.repo, "create", "Set up CI pipeline", "--json")
	is.Equal(r.code, 0)
	is.NoErr(compareOutput("create", fixtures["create-default-json"].Stdout, r.stdout, false))
	is.True(regexp.MustCompile(`"id": "rt-[0-9a-z]{3}"`).MatchString(r.stdout)) // prefix plus 3 base36 characters

	r = run(s.repo, "create", "Crash on empty input", "-p", "0", "-t", "bug", "--json")
	is.Equal(r.code, 0)
	is.NoErr(compareOutput("create", fixtures["create-bug-p0-json"].Stdout, r.stdout, false))
	r = run(s.repo, "create", "Release 1.0", "-t", "epic", "-p", "1", "--json")
	is.Equal(r.code, 0)

	// ready-limit-2's recording holds the P0 bug and the P1 epic, in that
	// order: so must ours.
	r = run(s.repo, "ready", "--json", "-n", "2")
	is.Equal(r.code, 0)
	is.NoErr(compareOutput("ready", fixtures["ready-limit-2"].Stdout, r.stdout, false))
	is.True(strings.Index(r.stdout, "Crash on empty input") < strings.Index(r.stdout, "Release 1.0"))
	is.Equal(r.stderr, "Showing 2 of 3 ready issues. Use --limit 0 for all, or --limit N to raise the cap.\n")

	r = run(filepath.Join(s.root, "plain"), "ready", "--json")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, fixtures["err-not-git-ready"].Stderr)

	r = run(s.repo, "frobnicate")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, fixtures["err-unknown-command"].Stderr)

	r = run(s.repo, "ready", "--bogus-flag")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, fixtures["err-bad-flag"].Stderr)

	r = run(s.repo, "--no-daemon", "ready", "--json")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, fixtures["global-no-daemon-flag"].Stderr)

	r = run(s.repo, "version")
	is.Equal(r.stdout, fixtures["version"].Stdout)
}

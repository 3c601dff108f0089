package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDevZeroRefIsCapped: a loose ref that is a link to /dev/zero makes
// git read without end; OutputEnv's git fails at maxData instead of
// taking the machine's memory (here lowered to 64 MiB, and the wait
// bounded, so that a missing cap costs seconds, not the machine).
// Production's cap is maxData.
func TestDevZeroRefIsCapped(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, ".git", "refs", "heads", "zero")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	r := NewRunner(dir)
	r.maxData = 64 << 20
	_, err := r.OutputEnv(ctx, nil, "for-each-ref")
	if ctx.Err() != nil {
		t.Fatalf("git read /dev/zero for %s, uncapped", time.Since(start))
	}
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "memory") {
		t.Fatalf("Output = %v; want git out of memory", err)
	}
}

package mergeq

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestRewrittenTrackingRefIsNotTheBase: an agent rewrites
// refs/remotes/origin/main to a commit of its own right after each of the
// queue's fetches (a git wrapper on PATH wins that race every time; every
// agent can write refs/remotes, even sandboxed). The queue's base is still
// what the remote has: the work is integrated on the remote's target, and
// the agent's commit reaches neither the remote nor the local target.
func TestRewrittenTrackingRefIsNotTheBase(t *testing.T) {
	is := is.New(t)
	remote, a, _ := twoClones(t)
	ctx := context.Background()
	want := sh(t, remote, "git", "rev-parse", "main")
	evil := sh(t, a.repo, "sh", "-c", "echo unverified > evil.txt && git add evil.txt && git commit -q -m evil && git rev-parse HEAD && git reset -q --hard HEAD~1")
	real, err := exec.LookPath("git")
	is.NoErr(err)
	bin := t.TempDir()
	write(t, filepath.Join(bin, "git"), `#!/bin/sh
"$REAL_GIT" "$@"; rc=$?
case " $* " in *" fetch "*) [ $rc -eq 0 ] && "$REAL_GIT" update-ref refs/remotes/origin/main "$EVIL" ;; esac
exit $rc
`)
	is.NoErr(os.Chmod(filepath.Join(bin, "git"), 0o755))
	r := a.work("w1", map[string]string{"b.txt": "b\n"})
	t.Setenv("REAL_GIT", real)
	t.Setenv("EVIL", evil)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	q := &Queue{Repo: a.repo, Target: "main", Remote: "origin"}

	base, err := q.Base(ctx)
	is.NoErr(err)
	is.Equal(base, want) // not the rewritten ref
	is.Equal(sh(t, a.repo, "git", "rev-parse", "refs/remotes/origin/main"), evil)

	res, err := q.Integrate(ctx, r)
	is.NoErr(err)
	is.True(res.Integrated)
	is.Equal(sh(t, remote, "git", "rev-parse", "main"), res.Commit)
	is.Equal(sh(t, remote, "git", "rev-parse", "main~1"), want) // on the remote's target
	is.True(!strings.Contains(sh(t, remote, "git", "log", "--format=%s", "main"), "evil"))
	is.True(!strings.Contains(sh(t, a.repo, "git", "log", "--format=%s", "main"), "evil"))
	is.Equal(sh(t, a.repo, "git", "rev-parse", "main"), res.Commit)
}

// TestBackoff: the pause after rejected round n lies in [d/2, d] with d
// doubling from 50ms and capped at 2s, and takes its random part from
// randN, so two clones that were rejected together do not retry together.
func TestBackoff(t *testing.T) {
	lowest := func(int64) int64 { return 0 }
	highest := func(n int64) int64 { return n - 1 }
	for _, tc := range []struct {
		n        int
		min, max time.Duration
	}{
		{1, 25 * time.Millisecond, 50 * time.Millisecond},
		{2, 50 * time.Millisecond, 100 * time.Millisecond},
		{5, 400 * time.Millisecond, 800 * time.Millisecond},
		{6, 800 * time.Millisecond, 1600 * time.Millisecond},
		{7, time.Second, 2 * time.Second},
		{64, time.Second, 2 * time.Second},
		{1 << 30, time.Second, 2 * time.Second},
	} {
		if got := backoff(tc.n, lowest); got != tc.min {
			t.Errorf("backoff(%d), lowest draw = %v, want %v", tc.n, got, tc.min)
		}
		if got := backoff(tc.n, highest); got != tc.max {
			t.Errorf("backoff(%d), highest draw = %v, want %v", tc.n, got, tc.max)
		}
	}
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[backoff(4, rand.N[int64])] = true
	}
	if len(seen) < 10 {
		t.Errorf("backoff(4) drew %d distinct pauses in 50 draws; want a random spread", len(seen))
	}
}

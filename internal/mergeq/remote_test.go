package mergeq

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

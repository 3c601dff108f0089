package modes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/testkit/standin/standintest"
)

const helperEnv = "WORKERS_TEST_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(helper(spec))
	}
	os.Exit(standintest.Main(func() int {
		defer giteaSrv.Close()
		return m.Run()
	}))
}

// helper runs 3 workers whose iterations commit, close their issue and
// then hang, until the test kills them: "repo|root|bd".
func helper(spec string) int {
	f := strings.Split(spec, "|")
	if len(f) != 3 {
		return 2
	}
	p := &project{repo: f[0], root: f[1], bd: f[2]}
	pool := p.pool(3, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("killed run\n"), 0o644); err != nil {
			return false, err
		}
		if _, err := commitAndClose(ctx, a); err != nil {
			return false, err
		}
		if err := os.WriteFile(filepath.Join(a.Dir, "uncommitted-"+a.Issue.ID), []byte("x\n"), 0o644); err != nil {
			return false, err
		}
		time.Sleep(time.Minute)
		return true, nil
	})
	if _, err := pool.Run(context.Background()); err != nil {
		return 1
	}
	return 0
}

// TestSIGKILLThreeWorkersThenRestart: SIGKILL 3 workers mid-iteration
// (each has closed its issue, committed, and left a change uncommitted),
// then start again: every issue ends integrated exactly once, no claim or
// worktree is left behind, nothing of the killed work is deleted, and the
// killed attempts are not counted as failures.
func TestSIGKILLThreeWorkersThenRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	is := is.New(t)
	p := newProject(t)
	var ids []string
	for i := 0; i < 6; i++ {
		ids = append(ids, p.create("issue"))
	}
	self, err := os.Executable()
	is.NoErr(err)
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{p.repo, p.root, p.bd}, "|"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	is.NoErr(cmd.Start())
	pool := p.pool(3, nil)
	deadline := time.Now().Add(time.Minute)
	for {
		closed := 0
		for _, id := range ids {
			if strings.Contains(sh(t, p.repo, p.bd, "--quiet", "show", id, "--json"), `"status": "closed"`) {
				closed++
			}
		}
		marks, _ := filepath.Glob(filepath.Join(pool.Trees.Root, ".pending-w*"))
		if closed == 3 && len(marks) == 3 {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("the workers did not get going: %d closed, %d markers", closed, len(marks))
		}
		time.Sleep(50 * time.Millisecond)
	}
	is.NoErr(syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
	_ = cmd.Wait()

	// The restart.
	var worked []string
	pool.Iterate = byDone(func(ctx context.Context, a Assignment) (bool, error) {
		worked = append(worked, a.Issue.ID)
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("restarted run\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	pool.Workers = 1
	sum, err := pool.Run(context.Background())
	is.NoErr(err)
	is.Equal(len(sum.Integrated), 6) // every issue integrated, once
	is.Equal(len(worked), 6)
	is.Equal(len(sum.Failed), 0) // the killed attempts are not failures
	is.Equal(len(sum.Saved), 3)  // the killed workers' uncommitted work is on wip branches
	for _, s := range sum.Saved {
		files := sh(t, p.repo, "git", "ls-tree", "-r", "--name-only", s.Branch)
		is.True(strings.Contains(files, "uncommitted-"))
	}
	list := sh(t, p.repo, p.bd, "--quiet", "list", "--status", "in_progress", "--json")
	is.Equal(strings.TrimSpace(list), "[]") // no claim left behind
	left, err := git.List(context.Background(), p.repo)
	is.NoErr(err)
	is.Equal(len(left), 2) // main and the one worker's reusable worktree
	marks, _ := filepath.Glob(filepath.Join(pool.Trees.Root, ".pending-*"))
	is.Equal(len(marks), 0)
	is.Equal(sh(t, p.repo, "git", "status", "--porcelain", "--", ".", ":(exclude).beads"), "")
}

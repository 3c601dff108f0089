package mergeq

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/git"
)

// helperEnv makes the test binary integrate one request and exit: the
// process the SIGKILL test kills.
const helperEnv = "MERGEQ_TEST_HELPER"

// guardEnv makes the test binary put a moved target back and exit.
const guardEnv = "MERGEQ_TEST_GUARD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(helper(spec))
	}
	if spec := os.Getenv(guardEnv); spec != "" {
		os.Exit(guardHelper(spec))
	}
	code := m.Run()
	gitea.Close()
	os.Exit(code)
}

// guardHelper reads "repo|want" and puts main back at want.
func guardHelper(spec string) int {
	repo, want, ok := strings.Cut(spec, "|")
	if !ok {
		return 2
	}
	q := &Queue{Repo: repo, Target: "main", want: want, home: repo}
	if _, err := q.Check(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// helper reads "repo|dir|branch|verifySleep" and integrates.
func helper(spec string) int {
	p := strings.Split(spec, "|")
	if len(p) != 4 {
		return 2
	}
	sleep, err := time.ParseDuration(p[3])
	if err != nil {
		return 2
	}
	q := &Queue{Repo: p[0], Target: "main", Verify: func(ctx context.Context, dir string) error {
		time.Sleep(sleep)
		return nil
	}}
	res, err := q.Integrate(context.Background(), Request{Worker: "w1", Issue: "is-1", Dir: p[1], Branch: p[2]})
	if err != nil || !res.Integrated {
		fmt.Fprintln(os.Stderr, res, err)
		return 1
	}
	return 0
}

// TestSIGKILLLeavesTargetClean kills an integration at many points and
// checks, after the restart's recovery, that the target is at its old or
// new tip with a clean checkout, nothing is mid-rebase, and the work is on
// the target or on a branch.
func TestSIGKILLLeavesTargetClean(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	delays := []time.Duration{0, 5, 10, 20, 30, 40, 60, 80, 100, 130, 160, 200, 300, 500, 5000}
	finished := 0
	for _, d := range delays {
		d *= time.Millisecond
		t.Run(d.String(), func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			// Work that also rebases over a moved target.
			r := f.work("w1", map[string]string{"a.txt": "a\n", "dir/x.txt": "x\n"})
			write(t, filepath.Join(f.repo, "m.txt"), "m\n")
			sh(t, f.repo, "git", "add", "m.txt")
			sh(t, f.repo, "git", "commit", "-q", "-m", "main moves")
			old := sh(t, f.repo, "git", "rev-parse", "main")

			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+strings.Join([]string{f.repo, r.Dir, r.Branch, "40ms"}, "|"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			is.NoErr(cmd.Start())
			time.Sleep(d)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			if err := cmd.Wait(); err == nil {
				finished++
			} else if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() >= 0 {
				t.Fatalf("the integration failed on its own: %v", err) // not killed
			}

			// The restart: recover the queue, then the worker worktrees.
			q := &Queue{Repo: f.repo, Target: "main"}
			_, err := q.Recover(ctx)
			is.NoErr(err)
			_, err = f.wt.Recover(ctx, "main")
			is.NoErr(err)

			tip := sh(t, f.repo, "git", "rev-parse", "main")
			has := func(ref string) bool {
				out, err := exec.Command("git", "-C", f.repo, "cat-file", "-e", ref+":a.txt").CombinedOutput()
				_ = out
				return err == nil
			}
			if tip != old {
				is.True(has("main")) // moved only with the work
				is.Equal(sh(t, f.repo, "git", "merge-base", "--is-ancestor", old, tip), "")
			}
			f.clean()
			is.True(!inRebase(ctx, f.repo))
			if !has("main") {
				found := false
				for _, b := range strings.Fields(sh(t, f.repo, "git", "for-each-ref", "--format=%(refname:short)", "refs/heads/")) {
					found = found || has(b)
				}
				is.True(found) // the work is kept on some branch
			}
			left, err := git.List(ctx, f.repo)
			is.NoErr(err)
			is.Equal(len(left), 1) // no worktree left behind
		})
	}
	t.Logf("%d of %d integrations finished before the kill", finished, len(delays))
}

// TestSIGKILLDuringPutBack kills the repair of a `git reset --hard` in
// the target's checkout at many points: after Recover, the target and its
// checkout agree (at the foreign tip or back where the queue left it), and
// a second repair ends where the queue left it, with the foreign tip kept.
func TestSIGKILLDuringPutBack(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, 10, 20, 30, 35, 40, 45, 50, 55, 60, 70, 80, 120, 5000} {
		d *= time.Millisecond
		t.Run(d.String(), func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			want := sh(t, f.repo, "git", "rev-parse", "main")
			files := map[string]string{"shared.txt": "moved\n"}
			for i := range 300 {
				files[fmt.Sprintf("d%d/f%d.txt", i%10, i)] = "x\n"
			}
			x := sh(t, f.work("w9", files).Dir, "git", "rev-parse", "HEAD")
			sh(t, f.repo, "git", "reset", "-q", "--hard", x)

			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), guardEnv+"="+f.repo+"|"+want)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			is.NoErr(cmd.Start())
			time.Sleep(d)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			if err := cmd.Wait(); err != nil {
				if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() >= 0 {
					t.Fatalf("the repair failed on its own: %v", err)
				}
			}
			q := &Queue{Repo: f.repo, Target: "main"}
			journal, err := q.Recover(ctx)
			is.NoErr(err)
			tip := sh(t, f.repo, "git", "rev-parse", "main")
			is.True(tip == want || tip == x)
			t.Logf("killed after %v: journal %v, back: %v", d, journal, tip == want)
			f.clean()
			is.Equal(sh(t, f.repo, "git", "diff", "--stat", "main", "--", ".", ":(exclude).beads"), "")

			q.want, q.home = want, f.repo
			_, err = q.Check(ctx)
			is.NoErr(err)
			is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), want)
			f.clean()
			is.Equal(sh(t, f.repo, "cat", "shared.txt"), "line 1\nline 2\nline 3")
			is.True(strings.Contains(sh(t, f.repo, "git", "for-each-ref", "--format=%(objectname)", "refs/heads/"+git.MovedPrefix), x))
		})
	}
}

// TestRecoverKilledAdd: a kill mid `git worktree add` of the queue's
// worktree, or of a worker's, leaves an empty commondir that fails every
// list of worktrees. In the pool's order (the workers' half-added
// worktrees forgotten first, then the queue's recovery), recovery ends
// with the target clean and only the main worktree and the worker's
// finished one left.
func TestRecoverKilledAdd(t *testing.T) {
	for _, whose := range []string{"the queue's", "a worker's"} {
		t.Run(whose, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			f.work("w1", map[string]string{"a.txt": "a\n"})
			q := &Queue{Repo: f.repo, Target: "main"}
			dir, err := q.treePath(ctx)
			is.NoErr(err)
			if whose == "a worker's" {
				tr, _, err := f.wt.Open(ctx, "w2", "main")
				is.NoErr(err)
				dir = tr.Dir
			} else {
				sh(t, f.repo, "git", "worktree", "add", "-q", "--detach", dir)
			}
			common := filepath.Join(f.repo, ".git", "worktrees")
			admin := filepath.Join(common, filepath.Base(dir))
			write(t, filepath.Join(admin, "locked"), "initializing")
			write(t, filepath.Join(admin, "HEAD"), strings.Repeat("0", 40)+"\n")
			write(t, filepath.Join(admin, "commondir"), "")
			is.NoErr(os.Remove(filepath.Join(admin, "index")))

			_, err = f.wt.ForgetKilledAdds(ctx)
			is.NoErr(err)
			_, err = q.Recover(ctx)
			is.NoErr(err)
			left, err := git.List(ctx, f.repo)
			is.NoErr(err)
			is.Equal(len(left), 2) // main and w1
			_, err = os.Lstat(dir)
			is.True(os.IsNotExist(err)) // what the add left is gone
			f.clean()
		})
	}
}

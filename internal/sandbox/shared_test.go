package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

// TestSharedLayoutOrder: the common dir's top level is not bound
// writable; objects, refs and logs are (made when missing), refs/heads and
// the other worktrees' dir read-only after them, and the agent's own
// branch dir and worktree dir writable again after those. No file of the
// common dir is bound at all.
func TestSharedLayoutOrder(t *testing.T) {
	is := is.New(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	c := filepath.Join(root, "repo", ".git")
	own := filepath.Join(c, "worktrees", "w1")
	ownRefs := filepath.Join(c, "refs", "heads", "ralphd", "workers", "w1")
	for _, d := range []string{own, ownRefs, filepath.Join(root, "w1"), filepath.Join(root, "repo", ".beads")} {
		is.NoErr(os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{filepath.Join(c, "HEAD"), filepath.Join(c, "index"), filepath.Join(c, "packed-refs")} {
		is.NoErr(os.WriteFile(f, []byte("x\n"), 0o644))
	}
	l := BuildLayout(Project{WorkTree: filepath.Join(root, "w1"), GitDir: own, GitCommonDir: c,
		Shared: &Shared{OwnRefs: "refs/heads/ralphd/workers/w1"}})
	is.NoErr(l.Prepare())
	for _, d := range []string{"objects", "logs"} {
		fi, err := os.Stat(filepath.Join(c, d))
		is.NoErr(err) // made by Prepare
		is.True(fi.IsDir())
	}
	args := strings.Join(l.Args("bwrap", []string{"true"}), " ")
	pos := func(s string) int {
		i := strings.Index(args, s)
		if i < 0 {
			t.Fatalf("%q not in %s", s, args)
		}
		return i
	}
	is.True(!strings.Contains(args, "--bind "+c+" "))
	for _, f := range []string{"HEAD", "index", "packed-refs"} {
		is.True(!strings.Contains(args, " "+filepath.Join(c, f)+" "))
	}
	pos("--bind " + c + "/objects ")
	pos("--bind " + c + "/logs ")
	is.True(pos("--bind "+c+"/refs ") < pos("--ro-bind "+c+"/refs/heads "))
	is.True(pos("--ro-bind "+c+"/refs/heads ") < pos("--bind "+ownRefs+" "))
	is.True(pos("--ro-bind "+c+"/worktrees ") < pos("--bind "+own+" "))
}

// sharedRepo is a repository with the target main checked out and two
// workers' linked worktrees, w1 and w2, for a worker's sandbox tests.
type sharedRepo struct {
	root, home, repo, common, w1, w2, tmp string
	t                                     *testing.T
}

func newSharedRepo(t *testing.T) *sharedRepo {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	r := &sharedRepo{t: t, root: root, home: filepath.Join(root, "home"), repo: filepath.Join(root, "repo"), tmp: filepath.Join(root, "tmp"),
		w1: filepath.Join(root, "wt", "w1"), w2: filepath.Join(root, "wt", "w2")}
	r.common = filepath.Join(r.repo, ".git")
	t.Setenv("HOME", r.home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(r.home, "gitconfig"))
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@x"} {
		t.Setenv(k, v)
	}
	for _, d := range []string{filepath.Join(r.repo, ".beads"), r.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.git(r.repo, "init", "-q", "-b", "main")
	r.git(r.repo, "commit", "-q", "--allow-empty", "-m", "base")
	r.git(r.repo, "branch", "wip/w2/old")
	r.git(r.repo, "worktree", "add", "-q", "-b", "ralphd/workers/w1/work", r.w1)
	r.git(r.repo, "worktree", "add", "-q", "-b", "ralphd/workers/w2/work", r.w2)
	return r
}

func (r *sharedRepo) git(dir string, args ...string) string {
	r.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// layout is worker w1's sandbox.
func (r *sharedRepo) layout() Layout {
	// The command backend's agent writes only the shared XDG cache.
	dirs, files := agent.Writable(agent.Command{}, agent.Home{Dir: r.home})
	return BuildLayout(Project{WorkTree: r.w1, GitDir: filepath.Join(r.common, "worktrees", "w1"), GitCommonDir: r.common, Scratch: r.tmp,
		AgentDirs: dirs, AgentFiles: files, Home: r.home, Shared: &Shared{OwnRefs: "refs/heads/ralphd/workers/w1"}})
}

// start runs script in w1's sandbox, with $C, $W2, $REPO and $T (the
// scratch dir) set, and returns the command and its output.
func (r *sharedRepo) start(ctx context.Context, bwrap, script string) (*exec.Cmd, *strings.Builder) {
	r.t.Helper()
	l := r.layout()
	if err := l.Prepare(); err != nil {
		r.t.Fatal(err)
	}
	argv := l.Args(bwrap, []string{"sh", "-c", script})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.w1
	cmd.Env = append(os.Environ(), "C="+r.common, "W2="+r.w2, "REPO="+r.repo, "T="+r.tmp)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	return cmd, &out
}

// await waits for the sandbox to make the file name in the scratch dir.
func (r *sharedRepo) await(name string, out *strings.Builder) {
	r.t.Helper()
	for n := 0; ; n++ {
		if _, err := os.Stat(filepath.Join(r.tmp, name)); err == nil {
			return
		}
		if n > 400 {
			r.t.Fatalf("the sandbox never made %s:\n%s", name, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSharedRefsHold: a worker's sandboxed agent tries every route to move
// the target, another worker's branch or HEAD, or the kept work; each
// fails, and the agent can still commit on its own branch and make
// branches of its own.
func TestSharedRefsHold(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	r := newSharedRepo(t)
	repo, w2, tmp, git := r.repo, r.w2, r.tmp, r.git
	is := is.New(t)
	var main, other string // where ralphd leaves the target and w2's branch, below
	// One sandbox for the whole test: it commits on its own branch, waits
	// while ralphd moves the target and the other branch outside, then
	// tries every route.
	refused := []struct{ name, script string }{
		{"make a branch outside its own dir", "git branch feature"},
		{"update-ref the target", "git update-ref refs/heads/main HEAD"},
		{"delete the target", "git update-ref -d refs/heads/main"},
		{"edit the target's ref file", "echo $X > $C/refs/heads/main"},
		{"remove the target's ref file", "rm $C/refs/heads/main"},
		{"push . to the target", "git push -q --receive-pack='git -c receive.denyCurrentBranch=ignore receive-pack' . HEAD:refs/heads/main"},
		{"packed-refs", "printf '%s refs/heads/main\\n' $X > $C/packed-refs && test \"$(git rev-parse main)\" = $X"},
		{"reset in the target's checkout", "git --git-dir=$C --work-tree=$REPO reset -q --soft $X"},
		{"repoint the checkout's HEAD", "git --git-dir=$C symbolic-ref HEAD refs/heads/ralphd/workers/w1/work"},
		{"update-ref another worker's branch", "git update-ref refs/heads/ralphd/workers/w2/work HEAD"},
		{"delete another worker's branch", "git update-ref -d refs/heads/ralphd/workers/w2/work"},
		{"repoint another worktree's HEAD", "echo ref: refs/heads/main > $C/worktrees/w2/HEAD"},
		{"reset in another worktree", "git -C $W2 reset -q --soft $X"},
		{"delete kept work", "git branch -D wip/w2/old"},
		{"plant a kept branch", "git branch ralphd/kept/fake"},
		{"remove another worktree's admin dir", "rm -rf $C/worktrees/w2"},
	}
	var script strings.Builder
	script.WriteString("git commit -q --allow-empty -m mine || exit 9\nX=$(git rev-parse HEAD)\necho $X > $T/mine\n")
	script.WriteString("n=0; while [ ! -e $T/moved ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done\n")
	for i, tt := range refused {
		fmt.Fprintf(&script, "( %s ) >/dev/null 2>&1; echo \"%d $?\"\n", tt.script, i)
	}
	script.WriteString("git commit -q --allow-empty -m again || exit 9\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, out := r.start(ctx, bwrap, script.String())
	r.await("mine", out)
	wip := git(repo, "rev-parse", "wip/w2/old")
	// ralphd integrates and the other worker commits, outside, while the
	// sandbox runs: their ref files are replaced.
	git(repo, "update-ref", "refs/heads/main", git(repo, "commit-tree", "-p", "main", "-m", "integrated", "main^{tree}"))
	git(w2, "commit", "-q", "--allow-empty", "-m", "w2's own")
	main, other = git(repo, "rev-parse", "main"), git(repo, "rev-parse", "ralphd/workers/w2/work")
	is.NoErr(os.WriteFile(filepath.Join(tmp, "moved"), nil, 0o644))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent's own commits failed: %v\n%s", err, out.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var i, rc int
		if _, err := fmt.Sscanf(l, "%d %d", &i, &rc); err != nil || i < 0 || i >= len(refused) {
			t.Fatalf("unexpected output %q", l)
		}
		if rc == 0 {
			t.Errorf("%q succeeded inside the sandbox", refused[i].script)
		}
	}
	is.Equal(git(repo, "rev-parse", "wip/w2/old"), wip)
	is.Equal(git(repo, "rev-parse", "main"), main)
	is.Equal(git(repo, "rev-parse", "ralphd/workers/w2/work"), other)
	is.Equal(git(repo, "symbolic-ref", "HEAD"), "refs/heads/main")
	is.Equal(git(w2, "symbolic-ref", "HEAD"), "refs/heads/ralphd/workers/w2/work")
	is.True(git(repo, "rev-parse", "ralphd/workers/w1/work") != main) // its own branch moved
}

// integrate moves the checked-out target main to a new commit the way the
// merge queue does (a two-way read-tree of the checkout, then a
// compare-and-swap of the ref), and puts its HEAD back the way the guard
// does: git replaces .git/index and .git/HEAD by renaming a lock file
// over them.
func (r *sharedRepo) integrate(name string) {
	r.t.Helper()
	old := r.git(r.repo, "rev-parse", "main")
	if err := os.WriteFile(filepath.Join(r.tmp, name), []byte(name+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	blob := r.git(r.repo, "hash-object", "-w", filepath.Join(r.tmp, name))
	idx := filepath.Join(r.tmp, "idx")
	_ = os.Remove(idx)
	tree := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", r.repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx)
		out, err := cmd.CombinedOutput()
		if err != nil {
			r.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tree("read-tree", old)
	tree("update-index", "--add", "--cacheinfo", "100644,"+blob+","+name+".txt")
	tip := r.git(r.repo, "commit-tree", "-p", old, "-m", name, tree("write-tree"))
	r.git(r.repo, "read-tree", "-m", "-u", old, tip)
	r.git(r.repo, "update-ref", "-m", "ralphd: integrate", "refs/heads/main", tip, old)
	r.git(r.repo, "symbolic-ref", "HEAD", "refs/heads/main")
}

// TestSharedCheckoutHoldsAcrossIntegrations: in one long sandbox, the
// target's checkout (its index, HEAD, config and lock files) stays
// read-only after ralphd has moved it, twice: git replaces the index and
// HEAD by rename, which used to drop a binding of those files inside the
// sandbox, so the second integration found the checkout dirty.
func TestSharedCheckoutHoldsAcrossIntegrations(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	r := newSharedRepo(t)
	is := is.New(t)
	refused := []struct{ name, script string }{
		{"write the checkout's index", "echo junk > $C/index"},
		{"stage in the checkout's index", "echo x > $T/f && git --git-dir=$C --work-tree=$T update-index --add f"},
		{"read a tree into the checkout's index", "git --git-dir=$C --work-tree=$REPO read-tree $X"},
		{"remove the checkout's index", "rm $C/index"},
		{"repoint the checkout's HEAD file", "echo ref: refs/heads/ralphd/workers/w1/work > $C/HEAD"},
		{"repoint the checkout's HEAD", "git --git-dir=$C symbolic-ref HEAD refs/heads/ralphd/workers/w1/work"},
		{"plant index.lock", "touch $C/index.lock"},
		{"plant HEAD.lock", "touch $C/HEAD.lock"},
		{"plant packed-refs.lock", "touch $C/packed-refs.lock"},
		{"plant the target's ref lock", "touch $C/refs/heads/main.lock"},
		{"git config", "echo '[core] fsmonitor = evil' >> $C/config"},
		{"replace git config", "echo '[core] fsmonitor = evil' > $T/cfg && mv $T/cfg $C/config"},
		{"a file beside the config", "echo x > $C/config.new"},
		{"graft history away with a shallow file", "echo $X > $C/shallow"},
		{"redirect the common dir", "echo /tmp > $C/commondir"},
		{"rewrite packed-refs", "echo > $C/packed-refs"},
	}
	var script strings.Builder
	script.WriteString("git commit -q --allow-empty -m mine || exit 9\nX=$(git rev-parse HEAD)\n")
	for round := 1; round <= 2; round++ {
		fmt.Fprintf(&script, "touch $T/ready%d\n", round)
		fmt.Fprintf(&script, "n=0; while [ ! -e $T/moved%d ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done\n", round)
		for i, tt := range refused {
			fmt.Fprintf(&script, "( %s ) >/dev/null 2>&1; echo \"%d %d $?\"\n", tt.script, round, i)
		}
		script.WriteString("git commit -q --allow-empty -m again || exit 9\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, out := r.start(ctx, bwrap, script.String())
	for round := 1; round <= 2; round++ {
		r.await(fmt.Sprintf("ready%d", round), out)
		// The merge queue's check before it moves the checkout.
		is.Equal(r.git(r.repo, "status", "--porcelain", "--untracked-files=no"), "")
		r.integrate(fmt.Sprintf("integrated%d", round))
		is.NoErr(os.WriteFile(filepath.Join(r.tmp, fmt.Sprintf("moved%d", round)), nil, 0o644))
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the agent's own commits failed: %v\n%s", err, out.String())
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var round, i, rc int
		if _, err := fmt.Sscanf(l, "%d %d %d", &round, &i, &rc); err != nil || i < 0 || i >= len(refused) {
			t.Fatalf("unexpected output %q", l)
		}
		n++
		if rc == 0 {
			t.Errorf("after integration %d, %q succeeded inside the sandbox", round, refused[i].script)
		}
	}
	is.Equal(n, 2*len(refused))
	is.Equal(r.git(r.repo, "status", "--porcelain", "--untracked-files=no"), "") // a third integration would find it clean
	is.Equal(r.git(r.repo, "symbolic-ref", "HEAD"), "refs/heads/main")
	is.Equal(r.git(r.repo, "ls-files"), "integrated1.txt\nintegrated2.txt")
	for _, l := range []string{"index.lock", "HEAD.lock", "packed-refs.lock", "refs/heads/main.lock", "config.new", "shallow", "commondir"} {
		_, err := os.Stat(filepath.Join(r.common, l))
		is.True(errors.Is(err, fs.ErrNotExist)) // nothing planted
	}
}

// TestSharedNoTracker: a worker's sandbox starts when the target's
// checkout has no .beads (an external tracker): the read-only checkout
// needs no seal, and bwrap could not make its mount point there.
func TestSharedNoTracker(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	r := newSharedRepo(t)
	if err := os.RemoveAll(filepath.Join(r.repo, ".beads")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, out := r.start(ctx, bwrap, "git commit -q --allow-empty -m mine && ! mkdir $REPO/.beads")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the sandbox did not run: %v\n%s", err, out.String())
	}
}

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestSharedLayoutOrder: refs/heads and the other worktrees' dir are
// bound read-only after the writable common dir, and the agent's own
// branch dir and worktree dir writable again after them.
func TestSharedLayoutOrder(t *testing.T) {
	is := is.New(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	c := filepath.Join(root, "repo", ".git")
	own := filepath.Join(c, "worktrees", "w1")
	ownRefs := filepath.Join(c, "refs", "heads", "ralphd", "workers", "w1")
	for _, d := range []string{own, ownRefs, filepath.Join(root, "w1")} {
		is.NoErr(os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{filepath.Join(c, "HEAD"), filepath.Join(c, "index")} {
		is.NoErr(os.WriteFile(f, []byte("x\n"), 0o644))
	}
	l := BuildLayout(Project{WorkTree: filepath.Join(root, "w1"), GitDir: own, GitCommonDir: c,
		Shared: &Shared{OwnRefs: "refs/heads/ralphd/workers/w1", MainCheckout: true}})
	args := strings.Join(l.Args("bwrap", []string{"true"}), " ")
	pos := func(s string) int {
		i := strings.Index(args, s)
		if i < 0 {
			t.Fatalf("%q not in %s", s, args)
		}
		return i
	}
	is.True(pos("--bind "+c+" ") < pos("--ro-bind "+c+"/worktrees "))
	is.True(pos("--ro-bind "+c+"/worktrees ") < pos("--bind "+own+" "))
	is.True(pos("--ro-bind "+c+"/refs/heads ") < pos("--bind "+ownRefs+" "))
	pos("--ro-bind " + c + "/HEAD ")
	pos("--ro-bind " + c + "/index ")
}

// TestSharedRefsHold: a worker's sandboxed agent tries every route to move
// the target, another worker's branch or HEAD, or the kept work; each
// fails, and the agent can still commit on its own branch and make
// branches of its own.
func TestSharedRefsHold(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(root, "home")
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@x"} {
		t.Setenv(k, v)
	}
	repo := filepath.Join(root, "repo")
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	is := is.New(t)
	is.NoErr(os.MkdirAll(filepath.Join(repo, ".beads"), 0o755))
	git(repo, "init", "-q", "-b", "main")
	git(repo, "commit", "-q", "--allow-empty", "-m", "base")
	git(repo, "branch", "wip/w2/old")
	w1, w2 := filepath.Join(root, "wt", "w1"), filepath.Join(root, "wt", "w2")
	git(repo, "worktree", "add", "-q", "-b", "ralphd/workers/w1/work", w1)
	git(repo, "worktree", "add", "-q", "-b", "ralphd/workers/w2/work", w2)
	c := filepath.Join(repo, ".git")
	var main, other string // where ralphd leaves the target and w2's branch, below
	tmp := filepath.Join(root, "tmp")
	is.NoErr(os.MkdirAll(tmp, 0o755))
	l := BuildLayout(Project{WorkTree: w1, GitDir: filepath.Join(c, "worktrees", "w1"), GitCommonDir: c, Scratch: tmp, Home: home,
		Shared: &Shared{OwnRefs: "refs/heads/ralphd/workers/w1", MainCheckout: true}})
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
	argv := l.Args(bwrap, []string{"sh", "-c", script.String()})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = w1
	cmd.Env = append(os.Environ(), "C="+c, "W2="+w2, "REPO="+repo, "T="+tmp)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	is.NoErr(cmd.Start())
	for n := 0; ; n++ {
		if _, err := os.Stat(filepath.Join(tmp, "mine")); err == nil {
			break
		}
		if n > 400 {
			t.Fatalf("the sandbox never committed:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
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

package git

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// objectPath is the loose object file of rev in the repository at dir.
func objectPath(t *testing.T, dir, rev string) string {
	id := git(t, dir, "rev-parse", rev)
	return filepath.Join(dir, ".git", "objects", id[:2], id[2:])
}

func TestObjectKeeperPutsBackDeletedObjects(t *testing.T) {
	is := is.New(t)
	dir, _ := newRepo(t)
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "second")
	k := &ObjectKeeper{Objects: filepath.Join(dir, ".git", "objects"), Dir: filepath.Join(t.TempDir(), "kept"), HashLen: 40}
	is.NoErr(k.Keep())

	head := objectPath(t, dir, "HEAD")
	blob := objectPath(t, dir, "HEAD:a.txt")
	is.NoErr(os.Remove(head))
	is.NoErr(os.WriteFile(blob+".tmp", []byte("garbage"), 0o444))
	is.NoErr(os.Rename(blob+".tmp", blob)) // replaced at its name

	res, err := k.Restore()
	is.NoErr(err)
	is.Equal(len(res.Files), 2)    // the deleted and the replaced one
	is.Equal(len(res.Replaced), 1) // the replaced one
	git(t, dir, "fsck", "--no-dangling", "--no-progress")

	again, err := k.Restore()
	is.NoErr(err)
	is.True(again.Empty()) // nothing lost since
}

func TestObjectKeeperLetsAGcGo(t *testing.T) {
	is := is.New(t)
	dir, _ := newRepo(t)
	k := &ObjectKeeper{Objects: filepath.Join(dir, ".git", "objects"), Dir: filepath.Join(t.TempDir(), "kept"), HashLen: 40}
	is.NoErr(k.Keep())
	head := objectPath(t, dir, "HEAD")

	// A gc packs every loose object and removes it: nothing is lost.
	git(t, dir, "gc", "-q")
	_, err := os.Stat(head)
	is.True(os.IsNotExist(err)) // packed
	res, err := k.Restore()
	is.NoErr(err)
	is.True(res.Empty()) // every object is in the pack
	_, err = os.Stat(filepath.Join(k.Dir, strings.TrimPrefix(head, k.Objects)))
	is.True(os.IsNotExist(err)) // and the link is let go

	// A pack deleted is put back whole.
	is.NoErr(k.Keep())
	packs, _ := filepath.Glob(filepath.Join(k.Objects, "pack", "pack-*"))
	is.True(len(packs) >= 2) // .pack and .idx
	for _, p := range packs {
		is.NoErr(os.Remove(p))
	}
	res, err = k.Restore()
	is.NoErr(err)
	is.Equal(len(res.Files), len(packs))
	git(t, dir, "fsck", "--no-dangling", "--no-progress")
}

func TestHistoryPutsBackARewrite(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, _ := newRepo(t)
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "second")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "third")
	git(t, dir, "branch", "side", "HEAD~1")
	git(t, dir, "tag", "-a", "-m", "v1", "v1", "HEAD~1")
	before := git(t, dir, "rev-parse", "main")

	h, err := NewHistory(ctx, dir, filepath.Join(t.TempDir(), "kept"))
	is.NoErr(err)
	h.Forward = []string{"refs/heads/main"}
	is.NoErr(h.Take(ctx))

	// The agent rewrites main, deletes side and the tag, leaves work
	// uncommitted, expires the reflogs and prunes.
	git(t, dir, "reset", "-q", "--hard", "HEAD~2")
	write(t, dir, "b.txt", "rewritten\n")
	git(t, dir, "add", "b.txt")
	git(t, dir, "commit", "-q", "-m", "rewritten")
	rewritten := git(t, dir, "rev-parse", "HEAD")
	write(t, dir, "a.txt", "uncommitted\n")
	git(t, dir, "branch", "-D", "side")
	git(t, dir, "tag", "-d", "v1")
	git(t, dir, "reflog", "expire", "--expire=now", "--all")
	git(t, dir, "gc", "-q", "--prune=now")

	lost, err := h.Check(ctx, "test", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	is.NoErr(err)
	is.True(!lost.Objects.Empty()) // the pruned objects came back
	is.Equal(len(lost.Moves), 3)   // main, side and the tag
	is.Equal(git(t, dir, "rev-parse", "main"), before)
	git(t, dir, "rev-parse", "--verify", "side")
	git(t, dir, "rev-parse", "--verify", "v1")
	git(t, dir, "fsck", "--no-dangling", "--no-progress")
	// The work tree is back at main, and the agent's rewrite, with its
	// uncommitted work, is kept.
	is.Equal(git(t, dir, "status", "--porcelain", "--", ".", ":(exclude).beads"), "")
	kept := "ralphd/moved/test/20260102-030405"
	is.Equal(git(t, dir, "rev-parse", kept+"~1"), rewritten)
	is.Equal(git(t, dir, "show", kept+":a.txt"), "uncommitted")
	for _, l := range lost.Lines() {
		is.True(l != "")
	}

	// The next check finds nothing more.
	lost, err = h.Check(ctx, "test", time.Now())
	is.NoErr(err)
	is.True(lost.Empty())
}

func TestHistoryLetsTheBranchGrow(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, _ := newRepo(t)
	git(t, dir, "branch", "old")
	h, err := NewHistory(ctx, dir, filepath.Join(t.TempDir(), "kept"))
	is.NoErr(err)
	h.Forward = []string{"refs/heads/main"}
	is.NoErr(h.Take(ctx))

	git(t, dir, "commit", "-q", "--allow-empty", "-m", "new work")
	git(t, dir, "branch", "-D", "old") // its commit is still on main
	git(t, dir, "gc", "-q", "--prune=now")
	lost, err := h.Check(ctx, "test", time.Now())
	is.NoErr(err)
	is.True(lost.Empty()) // growing, and deleting a ref whose commit stays reachable, lose nothing
}

func TestFailureBranchKeepsIgnoredWork(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	dir, r := newRepo(t)
	write(t, dir, "config.local", "base\n")
	write(t, dir, ".gitignore", "*.log\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "config")
	base, _ := r.Head(ctx)
	write(t, dir, "build.log", "ignored by the base too\n")

	// The agent untracks the config and ignores it in a commit, and
	// writes work under a rule it added.
	write(t, dir, "config.local", "agent\n")
	git(t, dir, "rm", "-q", "--cached", "config.local")
	write(t, dir, ".gitignore", "*.log\nconfig.local\nscratch/\n")
	git(t, dir, "commit", "-qam", "untrack")
	write(t, dir, "scratch/work.txt", "hidden work\n")

	_, err := r.FailureBranch(ctx, "wip/t", "keep", base)
	is.NoErr(err)
	is.Equal(git(t, dir, "show", "wip/t:config.local"), "agent")
	is.Equal(git(t, dir, "show", "wip/t:scratch/work.txt"), "hidden work")
	_, err = r.git(ctx, "cat-file", "-e", "wip/t:build.log")
	is.True(err != nil) // ignored by the base's rules too: not committed...
	b, err := os.ReadFile(filepath.Join(dir, "build.log"))
	is.NoErr(err)
	is.Equal(string(b), "ignored by the base too\n") // ...and left in place
	b, _ = os.ReadFile(filepath.Join(dir, "config.local"))
	is.Equal(string(b), "base\n") // the restore is the base's
}

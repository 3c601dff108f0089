package worktree

import (
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

func TestGitDirs(t *testing.T) {
	is := is.New(t)
	dir, r := newRepo(t)
	dir, _ = filepath.EvalSymlinks(dir)
	gitDir, common, err := r.GitDirs(t.Context())
	is.NoErr(err)
	is.Equal(gitDir, filepath.Join(dir, ".git"))
	is.Equal(common, filepath.Join(dir, ".git"))

	linked := filepath.Join(t.TempDir(), "linked")
	git(t, dir, "worktree", "add", "-q", linked)
	gitDir, common, err = Repo{Dir: linked}.GitDirs(t.Context())
	is.NoErr(err)
	is.Equal(gitDir, filepath.Join(dir, ".git", "worktrees", "linked")) // the linked worktree's own git dir
	is.Equal(common, filepath.Join(dir, ".git"))                        // the main repository's
}

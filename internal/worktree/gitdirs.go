package worktree

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// GitDirs returns the work tree's git dir and git's common dir (they
// differ in a linked worktree), both absolute.
func (r Repo) GitDirs(ctx context.Context) (gitDir, commonDir string, err error) {
	out, err := r.git(ctx, "rev-parse", "--absolute-git-dir", "--git-common-dir")
	if err != nil {
		return "", "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("git rev-parse: want 2 lines, got %q", out)
	}
	gitDir, commonDir = lines[0], lines[1]
	if !filepath.IsAbs(commonDir) {
		commonDir = filepath.Join(r.Dir, commonDir)
	}
	return gitDir, filepath.Clean(commonDir), nil
}

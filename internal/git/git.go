package git

import (
	"context"
	"strings"
	"time"
)

// gitTimeout bounds one git call.
const gitTimeout = 2 * time.Minute

// Git runs git with args in dir through gitsafe, so that none of the
// repository's code (hooks, fsmonitor, filters) runs: a worker's agent can
// plant it, and worktree add, reset and rebase would run it outside the
// guard. env is added to the environment; the error carries git's stderr.
func Git(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	return OutputEnv(ctx, dir, env, args...)
}

// GitIn is Git through run, a gitsafe.Runner shared by the git calls of
// one step in one directory (see gitsafe.Runner for when that is safe).
func GitIn(ctx context.Context, run *Runner, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	return run.OutputEnv(ctx, nil, args...)
}

// CommonDir returns the absolute path of the common git directory of the
// repository whose work tree (or one of its worktrees) is repo.
func CommonDir(ctx context.Context, repo string) (string, error) {
	return gitLine(ctx, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
}

func gitLine(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := Git(ctx, dir, nil, args...)
	return strings.TrimSpace(string(out)), err
}

package git_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/testkit/gitplant"
)

// safeOps are the git commands ralphd runs (worktree, state, modes,
// demo), with their content-converting ones, run through the runner.
var safeOps = [][]string{
	{"rev-parse", "--verify", "-q", "HEAD"},
	{"rev-parse", "--show-toplevel"},
	{"symbolic-ref", "-q", "--short", "HEAD"},
	{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".", ":(exclude).beads"},
	{"diff", "HEAD"},
	{"diff", "--binary", "HEAD", "--", ".", ":(exclude).beads"},
	{"ls-files", "-z", "--others", "--exclude-standard"},
	{"hash-object", "--no-filters", "--", "README.md"},
	{"config", "user.name"},
	{"add", "-A", "--", ".", ":(exclude).beads"},
	{"write-tree"},
	{"branch", "ralphd-probe"},
	{"reset", "-q", "--soft", "HEAD"},
	{"restore", "--source=HEAD", "--staged", "--worktree", "--", ".", ":(exclude).beads"},
	{"clean", "-fdq", "--", ".", ":(exclude).beads"},
	{"push", "-q", "origin", "ralphd-probe"},
	// Run with no drivers looked up (plain): they must read no content.
	{"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"},
	{"merge-base", "--is-ancestor", "HEAD", "HEAD"},
	{"rev-list", "--count", "HEAD"},
	{"show-ref", "--heads"},
	{"update-ref", "-m", "probe", "refs/heads/ralphd-probe-2", "HEAD"},
	{"worktree", "list", "--porcelain", "-z"},
	{"worktree", "prune"},
	{"clean", "-fdxq"},
}

// Each route, planted, runs its payload from plain git (so the test can
// fail) and never from the runner, whatever ralphd asks git to do.
func TestNoPlantedCodeRuns(t *testing.T) {
	for _, r := range gitplant.Routes() {
		t.Run(r.Name, func(t *testing.T) {
			is := is.New(t)
			dir, markers := gitplant.Repo(t), t.TempDir()
			r.Plant(t, dir, markers)

			// Control: the planted code is live.
			gitplant.Touch(t, dir)
			gitplant.TryGit(dir, r.Trigger...)
			is.True(len(gitplant.Ran(t, markers)) > 0) // plain git runs the payload
			if err := os.RemoveAll(markers); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(markers, 0o755); err != nil {
				t.Fatal(err)
			}

			gitplant.Touch(t, dir)
			ctx := context.Background()
			for _, args := range append([][]string{r.Trigger}, safeOps...) {
				if _, err := git.Output(ctx, dir, args...); err != nil && !strings.Contains(err.Error(), "exit status") {
					t.Fatalf("git %v: %v", args, err)
				}
			}
			is.Equal(gitplant.Ran(t, markers), []string(nil)) // no payload ran from the runner

			// Nor from a Runner, whose commands share one lookup.
			gitplant.Touch(t, dir)
			run := git.NewRunner(dir)
			for _, args := range append([][]string{r.Trigger}, safeOps...) {
				if _, err := run.OutputEnv(ctx, nil, args...); err != nil && !strings.Contains(err.Error(), "exit status") {
					t.Fatalf("git %v: %v", args, err)
				}
			}
			is.Equal(gitplant.Ran(t, markers), []string(nil)) // no payload ran from a Runner
		})
	}
}

// A filter defined in the global configuration (~/.gitconfig, which the
// agent can write too) is found and emptied as well.
func TestGlobalFilterDoesNotRun(t *testing.T) {
	is := is.New(t)
	dir, markers := gitplant.Repo(t), t.TempDir()
	script := filepath.Join(t.TempDir(), "clean")
	is.NoErr(os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+filepath.Join(markers, "global")+"'\ncat\n"), 0o755))
	global := filepath.Join(t.TempDir(), "gitconfig")
	is.NoErr(os.WriteFile(global, []byte("[filter \"glob\"]\n\tclean = "+script+"\n"), 0o644))
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	is.NoErr(os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("* filter=glob\n"), 0o644))
	gitplant.Touch(t, dir)
	gitplant.TryGit(dir, "diff", "HEAD")
	is.Equal(len(gitplant.Ran(t, markers)), 1) // control
	is.NoErr(os.Remove(filepath.Join(markers, "global")))
	gitplant.Touch(t, dir)
	_, err := git.Output(context.Background(), dir, "diff", "HEAD")
	is.NoErr(err)
	is.Equal(gitplant.Ran(t, markers), []string(nil))
}

// An inherited GIT_CONFIG_COUNT is kept, and the runner's entries come after
// it, so they win.
func TestConfigEnvKeepsInheritedEntries(t *testing.T) {
	is := is.New(t)
	dir := gitplant.Repo(t)
	t.Setenv("GIT_CONFIG_COUNT", "2")
	t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
	t.Setenv("GIT_CONFIG_VALUE_0", "/somewhere")
	t.Setenv("GIT_CONFIG_KEY_1", "ralphd.probe")
	t.Setenv("GIT_CONFIG_VALUE_1", "kept")
	out, err := git.Output(context.Background(), dir, "config", "ralphd.probe")
	is.NoErr(err)
	is.Equal(strings.TrimSpace(string(out)), "kept")
	out, err = git.Output(context.Background(), dir, "config", "core.hooksPath")
	is.NoErr(err)
	is.Equal(strings.TrimSpace(string(out)), "/dev/null")
}

func TestOutputErrorCarriesStderr(t *testing.T) {
	is := is.New(t)
	_, err := git.Output(context.Background(), t.TempDir(), "rev-parse", "--show-toplevel")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "not a git repository"))
}

// A Runner looks the drivers up once for all its commands that need
// them, and not at all for those that read no file content; Output looks
// them up for each such command.
func TestRunnerLooksDriversUpOnce(t *testing.T) {
	is := is.New(t)
	dir := gitplant.Repo(t)
	lookups := gitplant.CountLookups(t)
	ctx := context.Background()

	run := git.NewRunner(dir)
	for _, args := range [][]string{{"rev-parse", "HEAD"}, {"status", "--porcelain=v2"}, {"diff", "HEAD"}, {"write-tree"}} {
		_, err := run.OutputEnv(ctx, nil, args...)
		is.NoErr(err)
	}
	is.Equal(lookups(), 1) // one for status, diff and write-tree; none for rev-parse

	for _, args := range [][]string{{"status", "--porcelain=v2"}, {"diff", "HEAD"}} {
		_, err := git.Output(ctx, dir, args...)
		is.NoErr(err)
	}
	is.Equal(lookups(), 3) // Output looks up for each
}

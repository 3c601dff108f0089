// The runner: every git call ralphd makes goes through Runner.OutputEnv
// (Output, OutputEnv and Runner's methods are ways in), so that none of the
// repository's own code runs: not its fsmonitor, hooks, clean/smudge/process filters,
// external diff drivers or textconv programs, wherever they are configured
// (.git/config, an included file, the global config, .gitattributes).
// The same place bounds each call in time (timeout) and memory (maxData).
//
// A BUILD agent can plant any of these in the repository it works in, and
// ralphd's own git calls run after the agent, outside the bd guard.
//
// How each route is closed:
//   - fsmonitor: core.fsmonitor=false;
//   - hooks: core.hooksPath=/dev/null (no hook can exist there);
//   - filters: `-c` cannot remove a driver, and the attribute that names one
//     can come from any .gitattributes, so the runner asks git which
//     filter.<name>.* drivers its configuration defines and empties each
//     one's clean, smudge and process commands (and clears required), for
//     every subcommand that may read file content;
//   - merge drivers (merge=<name>, run by merge, rebase, cherry-pick): found
//     the same way, each one's command becomes `false`, so that a file it
//     would merge is a conflict instead;
//   - external diff and textconv: diff always gets --no-ext-diff and
//     --no-textconv;
//   - submodules: status and diff do not look inside them
//     (--ignore-submodules=dirty), so no git runs with a submodule's config;
//   - the pager, signing, and ext:: remotes are turned off as well;
//   - object substitution: GIT_NO_REPLACE_OBJECTS makes git ignore
//     refs/replace/*, and GIT_GRAFT_FILE=/dev/null the repository's
//     info/grafts, which the agent can plant to make a commit read as
//     another (its content, its parents) while the target and a push get
//     the real one.
//
// The overrides travel in GIT_CONFIG_COUNT/KEY/VALUE, which take any key,
// including a driver name with '=' in it, and reach the git processes git
// starts itself.

package git

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ralphd/ralphd/internal/proc"
)

// grace is how long a cancelled git gets between SIGTERM and SIGKILL.
const grace = 2 * time.Second

// fixed are the settings every call overrides.
var fixed = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"diff.external", ""},
	{"submodule.recurse", "false"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"protocol.ext.allow", "never"},
	{"advice.graftFileDeprecated", "false"}, // GIT_GRAFT_FILE is read, and empty
}

// plain are the subcommands known to read no work tree file content and to
// merge nothing, so that no filter or merge driver can run (hash-object
// only with --no-filters, worktree only to list or prune: see
// needsDrivers). Every other one may: even write-tree runs a clean filter
// to refresh a racily clean index entry. for-each-ref, merge-base,
// rev-list and show-ref read refs and objects only; update-ref writes a
// ref (its reference-transaction hook is off with every hook); clean
// removes untracked files by path, reading none.
var plain = []string{"config", "rev-parse", "symbolic-ref", "commit-tree", "branch", "ls-files", "hash-object",
	"for-each-ref", "merge-base", "rev-list", "show-ref", "update-ref", "clean", "worktree"}

// needsDrivers reports whether git with args may run a filter or merge
// driver, so that the runner must look them up and turn them off.
func needsDrivers(sub string, args []string) bool {
	switch {
	case !slices.Contains(plain, sub):
		return true
	case sub == "hash-object":
		return !slices.Contains(args, "--no-filters")
	case sub == "worktree":
		// add checks files out; remove looks for changes. list and prune
		// read git's own files only.
		i := slices.Index(args, "worktree")
		return i < 0 || i+1 >= len(args) || (args[i+1] != "list" && args[i+1] != "prune")
	}
	return false
}

// Output runs git with args in dir and returns its stdout (see
// Runner.OutputEnv); the error says what failed and carries git's stderr.
func Output(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return NewRunner(dir).OutputEnv(ctx, nil, args...)
}

// OutputEnv is Output with env added to the environment.
func OutputEnv(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	return NewRunner(dir).OutputEnv(ctx, env, args...)
}

// A Runner runs git commands in one directory, with one lookup of the
// filter and merge drivers for all of them: the first command that needs
// the list looks it up, the others reuse it. Every git call of ralphd's
// goes through one (Output and OutputEnv make one for a single call).
//
// The list is what git's configuration said at the lookup. Share a Runner
// between commands that run back to back while no code but ralphd's
// changes the configuration (no agent or check running, their process
// trees ended); use a new one for each such step. A single call has the
// same exposure between its lookup and its git's start.
type Runner struct {
	dir     string
	sets    [][2]string // fixed and the drivers' overrides, once looked up
	maxData uint64      // a test's lower cap; 0 means maxData
}

// NewRunner returns a Runner for git commands in dir.
func NewRunner(dir string) *Runner { return &Runner{dir: dir} }

// Output runs git with args in the runner's directory, as OutputEnv does.
func (r *Runner) Output(ctx context.Context, args ...string) ([]byte, error) {
	return r.OutputEnv(ctx, nil, args...)
}

// timeout bounds one git call, the lookup of the drivers included.
const timeout = 2 * time.Minute

// OutputEnv runs git with args in the runner's directory, with env added
// to its environment, and returns its stdout; the error says what failed
// and carries git's stderr. It is the one place ralphd runs git: the
// call is bounded in time (timeout) and memory (maxData), runs in its own
// process group, ends with ctx (see proc.Command) and dies with ralphd,
// and runs none of the repository's code. Unless the subcommand is one
// that reads no file content (rev-parse, config, ...), it first asks git
// which filter and merge drivers are configured (once per Runner); that
// call runs no code either.
func (r *Runner) OutputEnv(ctx context.Context, env []string, args ...string) ([]byte, error) {
	return r.OutputIn(ctx, env, nil, args...)
}

// OutputIn is OutputEnv with stdin as git's standard input (nil: none),
// for the subcommands that read paths or ids from it.
func (r *Runner) OutputIn(ctx context.Context, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := r.command(ctx, args...)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := output(cmd, cmp.Or(r.maxData, maxData))
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
		}
		return out, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// command returns the git command for args in the runner's directory,
// with the safe configuration, the drivers turned off when it may run
// one, and the subcommand's safe flags.
func (r *Runner) command(ctx context.Context, args ...string) (*exec.Cmd, error) {
	sets := fixed
	sub := subcommand(args)
	if needsDrivers(sub, args) {
		if r.sets == nil {
			filters, merges, err := drivers(ctx, r.dir)
			if err != nil {
				return nil, err
			}
			r.sets = withDrivers(filters, merges)
		}
		sets = r.sets
	}
	return command(ctx, r.dir, sets, withSafeFlags(args, sub)), nil
}

// maxData caps the memory (RLIMIT_DATA) of each git OutputEnv runs. A
// loose ref that is a link to /dev/zero, planted by an agent just before
// a git of ralphd's reads it (Scrub removes it at the next scrub), has
// git read until the machine runs out of memory; capped, git fails with
// "Out of memory" at this size. No git call of ralphd's needs near it:
// packs are mapped from their files, which the cap does not count.
const maxData = 4 << 30

// output is cmd.Output for a git whose memory limit (RLIMIT_DATA) is
// lowered to max bytes just after it starts, before it can have read
// much.
func output(cmd *exec.Cmd, max uint64) ([]byte, error) {
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lim := unix.Rlimit{Cur: max, Max: max}
	_ = unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_DATA, &lim, nil)
	err := cmd.Wait()
	return stdout.Bytes(), err
}

// withDrivers returns the fixed settings and those that turn off the
// named filter and merge drivers.
func withDrivers(filters, merges []string) [][2]string {
	sets := slices.Clip(fixed)
	for _, n := range filters {
		for _, k := range []string{"clean", "smudge", "process"} {
			sets = append(sets, [2]string{"filter." + n + "." + k, ""})
		}
		sets = append(sets, [2]string{"filter." + n + ".required", "false"})
	}
	for _, n := range merges {
		sets = append(sets, [2]string{"merge." + n + ".driver", "false"})
	}
	return sets
}

// command builds the git process with sets as configuration overrides.
func command(ctx context.Context, dir string, sets [][2]string, args []string) *exec.Cmd {
	cmd := proc.Command(ctx, grace, "git", append([]string{"--no-pager"}, args...)...)
	// git leads a group of its own, so a SIGKILL of ralphd does not reach
	// it: without this, a rebase or a move of the target would go on while
	// the next start recovers the same worktree (seen in mergeq's SIGKILL
	// test: work lost). Killed with ralphd, it leaves what Recover undoes.
	proc.DieWithParent(cmd.SysProcAttr)
	cmd.Dir = dir
	cmd.Env = configEnv(os.Environ(), sets)
	return cmd
}

// Env returns env with the settings every ralphd git call runs with (no
// hooks, no fsmonitor, no pager, no external diff, no signing, no ext::
// remotes, no object substitution), for a program that runs git itself
// where the agent may have written the repository: the real bd the guard
// runs for a BUILD agent. Filter and merge drivers, which a repository
// names itself, are not turned off.
func Env(env []string) []string { return configEnv(env, fixed) }

// configEnv returns env with sets added as GIT_CONFIG_KEY_n/VALUE_n
// after any such entries env already has, and with variables that keep
// git from prompting, taking locks it does not need, or reading planted
// object substitutions.
func configEnv(env []string, sets [][2]string) []string {
	out := make([]string, 0, len(env)+2*len(sets)+3)
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			if c, err := strconv.Atoi(v); err == nil && c > 0 {
				n = c
			}
			continue
		}
		out = append(out, kv)
	}
	for _, s := range sets {
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", n, s[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, s[1]))
		n++
	}
	return append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(n),
		"GIT_TERMINAL_PROMPT=0",    // never wait for a password
		"GIT_OPTIONAL_LOCKS=0",     // status need not rewrite the index under the agent
		"GIT_NO_REPLACE_OBJECTS=1", // read what a commit holds, not a planted replacement
		"GIT_GRAFT_FILE=/dev/null", // nor parents from a planted info/grafts
	)
}

// subcommand returns the first argument that is not a global option.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++ // takes a value
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// withSafeFlags adds the subcommand's options that turn off external
// programs: right after the subcommand, so they precede any "--".
func withSafeFlags(args []string, sub string) []string {
	var extra []string
	switch sub {
	case "diff":
		extra = []string{"--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"}
	case "status":
		extra = []string{"--ignore-submodules=dirty"}
	default:
		return args
	}
	i := slices.Index(args, sub)
	out := make([]string, 0, len(args)+len(extra))
	out = append(out, args[:i+1]...)
	out = append(out, extra...)
	return append(out, args[i+1:]...)
}

// drivers returns the names of the filter and merge drivers git's
// configuration defines, from every scope and included file.
func drivers(ctx context.Context, dir string) (filters, merges []string, err error) {
	cmd := command(ctx, dir, fixed, []string{"config", "-z", "--name-only", "--get-regexp", `^(filter|merge)\.`})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := output(cmd, maxData)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 && stderr.Len() == 0 {
			return nil, nil, nil // none configured
		}
		return nil, nil, fmt.Errorf("list the repository's filter and merge drivers: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseDriverNames(out, "filter."), parseDriverNames(out, "merge."), nil
}

// parseDriverNames returns the distinct <name> parts of the NUL-separated
// keys "<section><name>.<variable>" in out (section is "filter." or
// "merge."). A name may hold dots, so it runs to the last one.
func parseDriverNames(out []byte, section string) []string {
	var names []string
	for _, k := range bytes.Split(out, []byte{0}) {
		rest, ok := bytes.CutPrefix(k, []byte(section))
		if !ok {
			continue
		}
		i := bytes.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		if n := string(rest[:i]); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

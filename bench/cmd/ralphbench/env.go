package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// agentCmd is the benchmark's agent: it closes its issue at once, citing
// evidence as ralphd's judge asks.
const agentCmd = `bd close "$RALPH_ISSUE_ID" --reason "go test ./... passes (exit 0)"`

// benchEnv is where one benchmark run keeps its programs and scratch
// files, and the environment its subprocesses get.
type benchEnv struct {
	bin  string // ralphd, bd (the stand-in), bdrec, jsonlgen
	repo string // the ralphd checkout (go test, loop.sh)
	work string // scratch directory
	git  string // absolute path of git
	// recBin holds bdrec installed as bd and git.
	recBin string
	base   []string // environment of every ralphd, bd, git and bash run
	// real is the real bd this environment runs instead of the stand-in
	// (withRealBD); nil: the stand-in.
	real *realBin
}

func (e *benchEnv) ralphd() string { return filepath.Join(e.bin, "ralphd") }

// bd is the bd this environment runs: the stand-in, or a real bd.
func (e *benchEnv) bd() string {
	if e.real != nil {
		return e.real.Path
	}
	return e.standin()
}

// standin is the stand-in bd (internal/testkit/fakebd), which the
// benchmarks generate trackers with.
func (e *benchEnv) standin() string { return filepath.Join(e.bin, "bd") }

// bdDir is the directory whose bd is first on PATH: the stand-in's, or
// one holding a link to the real bd.
func (e *benchEnv) bdDir() string {
	if e.real != nil {
		return e.real.dir
	}
	return e.bin
}
func (e *benchEnv) jsonlgen() string { return filepath.Join(e.bin, "jsonlgen") }
func (e *benchEnv) loopSh() string   { return filepath.Join(e.repo, "bench", "loop.sh") }

// newBenchEnv sets up the scratch directory: an isolated HOME and XDG
// directories, a git identity, and bdrec installed as bd and git.
func newBenchEnv(bin, repo, work string) (*benchEnv, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("find git: %w; install git", err)
	}
	e := &benchEnv{bin: bin, repo: repo, work: work, git: git, recBin: filepath.Join(work, "recbin")}
	for _, d := range []string{"home", "state", "config", "cache", "recbin"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o700); err != nil {
			return nil, fmt.Errorf("make scratch dir: %w", err)
		}
	}
	for _, name := range []string{"bd", "git"} {
		if err := os.Symlink(filepath.Join(bin, "bdrec"), filepath.Join(e.recBin, name)); err != nil {
			return nil, fmt.Errorf("install the call recorder as %s: %w", name, err)
		}
	}
	keep := func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"RALPH", "BEADS_", "BD_", "XDG_", "GIT_", "BENCH_", "NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_"} {
			if strings.HasPrefix(k, p) {
				return false
			}
		}
		return k != "HOME" && k != "PATH" && k != "NO_COLOR" && k != "LC_ALL"
	}
	for _, kv := range os.Environ() {
		if keep(kv) {
			e.base = append(e.base, kv)
		}
	}
	e.base = append(e.base,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+filepath.Join(work, "home"),
		"XDG_STATE_HOME="+filepath.Join(work, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(work, "config"),
		"XDG_CACHE_HOME="+filepath.Join(work, "cache"),
		"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "BEADS_ACTOR=Bench", "NO_COLOR=1", "LC_ALL=C",
		// The 5,000-issue sections measure incremental tracker reads;
		// auto (the default, named so a changed default shows here) keeps
		// the small trackers' readings full.
		"RALPH_TRACKER_READS=auto",
	)
	return e, nil
}

// env returns the base environment with extra entries; an entry replaces
// one with the same key.
func (e *benchEnv) env(extra ...string) []string {
	out := make([]string, 0, len(e.base)+len(extra))
	keys := map[string]bool{}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	for _, kv := range e.base {
		k, _, _ := strings.Cut(kv, "=")
		if !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// recordEnv is the environment under which bdrec records into log.
func (e *benchEnv) recordEnv(log string, extra ...string) []string {
	return e.env(append([]string{
		"BENCH_CALL_LOG=" + log,
		"BENCH_REAL_BD=" + e.bd(),
		"BENCH_REAL_GIT=" + e.git,
	}, extra...)...)
}

// pathWith returns a PATH entry with dir first.
func (e *benchEnv) pathWith(dir string) string {
	return "PATH=" + dir + string(os.PathListSeparator) + e.bdDir() + string(os.PathListSeparator) + e.bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// makeProject creates a scratch project at dir: a git repository with one
// commit and a bd tracker holding n open issues.
func (e *benchEnv) makeProject(ctx context.Context, dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make project: %w", err)
	}
	env := e.env()
	steps := [][]string{
		{"git", "init", "-q"},
		{"sh", "-c", "echo '# scratch project' > README.md && git add README.md && git commit -q -m init"},
		{e.bd(), "init", "--prefix", "b", "--quiet", "--non-interactive"},
	}
	for _, s := range steps {
		if _, err := run(ctx, env, dir, s[0], s[1:]...); err != nil {
			return fmt.Errorf("make project: %w", err)
		}
	}
	for i := 1; i <= n; i++ {
		if _, err := run(ctx, env, dir, e.bd(), "create", fmt.Sprintf("Issue %d", i), "-p", "2", "-q"); err != nil {
			return fmt.Errorf("make project: %w", err)
		}
	}
	return nil
}

package modes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/sandbox"
)

// sandboxed reports whether an agent in mode runs under bwrap: BUILD does
// when the run's sandbox decision says so; PLANNING never does, as it has
// full powers over the tracker.
func (l *Loop) sandboxed(mode string) bool { return mode == ModeBuild && l.Sandbox.Use }

// sandboxName is what the run log and history record say about the
// sandbox of an agent in mode: "bwrap" or "none".
func (l *Loop) sandboxName(mode string) string {
	if l.sandboxed(mode) {
		return "bwrap"
	}
	return "none"
}

// sandboxWrap returns the RunOptions.Wrap that runs a BUILD agent under
// bwrap, and the TMPDIR entry for its environment. gitDir and common are
// the work tree's git dirs when the caller found them since the last
// agent or check ended ("" to look them up here). readOnly are more
// paths the agent must not write (its bd client and the broker's socket).
func (l *Loop) sandboxWrap(ctx context.Context, scratch, gitDir, common string, readOnly ...string) (func(string, []string) (string, []string), string, error) {
	if gitDir == "" || common == "" {
		var err error
		if gitDir, common, err = l.repo().GitDirs(ctx); err != nil {
			return nil, "", fmt.Errorf("find the git dirs to protect: %w", err)
		}
	}
	tmp := filepath.Join(scratch, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, "", fmt.Errorf("make the agent's temp dir: %w", err)
	}
	env := l.environ()
	getenv := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	dirs, files := agent.Writable(l.Backend, agent.Home{Dir: getenv("HOME"), Getenv: getenv})
	layout := sandbox.BuildLayout(sandbox.Project{
		WorkTree: l.Dir, GitDir: gitDir, GitCommonDir: common, StateDir: l.State.Dir(), Scratch: scratch,
		ReadOnly: readOnly, AgentDirs: dirs, AgentFiles: files, Getenv: getenv,
		Shared: l.shared.sandboxShared(l.State.Worker()),
	})
	if err := layout.Prepare(); err != nil {
		return nil, "", err
	}
	wrap := func(path string, argv []string) (string, []string) {
		args := layout.Args(l.Sandbox.Bwrap, append([]string{path}, argv[1:]...))
		return args[0], args
	}
	return wrap, "TMPDIR=" + tmp, nil
}

// sandboxNote is the one line a BUILD run says when it runs unsandboxed
// although the setting allowed a sandbox.
func (l *Loop) sandboxNote(mode string) string {
	if mode != ModeBuild {
		return ""
	}
	return l.Sandbox.Notice
}

package scriptedapi

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// localBins are where scripts/install-agents puts each agent's binary,
// relative to the repository root.
var localBins = map[string]string{
	"claude":   ".tools/claude/node_modules/.bin/claude",
	"codex":    ".tools/codex/node_modules/.bin/codex",
	"opencode": ".tools/opencode/node_modules/.bin/opencode",
	"gemini":   ".tools/gemini/node_modules/.bin/gemini",
}

// FindClaude returns the claude binary to run against the server (see
// FindAgent).
func FindClaude(dir string) (string, error) { return FindAgent(dir, "claude") }

// FindAgent returns the binary of the agent CLI name ("claude", "codex",
// "opencode", "gemini") to run against the server: the one
// scripts/install-agents installed in .tools/<name> of dir or of the
// nearest parent directory that has one, else name on PATH.
func FindAgent(dir, name string) (string, error) {
	rel, ok := localBins[name]
	if !ok {
		return "", fmt.Errorf("find %s: not an agent scripts/install-agents installs", name)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", name, err)
	}
	for d := abs; ; {
		cand := filepath.Join(d, filepath.FromSlash(rel))
		if fi, err := os.Stat(cand); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("find %s: not in .tools/%s nor on PATH; run scripts/install-agents %s (needs node and npm): %w", name, name, name, err)
		}
		return "", fmt.Errorf("find %s: %w", name, err)
	}
	return p, nil
}

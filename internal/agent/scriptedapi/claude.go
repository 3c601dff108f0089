package scriptedapi

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ClaudeVersion is the Claude Code version scripts/install-claude pins and
// the server's behaviour was checked against.
const ClaudeVersion = "2.1.197"

// localClaude is where scripts/install-claude puts the binary, relative to
// the repository root.
const localClaude = ".tools/claude/node_modules/.bin/claude"

// FindClaude returns the claude binary to run against the server: the one
// scripts/install-claude installed in .tools/claude of dir or of the
// nearest parent directory that has one, else claude on PATH.
func FindClaude(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find claude: %w", err)
	}
	for d := abs; ; {
		cand := filepath.Join(d, filepath.FromSlash(localClaude))
		if fi, err := os.Stat(cand); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	p, err := exec.LookPath("claude")
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("find claude: not in .tools/claude nor on PATH; run scripts/install-claude (needs node and npm): %w", err)
		}
		return "", fmt.Errorf("find claude: %w", err)
	}
	return p, nil
}

package state

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/ralphd/ralphd/internal/git"
)

// Project id rules, as shown by `ralphd status`.
const (
	RuleRemote = "remote" // the id hashes remote.origin.url
	RulePath   = "path"   // no remote: the id hashes the top level's physical path
)

// NoRemote is the remote_url value when the repository has no origin
// remote, as the bash loop writes it.
const NoRemote = "none"

// Identity says which project a directory belongs to and how that was
// decided.
type Identity struct {
	// ID is the first 12 hex characters of a SHA-256 (see ProjectID).
	ID string `json:"project_id"`
	// Rule is RuleRemote or RulePath.
	Rule string `json:"rule"`
	// RemoteURL is remote.origin.url exactly as git prints it, or NoRemote.
	RemoteURL string `json:"remote_url"`
	// TopLevel is the physical absolute path of the repository's top level.
	TopLevel string `json:"project_path"`
}

// ProjectID identifies the git repository that contains dir, the way the
// bash loop does, so both find the same state directory:
//
//   - with a remote, the id is the first 12 hex characters of SHA-256 over
//     the exact bytes of `git config --get remote.origin.url`, without the
//     trailing newline (the bash loop's `echo -n "$(git config ...)"`, whose
//     command substitution strips trailing newlines only);
//   - with no remote (or an empty one), it hashes the physical absolute path
//     of `git rev-parse --show-toplevel`, with symlinks resolved.
//
// The bash loop hashes `pwd -P` of wherever loop.sh is started, which is the
// top level when it is started from the repository root as documented.
// ralphd hashes the top level itself, so starting it from a subdirectory
// finds the same state. A git worktree has its own top level, so without a
// remote each worktree has its own state; with a remote they share it.
func ProjectID(ctx context.Context, dir string) (Identity, error) {
	top, err := gitOut(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Identity{}, fmt.Errorf("identify project: %s is not inside a git repository work tree; run ralphd from your project's git checkout, or create one with `git init`", dir)
		}
		if errors.Is(err, exec.ErrNotFound) {
			return Identity{}, fmt.Errorf("identify project: git is not installed or not in $PATH; install git: %w", err)
		}
		return Identity{}, fmt.Errorf("identify project: %w", err)
	}
	topLevel := string(bytes.TrimRight(top, "\n"))
	if topLevel == "" {
		return Identity{}, fmt.Errorf("identify project: %s is inside a git directory but not in a work tree; run ralphd from your project's checkout", dir)
	}
	if phys, err := filepath.EvalSymlinks(topLevel); err == nil {
		topLevel = phys
	}
	if abs, err := filepath.Abs(topLevel); err == nil {
		topLevel = abs
	}

	url, err := gitOut(ctx, dir, "config", "--get", "remote.origin.url")
	if err != nil {
		var ee *exec.ExitError
		// Exit status 1 means the key is not set. Anything else is a real
		// failure; falling back to the path rule then would silently pick
		// another state directory.
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			return Identity{}, fmt.Errorf("identify project: %w", err)
		}
		url = nil
	}
	remote := string(bytes.TrimRight(url, "\n"))
	if remote == "" {
		return Identity{ID: hashID(topLevel), Rule: RulePath, RemoteURL: NoRemote, TopLevel: topLevel}, nil
	}
	return Identity{ID: hashID(remote), Rule: RuleRemote, RemoteURL: remote, TopLevel: topLevel}, nil
}

// hashID is the first 12 hex characters of SHA-256 over s.
func hashID(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// gitOut runs one git command in dir and returns its stdout. It goes through
// package git: the repository's hooks, filters and fsmonitor never run.
func gitOut(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return git.Output(ctx, dir, args...)
}

package state

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testID is a fixed project id for stores that need no git repository.
const testID = "0123456789ab"

func testIdentity(t *testing.T) Identity {
	t.Helper()
	return Identity{ID: testID, Rule: RulePath, RemoteURL: NoRemote, TopLevel: t.TempDir()}
}

// fixedNow is the clock tests install on stores.
func fixedNow() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC) }

// openStore opens a store under a fresh root.
func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), testIdentity(t), "v0.test")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	s.Now = fixedNow
	return s
}

// isolateGit keeps the user's and the system's git config out of tests,
// and stops git from finding a repository above the temp dirs.
func isolateGit(t *testing.T) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(t.TempDir()))
}

// run runs a command in dir and returns its stdout; it fails the test on
// error.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// newRepo makes a git repository in a fresh temp dir.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, nil, "git", "init", "-q")
	return dir
}

// readFile returns a file's content, failing the test on error.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(data)
}

// writeFile writes a file with mode 0600, failing the test on error.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

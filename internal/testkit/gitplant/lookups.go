package gitplant

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CountLookups puts a git first on PATH, for the rest of the test, that
// notes each call and runs the real git. It returns a function that
// tells how many of the calls so far were gitsafe's lookups of the
// repository's filter and merge drivers.
func CountLookups(t *testing.T) func() int {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	script := "#!/bin/sh\necho \"$*\" >> '" + log + "'\nexec '" + git + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		t.Helper()
		data, err := os.ReadFile(log)
		if errors.Is(err, fs.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "config -z --name-only --get-regexp")
	}
}

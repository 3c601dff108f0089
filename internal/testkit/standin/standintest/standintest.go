// Package standintest builds the stand-in bd for tests in other packages
// that run it as a binary, as ralphd runs the real bd.
package standintest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// build builds the stand-in once per test binary.
var build = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "standin-bd-*")
	if err != nil {
		return "", fmt.Errorf("stand-in bd: %w", err)
	}
	bin := filepath.Join(dir, "bd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/ralphd/ralphd/internal/testkit/fakebd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build the stand-in bd: %w\n%s", err, out)
	}
	return bin, nil
})

// Binary returns the path of the stand-in bd, building it on first use.
func Binary() (string, error) { return build() }

// Main runs the tests, then removes the binary; call it from TestMain.
func Main(run func() int) int {
	code := run()
	if bin, err := build(); err == nil {
		_ = os.RemoveAll(filepath.Dir(bin))
	}
	return code
}

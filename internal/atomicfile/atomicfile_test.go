package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

func TestWrite(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	is.NoErr(Write(path, []byte("one"), 0o600))
	is.NoErr(Write(path, []byte("two"), 0o640))
	b, err := os.ReadFile(path)
	is.NoErr(err)
	is.Equal(string(b), "two")
	fi, err := os.Stat(path)
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o640))
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 1) // no temp file left
}

func TestWriteMissingDir(t *testing.T) {
	is := is.New(t)
	err := Write(filepath.Join(t.TempDir(), "no", "f"), []byte("x"), 0o600)
	is.True(err != nil)
}

// TestWriteFailureAtEachStep fails the write before each step: the old
// content stays until the rename, the new one is in place after it, and no
// temp file is left either way.
func TestWriteFailureAtEachStep(t *testing.T) {
	injected := errors.New("injected")
	for step := range NumSteps {
		t.Run(step.String(), func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			is.NoErr(Write(path, []byte("old"), 0o600))
			w := Writer{Hook: func(s Step, p string) error {
				if s == step {
					is.Equal(p, path)
					return injected
				}
				return nil
			}}
			err := w.Write(path, []byte("new"), 0o600)
			is.True(errors.Is(err, injected))
			b, err := os.ReadFile(path)
			is.NoErr(err)
			want := "old"
			if step > StepRename {
				want = "new"
			}
			is.Equal(string(b), want)
			entries, err := os.ReadDir(dir)
			is.NoErr(err)
			for _, e := range entries {
				is.True(!IsTemp(e.Name())) // temp file cleaned up
			}
		})
	}
}

func TestIsTemp(t *testing.T) {
	is := is.New(t)
	is.True(IsTemp(".attempts.txt" + TempInfix + "123"))
	is.True(!IsTemp("attempts.txt"))
	is.True(!IsTemp("attempts.txt.tmp")) // the bash loop's temp file is not ours
	is.Equal(Step(99).String(), "step-99")
}

func TestSyncDir(t *testing.T) {
	is := is.New(t)
	is.NoErr(SyncDir(t.TempDir()))
	is.True(SyncDir(filepath.Join(t.TempDir(), "gone")) != nil)
}

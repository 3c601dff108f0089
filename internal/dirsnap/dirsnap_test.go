package dirsnap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

func TestRestore(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), ".ralph")
	is.NoErr(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_stuck": 3}`), 0o644))
	is.NoErr(os.WriteFile(filepath.Join(dir, "sub", "PROMPT_build.md"), []byte("build"), 0o644))
	s, err := Take(dir)
	is.NoErr(err)
	ch, err := s.Changed()
	is.NoErr(err)
	is.Equal(len(ch), 0)

	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"max_stuck": 50}`), 0o644))
	is.NoErr(os.Remove(filepath.Join(dir, "sub", "PROMPT_build.md")))
	is.NoErr(os.WriteFile(filepath.Join(dir, "PROMPT_plan.md"), []byte("plan"), 0o644))
	is.NoErr(os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
	ch, err = s.Restore()
	is.NoErr(err)
	is.Equal(ch, []string{"PROMPT_plan.md", "config.json", "link", "sub/PROMPT_build.md"})
	got, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	is.Equal(string(got), `{"max_stuck": 3}`)
	got, _ = os.ReadFile(filepath.Join(dir, "sub", "PROMPT_build.md"))
	is.Equal(string(got), "build")
	_, err = os.Lstat(filepath.Join(dir, "link"))
	is.True(os.IsNotExist(err))
	ch, err = s.Changed()
	is.NoErr(err)
	is.Equal(len(ch), 0)
}

func TestMissingDirIsEmpty(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), ".ralph")
	s, err := Take(dir)
	is.NoErr(err)
	is.NoErr(os.MkdirAll(dir, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644))
	ch, err := s.Restore()
	is.NoErr(err)
	is.Equal(ch, []string{"config.json"})
	_, err = os.Stat(filepath.Join(dir, "config.json"))
	is.True(os.IsNotExist(err))
}

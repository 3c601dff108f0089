package modes

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExcerptsOddFiles: the files an error names are the agent's work
// tree. A FIFO there (which would block ralphd forever), a directory or a
// link to a device is said and not shown; a regular file's first lines
// are.
func TestExcerptsOddFiles(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "config.ini"), []byte("name=demo\n"), 0o600))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.txt"), 0o600))
	must(os.Mkdir(filepath.Join(dir, "adir"), 0o700))
	must(os.Symlink("/dev/zero", filepath.Join(dir, "zero.txt")))
	l := &Loop{Deps: Deps{Dir: dir}}
	for _, tt := range []struct {
		path string
		want string
	}{
		{"config.ini", "- config.ini (first 60 lines):\n\n    name=demo\n"},
		{"fifo.txt", "- fifo.txt: not a regular file, not shown"},
		{"adir", "- adir: not a regular file, not shown"},
		{"zero.txt", "- zero.txt: not a regular file, not shown"},
		{"missing.txt", "- missing.txt: does not exist in the project"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			done := make(chan string, 1)
			go func() { done <- l.excerpts([]string{tt.path}) }()
			select {
			case got := <-done:
				if !strings.Contains(got, tt.want) {
					t.Errorf("excerpts = %q; want it to contain %q", got, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("excerpts blocked")
			}
		})
	}
}

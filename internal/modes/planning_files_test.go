package modes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// A tracker directory swapped during the window is found, however it was
// swapped; one left alone, or gone (the read after the window fails and
// the baseline stays), is not reported.
func TestTrackerReplaced(t *testing.T) {
	tests := []struct {
		name string
		swap func(t *testing.T, beads, elsewhere string)
		want string // a substring of the one finding; "" for none
	}{
		{"left alone", func(*testing.T, string, string) {}, ""},
		{"written inside", func(t *testing.T, beads, _ string) {
			if err := os.WriteFile(filepath.Join(beads, "issues.jsonl"), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"symlink to a copy", func(t *testing.T, beads, elsewhere string) {
			mustRename(t, beads, beads+".real")
			if err := os.Symlink(elsewhere, beads); err != nil {
				t.Fatal(err)
			}
		}, "replaced by a symlink to "},
		{"another directory", func(t *testing.T, beads, elsewhere string) {
			mustRename(t, beads, beads+".real")
			mustRename(t, elsewhere, beads)
		}, "replaced by another directory"},
		{"gone", func(t *testing.T, beads, _ string) { mustRename(t, beads, beads+".away") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			dir, elsewhere := t.TempDir(), t.TempDir()
			beads := filepath.Join(dir, ".beads")
			is.NoErr(os.Mkdir(beads, 0o755))
			fi, err := os.Lstat(beads)
			is.NoErr(err)
			p := planningFiles{trackers: map[string]os.FileInfo{beads: fi}}
			tt.swap(t, beads, elsewhere)
			got := p.trackerReplaced()
			if tt.want == "" {
				is.Equal(len(got), 0)
				return
			}
			is.Equal(len(got), 1)
			is.True(strings.Contains(got[0], tt.want))
		})
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

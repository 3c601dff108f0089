package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestBDCheckRoundTrip(t *testing.T) {
	for _, version := range []string{"1.3.2", "1.3.0-rc.1+b_7", "../../etc/passwd", "a/b", ""} {
		t.Run(version, func(t *testing.T) {
			is := is.New(t)
			root := t.TempDir()
			c := BDCheck{Version: version, Bin: "/usr/bin/bd", CheckedAt: time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC),
				Differences: []string{"ready --claim with nothing to claim: exit 1, want 0"}}
			err := WriteBDCheck(root, c)
			if version == "" {
				is.True(err != nil) // a check without a version names no file
				return
			}
			is.NoErr(err)
			got, found, err := ReadBDCheck(root, version)
			is.NoErr(err)
			is.True(found)
			is.Equal(got.Version, c.Version)
			is.Equal(got.Differences, c.Differences)
			is.True(!got.Passed)
			is.True(got.CheckedAt.Equal(c.CheckedAt))
			// Every record stays in the state root's bd-contract directory.
			entries, err := os.ReadDir(filepath.Join(root, BDChecksDirName))
			is.NoErr(err)
			is.Equal(len(entries), 1)
			is.True(strings.HasSuffix(entries[0].Name(), ".json"))
			fi, err := os.Stat(filepath.Join(root, BDChecksDirName, entries[0].Name()))
			is.NoErr(err)
			is.Equal(fi.Mode().Perm(), filePerm)

			// A later check of the same version replaces it.
			c.Passed, c.Differences = true, nil
			is.NoErr(WriteBDCheck(root, c))
			got, _, err = ReadBDCheck(root, version)
			is.NoErr(err)
			is.True(got.Passed)
		})
	}
}

func TestBDCheckMissingAndCorrupt(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	_, found, err := ReadBDCheck(root, "1.3.2")
	is.NoErr(err)
	is.True(!found)
	is.NoErr(os.MkdirAll(filepath.Join(root, BDChecksDirName), 0o700))
	is.NoErr(os.WriteFile(filepath.Join(root, BDChecksDirName, "1.3.2.json"), []byte("{not json"), 0o600))
	_, _, err = ReadBDCheck(root, "1.3.2")
	is.True(err != nil) // a corrupt record is an error, not "never checked"
	is.NoErr(os.WriteFile(filepath.Join(root, BDChecksDirName, "1.3.2.json"), []byte(`{"version":"1.3.3"}`), 0o600))
	_, _, err = ReadBDCheck(root, "1.3.2")
	is.True(err != nil) // a record of another version

	// A link planted for the record is never followed, to read or write.
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	is.NoErr(os.WriteFile(target, []byte(`{"version":"1.4.0","passed":true}`), 0o600))
	is.NoErr(os.Symlink(target, filepath.Join(root, BDChecksDirName, "1.4.0.json")))
	_, _, err = ReadBDCheck(root, "1.4.0")
	is.True(err != nil)
	is.True(WriteBDCheck(root, BDCheck{Version: "1.4.0"}) != nil || !isLink(t, filepath.Join(root, BDChecksDirName, "1.4.0.json")))
	data, err := os.ReadFile(target)
	is.NoErr(err)
	is.Equal(string(data), `{"version":"1.4.0","passed":true}`) // untouched
}

func isLink(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestMigrate(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	project := t.TempDir()
	is.True(!HasLegacyAttempts(project))
	imported, err := s.Migrate(project) // nothing to do
	is.NoErr(err)
	is.Equal(len(imported), 0)

	writeFile(t, s.AttemptsPath(), "bd-a:2\nbd-b:1\n")
	writeFile(t, LegacyAttemptsPath(project), "bd-a:1\nbd-c:3\n###\n")
	is.True(HasLegacyAttempts(project))
	msg := LegacyWarning(project, s.Dir())
	is.True(strings.Contains(msg, LegacyAttemptsPath(project)))
	is.True(strings.Contains(msg, filepath.Join(s.Dir(), "attempts.txt")))
	is.True(strings.Contains(msg, "ralphd migrate"))

	imported, err = s.Migrate(project)
	is.NoErr(err)
	is.Equal(imported, map[string]int{"bd-a": 1, "bd-c": 3})
	is.Equal(readFile(t, s.AttemptsPath()), "bd-a:3\nbd-b:1\nbd-c:3\n") // added to existing counts
	_, err = os.Stat(LegacyAttemptsPath(project))
	is.True(os.IsNotExist(err)) // removed
	is.True(!HasLegacyAttempts(project))

	warns := s.Warnings()
	is.Equal(len(warns), 1)
	matches, _ := filepath.Glob(filepath.Join(s.Dir(), "ralph-attempts.corrupt-*"))
	is.Equal(len(matches), 1)
	is.Equal(readFile(t, matches[0]), "###\n")
	is.True(strings.Contains(warns[0], matches[0]))
}

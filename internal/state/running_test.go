package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestRunningRecord(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	r, err := s.ReadRunning()
	is.NoErr(err)
	is.Equal(r, (*Running)(nil))
	is.NoErr(s.ClearRunning()) // nothing to clear is fine

	want := Running{PGID: 100, PID: 100, StartTicks: 12345, Iteration: 4, IssueID: "bd-1", Attempt: 2,
		Mode: "build", RunID: "r1", StartedAt: fixedNow()}
	is.NoErr(s.WriteRunning(want))
	fi, err := os.Stat(s.RunningPath())
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	r, err = s.ReadRunning()
	is.NoErr(err)
	is.Equal(*r, want)

	is.NoErr(s.ClearRunning())
	r, err = s.ReadRunning()
	is.NoErr(err)
	is.Equal(r, (*Running)(nil))
}

func TestCorruptRunningRecord(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	writeFile(t, s.RunningPath(), `{"pgid": 12, "pid":`)
	r, err := s.ReadRunning()
	is.NoErr(err)
	is.Equal(r, (*Running)(nil))
	warns := s.Warnings()
	is.Equal(len(warns), 1)
	matches, _ := filepath.Glob(s.RunningPath() + ".corrupt-*")
	is.Equal(len(matches), 1)
	is.True(strings.Contains(warns[0], matches[0]))
	is.Equal(readFile(t, matches[0]), `{"pgid": 12, "pid":`)
	_, err = os.Stat(s.RunningPath())
	is.True(os.IsNotExist(err))
}

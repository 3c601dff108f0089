package state

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

func TestTrackerPinRoundTrip(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	got, err := s.ReadTrackerPin()
	is.NoErr(err)
	is.True(got == nil) // none yet
	had, err := s.ClearTrackerPin()
	is.NoErr(err)
	is.True(!had) // nothing to clear

	p := TrackerPin{PinnedAt: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC), RunID: "r1", Identity: beads.Identity{
		BeadsDir: "/p/.beads", DatabasePath: "/p/.beads/embeddeddolt", Mode: "embedded", Prefix: "t",
		BeadsDirReal: "/p/.beads", Beads: beads.FileID{Dev: 1, Ino: 2}, Database: beads.FileID{Dev: 1, Ino: 3},
		Server: &beads.Server{Host: "127.0.0.1", Port: 3307, Database: "t", Managed: true},
	}}
	is.NoErr(s.WriteTrackerPin(p))
	fi, err := os.Stat(filepath.Join(s.Dir(), TrackerPinFile))
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600)) // a state file like the others
	got, err = s.ReadTrackerPin()
	is.NoErr(err)
	is.Equal(*got, p)
	is.Equal(len(p.Identity.Compare(got.Identity)), 0) // the identity survives the file whole

	had, err = s.ClearTrackerPin()
	is.NoErr(err)
	is.True(had)
	got, err = s.ReadTrackerPin()
	is.NoErr(err)
	is.True(got == nil)
}

// A pin that cannot be read is an error, never "no pin": that would let
// the next start pin whatever bd opens.
func TestTrackerPinCorruptIsAnError(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	for _, bad := range []string{"{half", "null", "[]", "", "{}", `{"identity":{}}`} {
		is.NoErr(os.WriteFile(filepath.Join(s.Dir(), TrackerPinFile), []byte(bad), 0o600))
		_, err := s.ReadTrackerPin()
		is.True(err != nil) // bad
	}
}

// The pin is sealed like the baseline: an agent's rewrite of it is put
// back when its window ends.
func TestTrackerPinSealed(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	p := TrackerPin{RunID: "r1", Identity: beads.Identity{BeadsDir: "/p/.beads", Mode: "embedded"}}
	is.NoErr(s.WriteTrackerPin(p))
	is.NoErr(s.Seal())
	path := filepath.Join(s.Dir(), TrackerPinFile)
	is.NoErr(os.WriteFile(path+".x", []byte(`{"identity":{"beads_dir":"/decoy/.beads"}}`), 0o600))
	is.NoErr(os.Rename(path+".x", path))
	restored, err := s.Unseal()
	is.NoErr(err)
	is.Equal(restored, []string{TrackerPinFile})
	got, err := s.ReadTrackerPin()
	is.NoErr(err)
	is.Equal(got.Identity.BeadsDir, "/p/.beads") // put back
}

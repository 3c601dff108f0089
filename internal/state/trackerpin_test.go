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
	got, err := s.TrackerPin("/p")
	is.NoErr(err)
	is.True(got == nil) // none yet
	had, err := s.ClearTrackerPin("/p")
	is.NoErr(err)
	is.True(!had) // nothing to clear

	p := TrackerPin{Checkout: "/p", PinnedAt: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC), RunID: "r1", Identity: beads.Identity{
		BeadsDir: "/p/.beads", DatabasePath: "/p/.beads/embeddeddolt", Mode: "embedded", Prefix: "t",
		BeadsDirReal: "/p/.beads", Beads: beads.FileID{Dev: 1, Ino: 2}, Database: beads.FileID{Dev: 1, Ino: 3},
		Server: &beads.Server{Host: "127.0.0.1", Port: 3307, Database: "t", Managed: true},
	}}
	q := TrackerPin{Checkout: "/q", RunID: "r2", Identity: beads.Identity{BeadsDir: "/q/.beads", Mode: "embedded"}}
	is.NoErr(s.SaveTrackerPin(p))
	is.NoErr(s.SaveTrackerPin(q))
	fi, err := os.Stat(filepath.Join(s.Dir(), TrackerPinFile))
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600)) // a state file like the others
	got, err = s.TrackerPin("/p")
	is.NoErr(err)
	is.Equal(*got, p)
	is.Equal(len(p.Identity.Compare(got.Identity)), 0) // the identity survives the file whole
	got, err = s.TrackerPin("/q")
	is.NoErr(err)
	is.Equal(*got, q) // each checkout its own

	q.RunID = "r3"
	is.NoErr(s.SaveTrackerPin(q)) // replaces
	got, err = s.TrackerPin("/q")
	is.NoErr(err)
	is.Equal(got.RunID, "r3")

	had, err = s.ClearTrackerPin("/p")
	is.NoErr(err)
	is.True(had)
	got, err = s.TrackerPin("/p")
	is.NoErr(err)
	is.True(got == nil)
	got, err = s.TrackerPin("/q")
	is.NoErr(err)
	is.True(got != nil) // the other checkout's stays
	had, err = s.ClearTrackerPin("/q")
	is.NoErr(err)
	is.True(had)
	_, err = os.Stat(filepath.Join(s.Dir(), TrackerPinFile))
	is.True(os.IsNotExist(err)) // the last one removes the file
}

// A pin that cannot be read is an error, never "no pin": that would let
// the next start pin whatever bd opens. Clearing removes it.
func TestTrackerPinCorruptIsAnError(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	for _, bad := range []string{"{half", "null", "[]", "", `{"pins":[{}]}`, `{"pins":[{"checkout":"/p","identity":{}}]}`} {
		is.NoErr(os.WriteFile(filepath.Join(s.Dir(), TrackerPinFile), []byte(bad), 0o600))
		_, err := s.TrackerPin("/p")
		is.True(err != nil)                                                                                           // bad
		is.True(s.SaveTrackerPin(TrackerPin{Checkout: "/p", Identity: beads.Identity{BeadsDir: "/p/.beads"}}) != nil) // not overwritten unread
		had, err := s.ClearTrackerPin("/p")
		is.NoErr(err)
		is.True(had)
		got, err := s.TrackerPin("/p")
		is.NoErr(err)
		is.True(got == nil)
	}
}

// The pin is sealed like the baseline: an agent's rewrite of it is put
// back when its window ends.
func TestTrackerPinSealed(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	is.NoErr(s.SaveTrackerPin(TrackerPin{Checkout: "/p", Identity: beads.Identity{BeadsDir: "/p/.beads", Mode: "embedded"}}))
	is.NoErr(s.Seal())
	path := filepath.Join(s.Dir(), TrackerPinFile)
	is.NoErr(os.WriteFile(path+".x", []byte(`{"pins":[{"checkout":"/p","identity":{"beads_dir":"/decoy/.beads"}}]}`), 0o600))
	is.NoErr(os.Rename(path+".x", path))
	restored, err := s.Unseal()
	is.NoErr(err)
	is.Equal(restored, []string{TrackerPinFile})
	got, err := s.TrackerPin("/p")
	is.NoErr(err)
	is.Equal(got.Identity.BeadsDir, "/p/.beads") // put back
}

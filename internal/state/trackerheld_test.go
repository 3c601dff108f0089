package state

import (
	"os"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
)

// TestTrackerHeld checks the reading kept: the full reading with its
// delta patched in (an issue changed, one deleted, one new), a delta of
// another full reading ignored, the delta dropped by the next full
// reading, and nothing left after a clear.
func TestTrackerHeld(t *testing.T) {
	s := openStore(t)
	at := time.Date(2026, 11, 24, 1, 30, 0, 0, time.UTC)
	later := at.Add(time.Minute)
	ids := func(is []beads.Issue) (out []string) {
		for _, x := range is {
			out = append(out, x.ID+"="+x.Title)
		}
		return out
	}
	if is, h, _, err := s.ReadTrackerHeld(); err != nil || h != nil || is != nil {
		t.Fatalf("nothing kept: %v %v %v", is, h, err)
	}
	full := TrackerHeld{RunID: "r", TakenAt: at, Issues: []beads.Issue{{ID: "a", Title: "A"}, {ID: "b", Title: "B"}, {ID: "c", Title: "C"}}}
	if err := s.WriteTrackerHeld(full); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		delta *TrackerHeldDelta
		want  []string
		prev  time.Time
	}{
		{"no delta", nil, []string{"a=A", "b=B", "c=C"}, at},
		{"delta", &TrackerHeldDelta{TakenAt: at, PrevStart: later, Issues: []beads.Issue{{ID: "b", Title: "B2"}, {ID: "d", Title: "D"}}, Deleted: []string{"c"}},
			[]string{"a=A", "b=B2", "d=D"}, later},
		{"delta of another full reading", &TrackerHeldDelta{TakenAt: at.Add(-time.Hour), PrevStart: later, Issues: []beads.Issue{{ID: "b", Title: "B2"}}},
			[]string{"a=A", "b=B", "c=C"}, at},
	} {
		if tc.delta != nil {
			if err := s.WriteTrackerHeldDelta(*tc.delta); err != nil {
				t.Fatal(err)
			}
		}
		is, h, prev, err := s.ReadTrackerHeld()
		if err != nil || h == nil || h.RunID != "r" {
			t.Fatalf("%s: %v %v", tc.name, h, err)
		}
		if got := ids(is); len(got) != len(tc.want) || !prev.Equal(tc.prev) {
			t.Errorf("%s: %v since %v, want %v since %v", tc.name, got, prev, tc.want, tc.prev)
		} else {
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
					break
				}
			}
		}
	}
	// The next full reading drops the delta.
	if err := s.WriteTrackerHeld(TrackerHeld{RunID: "r", TakenAt: at, Issues: []beads.Issue{{ID: "a", Title: "A"}}}); err != nil {
		t.Fatal(err)
	}
	if is, _, _, err := s.ReadTrackerHeld(); err != nil || len(is) != 1 {
		t.Errorf("after the next full reading: %v %v", ids(is), err)
	}
	if err := s.ClearTrackerHeld(); err != nil {
		t.Fatal(err)
	}
	if is, h, _, err := s.ReadTrackerHeld(); err != nil || h != nil || is != nil {
		t.Errorf("after a clear: %v %v %v", is, h, err)
	}
}

// TestTrackerHeldSealed: an agent that rewrites, removes or plants the
// reading kept while sealed finds it put back when the seal ends, and
// ralphd's own write of it meanwhile stays.
func TestTrackerHeldSealed(t *testing.T) {
	at := time.Date(2026, 11, 24, 1, 30, 0, 0, time.UTC)
	full := TrackerHeld{RunID: "r", TakenAt: at, Issues: []beads.Issue{{ID: "a", Title: "A"}}}
	for _, tc := range []struct {
		name  string
		agent func(s *Store) error
		own   bool // ralphd writes a delta while sealed
		want  string
	}{
		{"rewritten", func(s *Store) error {
			return os.WriteFile(s.path(TrackerHeldFile), []byte(`{"run_id":"r","taken_at":"2026-11-24T01:30:00Z","issues":[{"id":"a","title":"Easier"}]}`), 0o600)
		}, false, "A"},
		{"removed", func(s *Store) error { return os.Remove(s.path(TrackerHeldFile)) }, false, "A"},
		{"a delta planted", func(s *Store) error {
			return os.WriteFile(s.path(TrackerHeldDeltaFile), []byte(`{"taken_at":"2026-11-24T01:30:00Z","issues":[{"id":"a","title":"Easier"}]}`), 0o600)
		}, false, "A"},
		{"ralphd's own delta", func(*Store) error { return nil }, true, "B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			if err := s.WriteTrackerHeld(full); err != nil {
				t.Fatal(err)
			}
			if err := s.Seal(); err != nil {
				t.Fatal(err)
			}
			if tc.own {
				if err := s.WriteTrackerHeldDelta(TrackerHeldDelta{TakenAt: at, Issues: []beads.Issue{{ID: "a", Title: "B"}}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.agent(s); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Unseal(); err != nil {
				t.Fatal(err)
			}
			is, _, _, err := s.ReadTrackerHeld()
			if err != nil || len(is) != 1 || is[0].Title != tc.want {
				t.Errorf("after the seal: %+v %v, want a titled %q", is, err, tc.want)
			}
		})
	}
}

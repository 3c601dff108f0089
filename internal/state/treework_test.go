package state

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestTreeWork: the record is written atomically, read back as written,
// absent before and after it is cleared, and a damaged one is an error
// that names the file.
func TestTreeWork(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), Identity{ID: "0123456789ab", TopLevel: t.TempDir()}, "")
	if err != nil {
		t.Fatal(err)
	}
	if w, err := s.ReadTreeWork(); w != nil || err != nil {
		t.Fatalf("before any: %+v, %v", w, err)
	}
	want := TreeWork{IssueID: "t-a", Iteration: 3, RunID: "r", At: time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC), Head: "abc", Tree: "def"}
	if err := s.WriteTreeWork(want); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadTreeWork()
	if err != nil || got == nil || *got != want {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}
	if err := os.WriteFile(s.TreeWorkPath(), []byte(`{"issue_id":"t-a"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadTreeWork(); err == nil || !strings.Contains(err.Error(), s.TreeWorkPath()) {
		t.Fatalf("a record naming no commit: %v, want an error naming the file", err)
	}
	if err := s.ClearTreeWork(); err != nil {
		t.Fatal(err)
	}
	if w, err := s.ReadTreeWork(); w != nil || err != nil {
		t.Fatalf("after clearing: %+v, %v", w, err)
	}
}

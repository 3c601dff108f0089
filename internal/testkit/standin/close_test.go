package standin

import (
	"strings"
	"testing"
)

// TestCloseEpicWithOpenChildren: as real bd 1.0.5 (checked by hand, not
// among the recorded cases), closing an epic with open children fails
// with exit 1 and says how many, with or without --json; --force closes
// it; an epic whose children are all closed closes.
func TestCloseEpicWithOpenChildren(t *testing.T) {
	s := initRepo(t)
	epic := s.createID("Release", "-t", "epic")
	a := s.createID("Part A", "--parent", epic)
	b := s.createID("Part B", "--parent", epic)
	for _, args := range [][]string{{"close", epic, "--reason", "done"}, {"close", epic, "--reason", "done", "--json"}} {
		r := s.bd(s.repo, args...)
		want := "cannot close epic " + epic + ": 2 open child issue(s); close children first or use --force to override\n"
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", args, r.code, r.stderr, want)
		}
	}
	if r := s.bd(s.repo, "close", a, "--reason", "done"); r.code != 0 {
		t.Fatalf("close %s: %+v", a, r)
	}
	if r := s.bd(s.repo, "close", epic, "--reason", "done"); r.code != 1 || !strings.Contains(r.stderr, ": 1 open child issue(s)") {
		t.Errorf("one child open: %+v", r)
	}
	if r := s.bd(s.repo, "close", b, "--reason", "done"); r.code != 0 {
		t.Fatalf("close %s: %+v", b, r)
	}
	if r := s.bd(s.repo, "close", epic, "--reason", "done"); r.code != 0 {
		t.Errorf("all children closed: %+v", r)
	}

	other := s.createID("Other", "-t", "epic")
	s.createID("Child", "--parent", other)
	if r := s.bd(s.repo, "close", other, "--force", "--reason", "done"); r.code != 0 {
		t.Errorf("--force: %+v", r)
	}
}

package modes

import (
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// A finding charges exactly the windows that were open before it was read
// and are not judged yet; charges are not passed on.
func TestWindowChargesConcurrentOnly(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	iter := func(n int, id string) *buildIter { return &buildIter{n: n, issue: beads.Issue{ID: id}} }
	tests := []struct {
		name string
		// opened: seconds after t0 each window opened; -1: never opened.
		opened []int
		// judgedFirst: windows judged (finding nothing) before the finder.
		judgedFirst []int
		// finder is the window whose judgement finds something, at 10 s.
		finder  int
		found   []string
		charged []bool // per window, after the finder: whether it was charged
		// sandboxed: the agents ran sandboxed; unsandboxed lists the
		// windows in which code ran outside the sandbox (checks).
		sandboxed   bool
		unsandboxed []int
	}{
		{"open beside the finder", []int{0, 1, 2}, nil, 0, []string{"priority changed"}, []bool{false, true, true}, false, nil},
		{"opened after the finding", []int{0, 11}, nil, 0, []string{"priority changed"}, []bool{false, false}, false, nil},
		{"judged before the finding", []int{0, 1}, []int{1}, 0, []string{"priority changed"}, []bool{false, false}, false, nil},
		{"nothing found", []int{0, 1}, nil, 0, nil, []bool{false, false}, false, nil},
		{"never opened", []int{0, -1}, nil, 0, []string{"x"}, []bool{false, false}, false, nil},
		{"two findings, both charged", []int{0, 1}, nil, 1, []string{"a", "b"}, []bool{true, false}, false, nil},
		{"sandboxed: only windows whose code ran outside", []int{0, 1, 2}, nil, 0, []string{"priority changed"}, []bool{false, true, false}, true, []int{1}},
		{"sandboxed: nothing ran outside", []int{0, 1, 2}, nil, 0, []string{"priority changed"}, []bool{false, false, false}, true, nil},
		{"sandboxed: the finder's own checks charge nobody", []int{0, 1}, nil, 0, []string{"x"}, []bool{false, false}, true, []int{0}},
		{"unsandboxed: every open window", []int{0, 1, 2}, nil, 0, []string{"x"}, []bool{false, true, true}, false, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var s windowSet
			its := make([]*buildIter, len(tt.opened))
			for i, sec := range tt.opened {
				its[i] = iter(i+1, "t-"+string(rune('a'+i)))
				if sec >= 0 {
					s.add(its[i], "w"+string(rune('1'+i)), t0.Add(time.Duration(sec)*time.Second))
				}
			}
			for _, i := range tt.unsandboxed {
				s.ranUnsandboxed(its[i])
			}
			for _, j := range tt.judgedFirst {
				is.Equal(len(s.judged(its[j], nil, t0.Add(5*time.Second), tt.sandboxed)), 0)
			}
			is.Equal(len(s.judged(its[tt.finder], tt.found, t0.Add(10*time.Second), tt.sandboxed)), 0) // the finder had no charges
			for i := range its {
				if i == tt.finder {
					continue
				}
				got := s.judged(its[i], nil, t0.Add(20*time.Second), tt.sandboxed)
				if !tt.charged[i] {
					is.Equal(len(got), 0)
					continue
				}
				is.Equal(len(got), len(tt.found))
				for k, c := range got {
					is.Equal(c.detail, tt.found[k])
					is.Equal(c.iteration, its[tt.finder].n)
					is.Equal(c.issueID, its[tt.finder].issue.ID)
				}
				// A charge is not a finding: judging this window again
				// (it found nothing of its own) charges nobody.
			}
			// Every window is judged now; nothing is left to charge.
			for i := range its {
				is.Equal(len(s.judged(its[i], []string{"late"}, t0.Add(30*time.Second), tt.sandboxed)), 0)
			}
		})
	}
}

// Windows come and go from many workers at once.
func TestWindowSetConcurrent(t *testing.T) {
	var s windowSet
	var wg sync.WaitGroup
	now := time.Now()
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it := &buildIter{n: i}
			s.add(it, "w", now)
			s.ranUnsandboxed(it)
			s.judged(it, []string{"x"}, now.Add(time.Second), i%2 == 0)
			s.remove(it)
		}()
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) != 0 {
		t.Fatalf("%d windows left open", len(s.open))
	}
}

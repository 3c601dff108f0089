package modes

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// judge ends w's judgement as chargeConcurrent does: what it found goes to
// the ledger, and it takes the charges laid on it.
func (g *ledger) judge(w *window, found []string, at time.Time, sandboxed bool) []charge {
	g.found(finding{kind: trackerFinding, details: found, by: w, at: at, sandboxed: sandboxed})
	return g.judged(w)
}

// A judgement's finding charges exactly the windows whose agent started
// before it was read and that are not judged yet; charges are not passed
// on.
func TestLedgerTrackerFindings(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// opened: seconds after t0 each window's agent started; -1: its
		// agent never started (the worktree was handed over, no more).
		opened []int
		// judgedFirst: windows judged (finding nothing) before the finder.
		judgedFirst []int
		// finder is the window whose judgement finds something, at 10 s.
		finder  int
		found   []string
		charged []bool // per window, after the finder: whether it was charged
		// sandboxed: the agents and their checks ran sandboxed.
		sandboxed bool
	}{
		{"open beside the finder", []int{0, 1, 2}, nil, 0, []string{"priority changed"}, []bool{false, true, true}, false},
		{"opened after the finding", []int{0, 11}, nil, 0, []string{"priority changed"}, []bool{false, false}, false},
		{"judged before the finding", []int{0, 1}, []int{1}, 0, []string{"priority changed"}, []bool{false, false}, false},
		{"nothing found", []int{0, 1}, nil, 0, nil, []bool{false, false}, false},
		{"never opened", []int{0, -1}, nil, 0, []string{"x"}, []bool{false, false}, false},
		{"two findings, both charged", []int{0, 1}, nil, 1, []string{"a", "b"}, []bool{true, false}, false},
		{"sandboxed: no other window", []int{0, 1, 2}, nil, 0, []string{"priority changed"}, []bool{false, false, false}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var g ledger
			ws := make([]*window, len(tt.opened))
			for i, sec := range tt.opened {
				ws[i] = g.open("w"+string(rune('1'+i)), "t-"+string(rune('a'+i)))
				if sec >= 0 {
					g.agentStarted(ws[i], i+1, t0.Add(time.Duration(sec)*time.Second))
				}
			}
			for _, j := range tt.judgedFirst {
				is.Equal(len(g.judge(ws[j], nil, t0.Add(5*time.Second), tt.sandboxed)), 0)
			}
			is.Equal(len(g.judge(ws[tt.finder], tt.found, t0.Add(10*time.Second), tt.sandboxed)), 0) // the finder had no charges
			for i := range ws {
				if i == tt.finder {
					continue
				}
				got := g.judge(ws[i], nil, t0.Add(20*time.Second), tt.sandboxed)
				if !tt.charged[i] {
					is.Equal(len(got), 0)
					continue
				}
				is.Equal(len(got), len(tt.found))
				for k, c := range got {
					is.Equal(c.detail, tt.found[k])
					is.Equal(c.iteration, tt.finder+1)       // the finder's iteration
					is.Equal(c.issueID, ws[tt.finder].issue) // and issue
					is.Equal(c.worker, ws[tt.finder].worker)
				}
			}
			// Every window is judged now; nothing is left to charge.
			for i := range ws {
				is.Equal(len(g.judge(ws[i], []string{"late"}, t0.Add(30*time.Second), tt.sandboxed)), 0)
			}
		})
	}
}

// A window whose agent window closed unjudged (its iteration ended
// without a judgement) is charged with nothing after, and charges nobody;
// the charges it had not taken are dropped.
func TestLedgerClosedWindow(t *testing.T) {
	is := is.New(t)
	t0 := time.Now()
	var g ledger
	a, b, c := g.open("w1", "t-a"), g.open("w2", "t-b"), g.open("w3", "t-c")
	for i, w := range []*window{a, b, c} {
		g.agentStarted(w, i+1, t0)
	}
	is.Equal(len(g.found(finding{kind: trackerFinding, details: []string{"x"}, by: a, at: t0.Add(time.Second)})), 2) // b and c
	g.closeAgent(b)
	is.Equal(len(g.judged(b)), 0) // closed: its charge was dropped
	g.closeAgent(c)
	is.Equal(len(g.found(finding{kind: trackerFinding, details: []string{"y"}, by: c, at: t0.Add(time.Second)})), 0) // a closed finder charges nobody
	is.Equal(len(g.judged(a)), 0)
}

// A gitFinding charges every window that had not ended when the refs
// were last found in place, agent started or not; an integrated one is
// named, not charged; the merge queue's window is never named. The first
// charge is why the attempt fails.
func TestLedgerGitFindings(t *testing.T) {
	t0 := time.Now()
	tests := []struct {
		name string
		// ended: whether each window's iteration ended before the refs
		// were last found in place (since), and integrated whether its
		// work is on the target.
		ended, integrated []bool
		named, charged    []bool
	}{
		{"running windows", []bool{false, false}, []bool{false, false}, []bool{true, true}, []bool{true, true}},
		{"ended before the refs were in place", []bool{true, false}, []bool{false, false}, []bool{false, true}, []bool{false, true}},
		{"integrated after since: named, not charged", []bool{false, false}, []bool{true, false}, []bool{true, true}, []bool{false, true}},
		{"none open", []bool{true, true}, []bool{false, true}, []bool{false, false}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var g ledger
			q := g.openQueue(t0) // never a suspect of a move
			ws := make([]*window, len(tt.ended))
			for i := range ws {
				ws[i] = g.open(fmt.Sprintf("w%d", i+1), fmt.Sprintf("t-%d", i))
				if tt.ended[i] {
					g.end(ws[i])
				}
			}
			time.Sleep(time.Millisecond) // since is after the ends above
			since := time.Now()
			for i := range ws {
				if tt.integrated[i] {
					g.integrated(ws[i]) // no-op on the time when it had ended
				}
			}
			named := g.found(finding{kind: gitFinding, details: []string{"refs/heads/main moved"}, since: since})
			got := map[string]Suspect{}
			for _, s := range named {
				is.True(s.Worker != q.worker) // the queue owns no refs
				got[s.Issue] = s
			}
			for i, w := range ws {
				s, ok := got[w.issue]
				is.Equal(ok, tt.named[i])
				is.Equal(s.Charged, tt.charged[i])
				if tt.charged[i] {
					is.True(g.failed(w) != "") // its attempt fails
				} else {
					is.Equal(g.failed(w), "")
				}
			}
			// The first charge stays the reason.
			first := map[*window]string{}
			for _, w := range ws {
				first[w] = g.failed(w)
			}
			g.found(finding{kind: gitFinding, details: []string{"a FIFO planted"}, since: since})
			for _, w := range ws {
				if first[w] != "" {
					is.Equal(g.failed(w), first[w])
				}
			}
			is.Equal(len(g.found(finding{kind: gitFinding, since: since})), 0) // nothing found names nobody
		})
	}
}

// Windows come and go from many workers at once, while judgements and the
// pool's checks make findings.
func TestLedgerConcurrent(t *testing.T) {
	is := is.New(t)
	var g ledger
	var wg sync.WaitGroup
	now := time.Now()
	for i := range 16 {
		wg.Go(func() {
			w := g.open(fmt.Sprintf("w%d", i), fmt.Sprintf("t-%d", i))
			g.agentStarted(w, i, now)
			g.judge(w, []string{"x"}, now.Add(time.Second), i%2 == 0)
			g.found(finding{kind: gitFinding, details: []string{"moved"}, since: now})
			g.failed(w)
			g.closeAgent(w)
			g.end(w)
			g.integrated(w)
		})
		wg.Go(func() {
			q := g.openQueue(now)
			g.judge(q, []string{"y"}, now.Add(time.Second), false)
			g.closeAgent(q)
		})
	}
	wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	is.Equal(len(g.windows), 16) // the queue's windows left; the iterations' stay, for the checks of the refs
	for _, w := range g.windows {
		is.True(w.judged)           // every agent window closed
		is.Equal(len(w.charges), 0) // and no charge left behind
		is.True(!w.ended.IsZero())  // every iteration ended
	}
}

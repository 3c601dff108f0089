package dashboard

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// lastEvents is how many events the "now" panel lists.
const lastEvents = 12

// Worker is what one worker is doing, for the "now" panel.
type Worker struct {
	Name        string
	Mode        string
	IssueID     string // empty while idle or planning
	Title       string
	Attempt     int
	MaxAttempts int
	Iteration   int
	Started     time.Time // zero while idle
}

// Busy reports whether an agent is running for the worker.
func (w Worker) Busy() bool { return !w.Started.IsZero() }

// Line is one event in the "now" panel's list.
type Line struct {
	Time  time.Time
	Event string
	Text  string
}

// Now is a snapshot of the "now" panel.
type Now struct {
	Live    bool   // a daemon feeds it; false for `ralphd serve`
	Mode    string // the current run's mode
	State   string // the daemon's last decision: plan, build, idle
	Reason  string
	Workers []Worker
	// PullRequests are the workers' pull requests (integrate = pr), by
	// issue, each in its last state.
	PullRequests []PullRequest
	// Fleet is who plans on a shared tracker; nil off a fleet tracker.
	Fleet  *state.FleetStatus
	Events []Line // newest first
	// Seq counts the events seen; the browser test waits for it to move.
	Seq int
	At  time.Time
	// Controls: the control forms are shown, with CSRF, and whether the
	// daemon is paused.
	Controls bool
	CSRF     string
	Paused   bool
}

// PullRequest is a pull request of the workers, for the "now" panel.
type PullRequest struct {
	IssueID string
	logjsonl.PullRequest
}

// live keeps the "now" panel's state and tells subscribers when it
// changes. It is an logjsonl.Sink.
type live struct {
	mu      sync.Mutex
	now     Now
	workers map[string]*Worker
	prs     map[string]PullRequest
	ring    *logjsonl.Ring
	subs    map[chan string]struct{}
	clock   func() time.Time
}

func newLive(isLive bool, workers int, clock func() time.Time) *live {
	l := &live{workers: map[string]*Worker{}, ring: logjsonl.NewRing(lastEvents), subs: map[chan string]struct{}{}, clock: clock}
	l.now.Live = isLive
	for i := 1; i <= max(workers, 1); i++ {
		name := workerName(i, workers)
		l.workers[name] = &Worker{Name: name}
	}
	return l
}

// workerName names worker i of n; the only worker of one is "".
func workerName(i, n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("w%d", i)
}

// Observe updates the panel from one loop event and wakes subscribers.
func (l *live) Observe(ev logjsonl.Event) {
	l.ring.Observe(ev)
	l.mu.Lock()
	w := l.workers[ev.Worker]
	if w == nil {
		w = &Worker{Name: ev.Worker}
		l.workers[ev.Worker] = w
	}
	kind := "event"
	switch d := ev.Data.(type) {
	case logjsonl.RunStart:
		l.now.Mode = d.Mode
	case logjsonl.IterationStart:
		*w = Worker{Name: w.Name, Mode: d.Mode, IssueID: d.IssueID, Title: d.IssueTitle, Attempt: d.Attempt,
			MaxAttempts: d.MaxAttempts, Iteration: d.Iteration, Started: ev.Time}
		l.now.Mode = d.Mode
		kind = "graph" // the issue went in progress
	case logjsonl.IterationEnd:
		*w = Worker{Name: w.Name}
		kind = "end" // an issue may have closed, and it cost something
	case logjsonl.Decision:
		if d.IssueID == "" {
			l.now.State, l.now.Reason = d.Decision, d.Reason
		}
	case logjsonl.Stuck, logjsonl.RunEnd:
		kind = "graph"
	case logjsonl.WorkerStep:
		if d.PullRequest != nil && d.IssueID != "" {
			if l.prs == nil {
				l.prs = map[string]PullRequest{}
			}
			l.prs[d.IssueID] = PullRequest{IssueID: d.IssueID, PullRequest: *d.PullRequest}
		}
	}
	l.mu.Unlock()
	l.publish(kind)
}

// publish counts a change and tells every subscriber what changed.
func (l *live) publish(kind string) {
	l.mu.Lock()
	l.now.Seq++
	subs := make([]chan string, 0, len(l.subs))
	for c := range l.subs {
		subs = append(subs, c)
	}
	l.mu.Unlock()
	for _, c := range subs {
		select {
		case c <- kind:
		default: // the subscriber is behind; it will read the newest state anyway
		}
	}
}

// changed wakes subscribers without an event (a control action).
func (l *live) changed() { l.publish("event") }

// snapshot returns the panel as it is now.
func (l *live) snapshot() Now {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.now
	n.At = l.clock()
	n.Workers = make([]Worker, 0, len(l.workers))
	for _, w := range l.workers {
		n.Workers = append(n.Workers, *w)
	}
	sort.Slice(n.Workers, func(i, j int) bool { return n.Workers[i].Name < n.Workers[j].Name })
	n.PullRequests = make([]PullRequest, 0, len(l.prs))
	for _, p := range l.prs {
		n.PullRequests = append(n.PullRequests, p)
	}
	sort.Slice(n.PullRequests, func(i, j int) bool { return n.PullRequests[i].IssueID < n.PullRequests[j].IssueID })
	evs := l.ring.Last()
	n.Events = make([]Line, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		n.Events = append(n.Events, Line{Time: evs[i].Time, Event: evs[i].Name, Text: describe(evs[i])})
	}
	return n
}

// subscribe returns a channel that receives what changed ("event": the
// now panel; "graph": the graph too; "end": the cost as well) on each
// event, and a function to unsubscribe.
func (l *live) subscribe() (<-chan string, func()) {
	c := make(chan string, 4)
	l.mu.Lock()
	l.subs[c] = struct{}{}
	l.mu.Unlock()
	return c, func() {
		l.mu.Lock()
		delete(l.subs, c)
		l.mu.Unlock()
	}
}

// describe is one line about an event for a person. Its text may come from
// the agent or the tracker: templates escape it.
func describe(ev logjsonl.Event) string {
	switch d := ev.Data.(type) {
	case logjsonl.RunStart:
		return fmt.Sprintf("%s run started (%s)", d.Mode, d.Agent)
	case logjsonl.IterationStart:
		if d.IssueID == "" {
			return fmt.Sprintf("iteration %d: %s", d.Iteration, d.Mode)
		}
		return fmt.Sprintf("iteration %d: %s attempt %d/%d %s", d.Iteration, d.IssueID, d.Attempt, d.MaxAttempts, d.IssueTitle)
	case logjsonl.IterationEnd:
		s := fmt.Sprintf("iteration %d done: %s in %ds", d.Iteration, d.Outcome, d.DurationSeconds)
		if d.IssueID != "" {
			s = fmt.Sprintf("iteration %d (%s) done: %s in %ds", d.Iteration, d.IssueID, d.Outcome, d.DurationSeconds)
		}
		if d.Reason != "" {
			s += ": " + d.Reason
		}
		return s
	case logjsonl.Stuck:
		return fmt.Sprintf("%s is STUCK after %s", d.IssueID, text.Count(d.Attempts, "attempt"))
	case logjsonl.Violation:
		return fmt.Sprintf("violation %s on %s reverted: %s", d.Kind, d.IssueID, d.Detail)
	case logjsonl.Decision:
		return d.Decision + ": " + d.Reason
	case logjsonl.QuotaWaitStart:
		return fmt.Sprintf("waiting %ds for the agent's quota", d.WaitSeconds)
	case logjsonl.RunEnd:
		return fmt.Sprintf("run ended: %s (%s, %d closed)", d.Outcome, text.Count(d.Iterations, "iteration"), d.IssuesClosed)
	case state.BDCall:
		verdict := "allowed"
		if !d.Allowed {
			verdict = "refused: " + d.Reason
		}
		return fmt.Sprintf("agent ran bd %s (%s)", strings.Join(d.Argv, " "), verdict)
	}
	return ev.Name
}

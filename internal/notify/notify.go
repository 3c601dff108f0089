// Package notify tells a person when ralphd needs them: a command run with
// one JSON event on stdin (notify_cmd), an HTTP POST (notify_url), or both.
//
// Delivery never holds up the loop. [Notifier.Observe] only translates the
// loop's event and queues it; one goroutine of the Notifier's own delivers
// the queue, each command under a timeout in its own process group, each
// POST with retries and backoff. A failure is logged and dropped; a full
// queue drops the newest event and says so.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/log"

	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/text"
)

// Event kinds, the "event" key of a notification. Each is on by default.
const (
	KindStuck         = "stuck"          // an issue used up its attempts
	KindRunEnd        = "run_end"        // a run (or a daemon batch) ended
	KindBudget        = "budget"         // the cost cap stopped the run
	KindAgentUnusable = "agent_unusable" // the agent cannot run (auth, not installed)
	KindViolation     = "violation"      // a forbidden change was reverted
	KindQuotaWait     = "quota_wait"     // a quota wait longer than LongQuotaWait began
	KindIdleBlocked   = "idle_blocked"   // the daemon went idle with open work blocked
	KindBuildCreated  = "build_created"  // a BUILD iteration created issues
)

// Kinds lists every event kind, in the order `ralphd notify test` sends them.
var Kinds = []string{KindStuck, KindRunEnd, KindBudget, KindAgentUnusable, KindViolation, KindQuotaWait, KindIdleBlocked, KindBuildCreated}

// LongQuotaWait is how long a quota wait must be to be worth a notification.
const LongQuotaWait = 10 * time.Minute

// Event is one notification, sent as JSON to notify_cmd and notify_url.
type Event struct {
	Kind    string    `json:"event"`
	Time    time.Time `json:"time"`
	Project string    `json:"project,omitempty"`
	IssueID string    `json:"issue_id,omitempty"`
	Summary string    `json:"summary"`          // one line for a person
	Detail  string    `json:"detail,omitempty"` // e.g. the STUCK note's recommendation
	Data    any       `json:"data,omitempty"`   // the loop event's data, as in the run log
}

// Title is a short headline for the event.
func (e Event) Title() string { return "ralphd: " + strings.ReplaceAll(e.Kind, "_", " ") }

// ParseKinds parses notify_events: "all" (or empty) for every kind, or a
// comma-separated list of kinds.
func ParseKinds(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return slices.Clone(Kinds), nil
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("notify_events: unknown event %q; use all or some of: %s", k, strings.Join(Kinds, ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

// Config says where and how to deliver.
type Config struct {
	Cmd     string        // run with sh -c, the event's JSON on stdin; "" for none
	URL     string        // POSTed to; "" for none
	Format  string        // the URL's body: auto, text, json or slack
	Kinds   []string      // the kinds to send; nil for all
	Timeout time.Duration // per command run and per HTTP attempt; 0 means 30s
	// Retries is how many times a failed POST is tried again (0 means 3);
	// Backoff is the first wait between tries, doubled each time (0 means
	// 1s).
	Retries int
	Backoff time.Duration
	Project string   // named in every event
	Dir     string   // the command's working directory
	Env     []string // the command's environment; nil inherits ralphd's
	// Log receives delivery failures; nil discards them.
	Log *log.Logger
}

// Notifier delivers events. Its zero value is not usable; use [New].
type Notifier struct {
	cfg    Config
	queue  chan Event
	done   chan struct{}
	mu     sync.Mutex // guards closed, recent and sends on queue
	closed bool
	recent map[string]sent // kind -> the last event of a repeating kind
	now    func() time.Time
	stop   context.CancelFunc
	ctx    context.Context
	client *http.Client // its own, so no other code's settings apply
}

// queueSize bounds the events waiting for delivery.
const queueSize = 64

// repeatWindow is how long a repeating kind stays quiet when it has
// nothing new to say: a daemon that goes idle with blocked work decides so
// again at every poll, and an unusable agent is retried with backoff.
const repeatWindow = time.Hour

// repeating lists the kinds whose identical repeats are dropped.
var repeating = []string{KindIdleBlocked, KindAgentUnusable, KindQuotaWait}

type sent struct {
	summary string
	at      time.Time
}

// New returns a Notifier and starts its delivery goroutine; Close stops it.
func New(cfg Config) *Notifier {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Retries <= 0 {
		cfg.Retries = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.Kinds == nil {
		cfg.Kinds = Kinds
	}
	if cfg.Log == nil {
		cfg.Log = log.New(nilWriter{})
	}
	ctx, stop := context.WithCancel(context.Background())
	n := &Notifier{cfg: cfg, queue: make(chan Event, queueSize), done: make(chan struct{}), ctx: ctx, stop: stop,
		recent: map[string]sent{}, now: time.Now, client: &http.Client{}}
	go n.deliverLoop()
	return n
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }

// Enabled reports whether anything is configured to receive events.
func (n *Notifier) Enabled() bool { return n.cfg.Cmd != "" || n.cfg.URL != "" }

// Observe translates a loop event and queues the notification, if any. It
// never blocks.
func (n *Notifier) Observe(ev logjsonl.Event) {
	e, ok := FromLoop(ev)
	if !ok {
		return
	}
	n.Enqueue(e)
}

// Enqueue queues e for delivery when its kind is selected. It never blocks:
// when the queue is full, e is dropped with a warning. An idle_blocked,
// agent_unusable or quota_wait event that says what the last one of its
// kind said, within the hour, is dropped as a repeat.
func (n *Notifier) Enqueue(e Event) {
	if !n.Enabled() || !slices.Contains(n.cfg.Kinds, e.Kind) {
		return
	}
	if e.Project == "" {
		e.Project = n.cfg.Project
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if slices.Contains(repeating, e.Kind) {
		now := n.now()
		if last, ok := n.recent[e.Kind]; ok && last.summary == e.Summary && now.Sub(last.at) < repeatWindow {
			return // nothing new since the last one
		}
		n.recent[e.Kind] = sent{summary: e.Summary, at: now}
	}
	select {
	case n.queue <- e:
	default:
		n.cfg.Log.Warn("notification dropped: the notifier is behind", "event", e.Kind)
	}
}

// Close stops taking events and waits until the queued ones are delivered
// or ctx ends, whichever is first; then it abandons the rest.
func (n *Notifier) Close(ctx context.Context) {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
	case <-ctx.Done():
		n.stop()
		<-n.done
	}
	n.stop()
}

func (n *Notifier) deliverLoop() {
	defer close(n.done)
	for e := range n.queue {
		if n.ctx.Err() != nil {
			continue
		}
		if err := n.Send(n.ctx, e); err != nil {
			n.cfg.Log.Warn("notification failed", "event", e.Kind, "err", err)
		}
	}
}

// Send delivers e now, to the command and the URL, and returns the first
// failure (both are tried either way). `ralphd notify test` uses it.
func (n *Notifier) Send(ctx context.Context, e Event) error {
	if e.Project == "" {
		e.Project = n.cfg.Project
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", e.Kind, err)
	}
	var errs []error
	if n.cfg.Cmd != "" {
		if err := n.runCmd(ctx, body); err != nil {
			errs = append(errs, err)
		}
	}
	if n.cfg.URL != "" {
		if err := n.post(ctx, e, body); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// FromLoop turns a loop event into a notification, when it is one.
func FromLoop(ev logjsonl.Event) (Event, bool) {
	e := Event{Time: ev.Time.UTC(), Data: ev.Data}
	switch d := ev.Data.(type) {
	case logjsonl.Stuck:
		e.Kind, e.IssueID = KindStuck, d.IssueID
		e.Summary = fmt.Sprintf("%s is STUCK after %s", d.IssueID, text.Count(d.Attempts, "attempt"))
		e.Detail = d.Reason
	case logjsonl.Violation:
		e.Kind, e.IssueID = KindViolation, d.IssueID
		e.Summary = fmt.Sprintf("a forbidden change (%s) was reverted", d.Kind)
		if d.IssueID != "" {
			e.Summary += " on " + d.IssueID
		}
		e.Detail = d.Detail
	case logjsonl.Created:
		e.Kind, e.IssueID = KindBuildCreated, d.IssueID
		e.Summary = fmt.Sprintf("BUILD iteration %d on %s created %s", d.Iteration, d.IssueID, text.Count(d.Count, "issue"))
		if d.Cap > 0 {
			e.Summary += fmt.Sprintf(" (max_creates %d)", d.Cap)
		}
		e.Detail = strings.Join(d.IDs, ", ")
	case logjsonl.QuotaWaitStart:
		if time.Duration(d.WaitSeconds)*time.Second <= LongQuotaWait {
			return Event{}, false
		}
		e.Kind = KindQuotaWait
		e.Summary = fmt.Sprintf("waiting %s for the agent's quota", (time.Duration(d.WaitSeconds) * time.Second).String())
		e.Detail = d.Reason
	case logjsonl.RunEnd:
		switch d.Outcome {
		case "budget":
			e.Kind = KindBudget
			e.Summary = "the cost cap stopped the run"
		case "agent_unusable":
			e.Kind = KindAgentUnusable
			e.Summary = "the agent cannot run"
		default:
			e.Kind = KindRunEnd
			e.Summary = fmt.Sprintf("run ended (%s): %s, %d closed, %d stuck", d.Outcome, text.Count(d.Iterations, "iteration"), d.IssuesClosed, d.Stuck)
			if d.CostUSD != nil {
				e.Summary += fmt.Sprintf(", $%.2f", *d.CostUSD)
			}
		}
		e.Detail = d.Reason
	case logjsonl.Decision:
		if d.Decision != "idle" || !blockedWork(d.Reason) {
			return Event{}, false
		}
		e.Kind = KindIdleBlocked
		e.Summary = "idle with open work blocked: " + d.Reason
	default:
		return Event{}, false
	}
	return e, true
}

// blockedWork reads the daemon's idle reason ("0 ready, 2 blocked, 3
// open") and reports whether any open work is blocked.
func blockedWork(reason string) bool {
	var ready, blocked, open int
	if _, err := fmt.Sscanf(reason, "%d ready, %d blocked, %d open", &ready, &blocked, &open); err != nil {
		return false
	}
	return blocked > 0
}

// Samples returns one sample event of each kind, for `ralphd notify test`.
func Samples(now time.Time) []Event {
	at := now.UTC()
	return []Event{
		{Kind: KindStuck, Time: at, IssueID: "demo-1", Summary: "demo-1 is STUCK after 3 attempts (sample)", Detail: "Recommendation: split the issue or clarify its acceptance criteria."},
		{Kind: KindRunEnd, Time: at, Summary: "run ended (success): 4 iterations, 3 closed, 1 stuck, $0.42 (sample)"},
		{Kind: KindBudget, Time: at, Summary: "the cost cap stopped the run (sample)"},
		{Kind: KindAgentUnusable, Time: at, Summary: "the agent cannot run (sample)", Detail: "not logged in"},
		{Kind: KindViolation, Time: at, IssueID: "demo-2", Summary: "a forbidden change (priority_changed) was reverted on demo-2 (sample)"},
		{Kind: KindQuotaWait, Time: at, Summary: "waiting 45m0s for the agent's quota (sample)"},
		{Kind: KindIdleBlocked, Time: at, Summary: "idle with open work blocked: 0 ready, 2 blocked, 2 open (sample)"},
		{Kind: KindBuildCreated, Time: at, IssueID: "demo-3", Summary: "BUILD iteration 4 on demo-3 created 2 issues (max_creates 10) (sample)", Detail: "demo-7, demo-8"},
	}
}

// Sink is the seam between the loop and whatever watches it:
// metrics, notifications and the dashboard's live panel. The loop hands
// each of its loop_meta events to a [Sink] as it writes it to the run log,
// whether or not a run log is being written.

package logjsonl

import (
	"sync"
	"time"
)

// Event is one loop_meta event as the loop emitted it. Data is the event's
// typed data from package logjsonl (logjsonl.IterationEnd, logjsonl.Stuck,
// ...), or free-form data for the events that have no type.
type Event struct {
	Name   string    // a logjsonl.Event* name
	Time   time.Time // when the loop emitted it
	Worker string    // the worker that emitted it; "" for the only one
	Data   any
}

// Sink receives events. Observe is called on the loop's goroutine, so it
// must return quickly and never block on the network or a subprocess:
// anything slow is handed to a goroutine of the sink's own.
type Sink interface {
	Observe(Event)
}

// Fanout is a [Sink] that hands each event to every sink in it, in order.
type Fanout []Sink

// Observe hands ev to every sink.
func (f Fanout) Observe(ev Event) {
	for _, s := range f {
		if s != nil {
			s.Observe(ev)
		}
	}
}

// Ring keeps the last N events, for the dashboard's "last events" list. It
// is safe for concurrent use.
type Ring struct {
	mu   sync.Mutex
	buf  []Event
	next int
	full bool
}

// NewRing returns a Ring that keeps the last n events (n >= 1).
func NewRing(n int) *Ring {
	if n < 1 {
		n = 1
	}
	return &Ring{buf: make([]Event, n)}
}

// Observe records ev, dropping the oldest event when the ring is full.
func (r *Ring) Observe(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = ev
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// Last returns the kept events, oldest first.
func (r *Ring) Last() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]Event(nil), r.buf[:r.next]...)
	}
	out := make([]Event, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// A tracker view shares readings of the tracker among the workers of
// one pool. A worker that needs the tracker as it is now (the read-back of
// a claim, the tracker after an iteration) asks for a reading that
// started after a moment it names; requests that arrive together are
// served by one reading (one `bd list`), and a reading already taken
// serves every request it started after.
//
// Readings are numbered in the order they start. A request names its
// moment with Mark, taken after whatever it must see (the claim, the
// agent's last write); Since returns only a reading numbered above that
// mark, which started after it and so reflects everything done before
// it. The numbers also order readings against each other: of two
// readings, the higher-numbered one never reflects less.

package guard

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"
)

// Defaults for a View's zero fields.
const (
	DefaultDebounce  = 100 * time.Millisecond
	DefaultMaxGather = time.Second
	DefaultPoll      = 10 * time.Millisecond
)

// Reading is one reading of the tracker.
type Reading struct {
	// Snap is the tracker. Since gives each caller its own copy of the
	// map; the issues' slices are shared and must not be changed.
	Snap Snapshot
	// Seq numbers the reading, from 1, in the order readings started.
	Seq uint64
	// Done is when the reading ended: nothing done after it is in Snap.
	Done time.Time
}

// View coalesces readings of the tracker. Its zero value is not usable:
// set Read. A View is safe for concurrent use.
type View struct {
	// Read takes one reading: the whole tracker. The View runs one Read
	// at a time.
	Read func(ctx context.Context) (Snapshot, error)
	// Expected, when set, says how many requests to expect: soon, those
	// that will come at once (workers claiming an issue, or whose agent
	// has ended), counting those already waiting, and later, those that
	// may come in a while (workers whose agent runs). A reading starts as
	// soon as soon+later requests wait for it. While fewer than soon do,
	// it waits for them; then, for those that may come later, until
	// Debounce after the last request joined it. It never waits longer
	// than MaxGather after the first. Without Expected, a reading starts
	// Debounce after the last request joined it, and at most MaxGather
	// after the first.
	Expected func() (soon, later int)
	// Poll is how often a gathering reading looks at Expected again
	// (zero: DefaultPoll).
	Poll time.Duration
	// Debounce and MaxGather shape the wait for others (zero: the
	// defaults).
	Debounce, MaxGather time.Duration

	mu      sync.Mutex
	started uint64  // the number of the last reading started
	latest  Reading // the last reading taken
	running *batch  // the reading under way, if any
	next    *batch  // the reading requests gather for, not yet started
}

// batch is one reading and the requests it serves.
type batch struct {
	waiting   int           // requests waiting for it
	abandoned bool          // every request left: nobody may join it
	arrived   chan struct{} // a request joined (buffered 1)
	first     time.Time
	last      time.Time
	done      chan struct{} // closed when the reading is over
	cancel    context.CancelFunc
	ctx       context.Context
	res       Reading
	err       error
}

// Mark returns the view's present moment: a reading numbered above it
// starts after Mark returns.
func (v *View) Mark() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.started
}

// Since returns a reading that started after mark (a value Mark
// returned, or a Reading's Seq minus one to get that reading or a later
// one): the last one taken if it qualifies, else the next one, which it
// waits for with every other request that arrives meanwhile.
func (v *View) Since(ctx context.Context, mark uint64) (Reading, error) {
	if v.Read == nil {
		return Reading{}, errors.New("trackview: no Read")
	}
	v.mu.Lock()
	for {
		if v.latest.Seq > mark {
			r := v.latest
			r.Snap = maps.Clone(r.Snap)
			v.mu.Unlock()
			return r, nil
		}
		b := v.running
		if b == nil || b.abandoned || b.res.Seq <= mark {
			// Nothing under way, or it started too early: the next one.
			b = v.next
			if b == nil {
				b = v.newBatch()
			}
			b.last = time.Now()
			select {
			case b.arrived <- struct{}{}:
			default:
			}
		}
		b.waiting++
		v.mu.Unlock()
		select {
		case <-b.done:
		case <-ctx.Done():
			v.mu.Lock()
			b.waiting--
			if b.waiting == 0 {
				// Nobody wants it any more: a later request starts afresh.
				b.abandoned = true
				b.cancel()
				if v.next == b {
					v.next = nil
				}
			}
			v.mu.Unlock()
			return Reading{}, ctx.Err()
		}
		v.mu.Lock()
		b.waiting--
		if b.err != nil {
			err := b.err
			v.mu.Unlock()
			return Reading{}, err
		}
		// b started after mark; latest is b or later.
	}
}

// newBatch starts the next reading's gathering. The caller holds v.mu.
func (v *View) newBatch() *batch {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	b := &batch{arrived: make(chan struct{}, 1), first: now, last: now, done: make(chan struct{}), ctx: ctx, cancel: cancel}
	v.next = b
	prev := v.running
	go v.run(b, prev)
	return b
}

// run gathers requests for b, waits for the reading under way, then takes
// b's reading.
func (v *View) run(b *batch, prev *batch) {
	defer b.cancel()
	debounce, maxGather := v.Debounce, v.MaxGather
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	if maxGather <= 0 {
		maxGather = DefaultMaxGather
	}
	poll := v.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	for {
		v.mu.Lock()
		n, last := b.waiting, b.last
		v.mu.Unlock()
		deadline := last.Add(debounce)
		if v.Expected != nil {
			soon, later := v.Expected()
			if n >= soon+later {
				break // everyone who may ask is waiting
			}
			if n < soon {
				// Some are about to ask: look again shortly.
				deadline = time.Now().Add(poll)
			}
		}
		limit := b.first.Add(maxGather)
		if !time.Now().Before(limit) {
			break
		}
		if limit.Before(deadline) {
			deadline = limit
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-b.arrived:
		case <-t.C:
		case <-b.ctx.Done():
		}
		t.Stop()
		if b.ctx.Err() != nil {
			break
		}
	}
	if prev != nil {
		select {
		case <-prev.done:
		case <-b.ctx.Done():
		}
	}
	v.mu.Lock()
	if b.ctx.Err() != nil {
		// Every request left before it started: no reading.
		b.err = b.ctx.Err()
		if v.next == b {
			v.next = nil
		}
		close(b.done)
		v.mu.Unlock()
		return
	}
	v.started++
	b.res.Seq = v.started
	v.next, v.running = nil, b
	v.mu.Unlock()

	snap, err := v.Read(b.ctx)

	v.mu.Lock()
	defer v.mu.Unlock()
	if err == nil {
		b.res.Snap, b.res.Done = snap, time.Now()
		if b.res.Seq > v.latest.Seq {
			v.latest = b.res
		}
	}
	b.err = err
	if v.running == b {
		v.running = nil
	}
	close(b.done)
}

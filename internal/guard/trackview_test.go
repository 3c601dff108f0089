package guard

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
)

// tracker is a fake tracker: a version number every write bumps. A
// reading records the version as it was when the reading started.
type tracker struct {
	version atomic.Int64
	reads   atomic.Int64
	delay   time.Duration
	gate    chan struct{} // when set, each Read waits for a value
}

func (t *tracker) read(ctx context.Context) (Snapshot, error) {
	t.reads.Add(1)
	v := t.version.Load()
	if t.gate != nil {
		select {
		case <-t.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if t.delay > 0 {
		time.Sleep(t.delay)
	}
	return Snapshot{"v": beads.Issue{ID: "v", Title: strconv.FormatInt(v, 10)}}, nil
}

func versionOf(r Reading) int64 {
	n, _ := strconv.ParseInt(r.Snap["v"].Title, 10, 64)
	return n
}

// TestSinceCoalesces: requests that arrive together are served by one
// reading, which fires at once when every expected request waits.
func TestSinceCoalesces(t *testing.T) {
	is := is.New(t)
	tr := &tracker{}
	const n = 8
	v := &View{Read: tr.read, Expected: func() (int, int) { return n, 0 }, Debounce: time.Hour, MaxGather: time.Hour}
	mark := v.Mark()
	var wg sync.WaitGroup
	seqs := make([]uint64, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := v.Since(context.Background(), mark)
			if err != nil {
				t.Error(err)
				return
			}
			seqs[i] = r.Seq
		}()
	}
	wg.Wait()
	is.Equal(tr.reads.Load(), int64(1)) // one reading for all eight
	for _, s := range seqs {
		is.Equal(s, uint64(1))
	}
	// The reading taken serves a request whose mark is older, without a read.
	r, err := v.Since(context.Background(), mark)
	is.NoErr(err)
	is.Equal(r.Seq, uint64(1))
	is.Equal(tr.reads.Load(), int64(1))
}

// TestSinceWaitsForSoon: a request expected soon holds the reading past
// Debounce (it is about to ask), and one expected later does not: the
// reading starts Debounce after the last request joined.
func TestSinceWaitsForSoon(t *testing.T) {
	for _, tc := range []struct {
		name        string
		soon, later int
		reads       int64
	}{
		{"second request is about to come", 2, 0, 1},
		{"second request may come later", 1, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			tr := &tracker{}
			v := &View{Read: tr.read, Expected: func() (int, int) { return tc.soon, tc.later }, Debounce: 5 * time.Millisecond, MaxGather: time.Minute, Poll: time.Millisecond}
			mark := v.Mark()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := v.Since(context.Background(), mark); err != nil {
					t.Error(err)
				}
			}()
			time.Sleep(100 * time.Millisecond) // far past Debounce
			_, err := v.Since(context.Background(), v.Mark())
			is.NoErr(err)
			wg.Wait()
			is.Equal(tr.reads.Load(), tc.reads)
		})
	}
}

// TestSinceDebounce: without Expected, a reading starts Debounce after
// the last arrival, and never later than MaxGather after the first.
func TestSinceDebounce(t *testing.T) {
	is := is.New(t)
	tr := &tracker{}
	v := &View{Read: tr.read, Debounce: 50 * time.Millisecond, MaxGather: 300 * time.Millisecond}
	start := time.Now()
	var wg sync.WaitGroup
	// Arrivals every 20 ms for 600 ms: the debounce never runs out, the
	// cap fires the reading.
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 20 * time.Millisecond)
			if _, err := v.Since(context.Background(), v.Mark()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// 600 ms of arrivals with a 300 ms cap: a few readings, not thirty,
	// and not one (the cap bounds the wait).
	n := tr.reads.Load()
	is.True(n >= 2 && n <= 6) // readings
	is.True(time.Since(start) < 5*time.Second)
}

// TestSinceNeverStale: every request gets a reading that started after
// its mark, so it reflects every write made before the mark. A view that
// served the last reading regardless, or joined a reading already under
// way, fails this.
func TestSinceNeverStale(t *testing.T) {
	is := is.New(t)
	tr := &tracker{delay: 2 * time.Millisecond}
	v := &View{Read: tr.read, Debounce: time.Millisecond, MaxGather: 5 * time.Millisecond}
	var wg sync.WaitGroup
	var stale atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				if (i+w)%2 == 0 {
					tr.version.Add(1) // a write (a claim), then a read-back
				}
				wrote := tr.version.Load()
				r, err := v.Since(context.Background(), v.Mark())
				if err != nil {
					t.Error(err)
					return
				}
				if versionOf(r) < wrote {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	is.Equal(stale.Load(), int64(0)) // no request got a reading older than its write
	is.True(tr.reads.Load() < 8*40)  // and readings were shared
}

// TestSinceWaitsPastReadingUnderWay: a request whose mark is after the
// start of the reading under way waits for the next reading; one whose
// mark is before it is served by it.
func TestSinceWaitsPastReadingUnderWay(t *testing.T) {
	is := is.New(t)
	tr := &tracker{gate: make(chan struct{})}
	v := &View{Read: tr.read, Debounce: time.Millisecond, MaxGather: time.Millisecond}
	early := v.Mark()
	first := make(chan Reading)
	go func() {
		r, _ := v.Since(context.Background(), early)
		first <- r
	}()
	waitFor(t, func() bool { return v.Mark() == 1 }) // reading 1 under way
	tr.version.Add(1)                                // a write after it started
	late := v.Mark()
	second := make(chan Reading)
	go func() {
		r, _ := v.Since(context.Background(), late)
		second <- r
	}()
	alsoEarly := make(chan Reading)
	go func() {
		r, _ := v.Since(context.Background(), early)
		alsoEarly <- r
	}()
	send(t, tr.gate) // reading 1 ends
	r1 := recv(t, first)
	is.Equal(r1.Seq, uint64(1))
	is.Equal(versionOf(r1), int64(0))
	is.Equal(recv(t, alsoEarly).Seq, uint64(1)) // served by the reading under way
	send(t, tr.gate)                            // reading 2 ends
	r2 := recv(t, second)
	is.Equal(r2.Seq, uint64(2))
	is.Equal(versionOf(r2), int64(1)) // it sees the write
	is.Equal(tr.reads.Load(), int64(2))
}

// TestSinceCancel: a request whose context ends returns; a reading
// nobody waits for any more is abandoned, and the next request starts
// afresh.
func TestSinceCancel(t *testing.T) {
	is := is.New(t)
	tr := &tracker{gate: make(chan struct{})}
	v := &View{Read: tr.read, Debounce: time.Millisecond, MaxGather: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := v.Since(ctx, 0)
		done <- err
	}()
	waitFor(t, func() bool { return tr.reads.Load() == 1 })
	cancel()
	is.True(errors.Is(<-done, context.Canceled))
	close(tr.gate) // later reads go straight through
	r, err := v.Since(context.Background(), 0)
	is.NoErr(err)
	is.Equal(r.Seq, uint64(2))
}

// TestSinceError: a failed reading fails every request it would have
// served; the next request reads again.
func TestSinceError(t *testing.T) {
	is := is.New(t)
	fail := true
	v := &View{Read: func(context.Context) (Snapshot, error) {
		if fail {
			return nil, errors.New("bd list: exit 1")
		}
		return Snapshot{}, nil
	}, Debounce: time.Millisecond}
	_, err := v.Since(context.Background(), 0)
	is.True(err != nil)
	fail = false
	r, err := v.Since(context.Background(), 0)
	is.NoErr(err)
	is.Equal(r.Seq, uint64(2))
}

// TestSinceCopies: each caller gets its own map.
func TestSinceCopies(t *testing.T) {
	is := is.New(t)
	tr := &tracker{}
	v := &View{Read: tr.read, Debounce: time.Millisecond}
	a, err := v.Since(context.Background(), 0)
	is.NoErr(err)
	delete(a.Snap, "v")
	b, err := v.Since(context.Background(), 0)
	is.NoErr(err)
	_, ok := b.Snap["v"]
	is.True(ok)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

func recv[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received in 5 s")
	}
	panic("unreachable")
}

func send(t *testing.T, c chan<- struct{}) {
	t.Helper()
	select {
	case c <- struct{}{}:
	case <-time.After(5 * time.Second):
		t.Fatal("nobody received in 5 s")
	}
}

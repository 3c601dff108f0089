package modes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestParkedWorkersWakeOnEvents: with a chain, the workers that find
// nothing ready park; each close that unblocks the next link wakes them,
// with an Idle fallback far longer than the test, so only the pool's own
// events can wake them. The pool neither hangs nor leaves early (the
// whole chain is done), and the probes are bounded: at most one that
// finds nothing per event, never one per worker per event.
func TestParkedWorkersWakeOnEvents(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	chain := []string{p.create("chain 1")}
	for i := 2; i <= 4; i++ {
		chain = append(chain, p.create(fmt.Sprintf("chain %d", i), "--deps", chain[len(chain)-1]))
	}
	const k = 4
	var order []string
	pool := p.pool(k, func(ctx context.Context, a Assignment) (bool, error) {
		order = append(order, a.Issue.ID) // one issue is ready at a time: no race
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("x\n"), 0o644); err != nil {
			return false, err
		}
		time.Sleep(100 * time.Millisecond) // long enough for the others to park
		return commitAndClose(ctx, a)
	})
	pool.Idle = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := pool.Run(ctx)
	is.NoErr(err)          // no hang: the run ended before the timeout
	is.Equal(order, chain) // no early exit: every link was worked, in order
	is.Equal(len(sum.Integrated), len(chain))
	// Claims won: 4. Events: 4 (each iteration's end). A probe that finds
	// nothing happens at most once per generation: the start, and each
	// event.
	probes := pool.probes.Load()
	is.True(probes <= int64(len(chain))+int64(len(chain))+1) // bounded probes
	is.True(pool.probesSkipped.Load() > 0)                   // the others parked without asking bd
}

// TestParkedWorkersLeaveTogether: when nothing is claimable and nobody is
// busy, every parked worker leaves at once, without waiting for the Idle
// fallback and without a probe each.
func TestParkedWorkersLeaveTogether(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	one := p.create("the only issue")
	const k = 6
	pool := p.pool(k, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, "f.txt"), []byte("x\n"), 0o644); err != nil {
			return false, err
		}
		time.Sleep(200 * time.Millisecond)
		return commitAndClose(ctx, a)
	})
	pool.Idle = time.Hour
	var exits []string
	pool.Log = func(e Event) {
		if e.Kind == "idle-exit" {
			exits = append(exits, e.Worker)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	sum, err := pool.Run(ctx)
	is.NoErr(err)
	is.Equal(sum.Integrated, []string{one})
	is.Equal(len(exits), k) // every worker left
	slices.Sort(exits)
	is.Equal(slices.Compact(exits), exits)
	is.True(time.Since(start) < time.Minute) // not the Idle fallback
	// One probe won; one found nothing at the start; one after the
	// iteration's end; every other worker parked or left on those answers.
	is.True(pool.probes.Load() <= 3)
}

// TestIdleFallbackProbesOncePerPeriod: workers parked while another
// works ask bd again when the fallback runs out (work may have come from
// elsewhere), one probe per period for the whole pool.
func TestIdleFallbackProbesOncePerPeriod(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	p.create("long work")
	const k = 5
	pool := p.pool(k, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, "f.txt"), []byte("x\n"), 0o644); err != nil {
			return false, err
		}
		time.Sleep(time.Second)
		return commitAndClose(ctx, a)
	})
	pool.Idle = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err := pool.Run(ctx)
	is.NoErr(err)
	// Four workers parked for the whole run: one probe per fallback
	// period for the pool (plus the start and the end), not one per
	// worker per period.
	periods := int64(time.Since(start) / pool.Idle)
	n := pool.probes.Load()
	t.Logf("probes %d in %d periods, skipped %d", n, periods, pool.probesSkipped.Load())
	is.True(n >= 4)         // the fallback did probe
	is.True(n <= periods+3) // once per period, for the whole pool
	is.True(pool.probesSkipped.Load() > 0)
}

// TestWorkCreatedDuringTheLastIteration: an agent that creates an issue
// in the last iteration makes no event the pool sees, and its issue has
// no dependents; the pool still asks bd once more before it ends, and
// works the new issue (with an Idle fallback longer than the test).
func TestWorkCreatedDuringTheLastIteration(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	first := p.create("first")
	var worked []string
	pool := p.pool(3, func(ctx context.Context, a Assignment) (bool, error) {
		worked = append(worked, a.Issue.ID) // one at a time: no race
		if a.Issue.ID == first {
			time.Sleep(200 * time.Millisecond) // the others park
			p.create("found while working")
		}
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte("x\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	pool.Idle = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := pool.Run(ctx)
	is.NoErr(err)
	is.Equal(len(worked), 2) // the new issue was worked before the pool ended
	is.Equal(len(sum.Integrated), 2)
}

// TestParkAfterStaleProbe: a worker whose probe found nothing parks; if
// something happened while that probe ran (an issue reopened after a
// failed integration, and its worker no longer busy), the answer is
// stale and the worker looks again, even with no worker busy. Only a
// probe of the present generation lets it leave. (CI once saw a pool end
// with a reopened issue never worked again: the check came after the
// busy count.)
func TestParkAfterStaleProbe(t *testing.T) {
	for _, tc := range []struct {
		name         string
		gen, emptyIn int
		busy         int
		leave        bool
	}{
		{"probe stale, nobody busy", 1, 0, 0, false},
		{"probe stale, never found empty", 1, -1, 0, false},
		{"probe current, nobody busy", 1, 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pool{}
			p.gen, p.emptyIn, p.busy = tc.gen, tc.emptyIn, tc.busy
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if got := p.park(ctx, time.Hour); got != tc.leave {
				t.Errorf("park = leave %v, want %v", got, tc.leave)
			}
		})
	}
}

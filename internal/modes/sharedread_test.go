package modes

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// TestNotBehindBaseline: a worker's after-reading, taken before its
// judgement began, is never diffed against a newer baseline: when a
// judgement in between set the baseline from a later reading (it reverted
// something and read again), the worker reads again, and gets a reading
// at least as new as the baseline. A reading as new as the baseline is
// kept, with no bd call.
func TestNotBehindBaseline(t *testing.T) {
	is := is.New(t)
	var reads atomic.Int64
	status := atomic.Value{}
	status.Store(beads.StatusClosed) // the agent's forbidden close
	view := &guard.View{Debounce: time.Millisecond, Read: func(context.Context) (guard.Snapshot, error) {
		reads.Add(1)
		return guard.NewSnapshot([]beads.Issue{{ID: "a-1", Status: status.Load().(string)}}), nil
	}}
	ctx := context.Background()
	sh := &Pool{poolJudging: poolJudging{view: view}}
	l := &Loop{runState: runState{seat: &seat{pool: sh}}}

	// The worker's after-reading: a-1 closed (forbidden).
	after, err := l.snapshotAfter(ctx)
	is.NoErr(err)
	is.Equal(after["a-1"].Status, beads.StatusClosed)
	mine := l.seat.readSeq

	// Another judgement reverts the close and reads again: the baseline.
	status.Store(beads.StatusOpen)
	other := &Loop{runState: runState{seat: &seat{pool: sh}}}
	base, err := other.snapshotAfter(ctx)
	is.NoErr(err)
	sh.baseline, sh.baselineSeq = base, other.seat.readSeq
	is.True(sh.baselineSeq > mine)

	// Judging the older reading against that baseline would find the
	// reverted close again: the worker reads anew.
	got, err := l.notBehindBaseline(ctx, after)
	is.NoErr(err)
	is.Equal(got["a-1"].Status, beads.StatusOpen)
	is.True(l.seat.readSeq >= sh.baselineSeq)
	is.Equal(reads.Load(), int64(2)) // the baseline's own reading served it

	// As new as the baseline: kept as it is, no reading.
	got, err = l.notBehindBaseline(ctx, got)
	is.NoErr(err)
	is.Equal(got["a-1"].Status, beads.StatusOpen)
	is.Equal(reads.Load(), int64(2))

	// Outside workers it does nothing.
	solo := &Loop{}
	kept, err := solo.notBehindBaseline(ctx, after)
	is.NoErr(err)
	is.Equal(kept["a-1"].Status, beads.StatusClosed)
}

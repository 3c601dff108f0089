package beads

import (
	"context"
	"sync"
	"time"
)

// From bd's changelog, not verified against that version: later bds give
// a claim a five-minute lease that `bd heartbeat <id>` renews; a claim
// whose lease runs out can be taken by another actor. bd 1.0.5 has no
// leases, and a claim holds until released.

// LeaseEvery is how often KeepLease renews a lease: well inside the five
// minutes a lease lasts, so that one failed renewal is not fatal.
const LeaseEvery = 2 * time.Minute

// leases records, per bd binary (absolute path), whether its claims take
// leases. ProbeLeases fills it at run start; KeepLease only reads it.
var leases sync.Map // string → bool

// ProbeLeases finds out whether the bd binary bin takes leases with its
// claims and remembers it for KeepLease: a verified version (1.0.5) has
// none, and costs no call; another has them when `bd heartbeat --help`
// succeeds.
func ProbeLeases(ctx context.Context, bin string) bool {
	path, err := LookPath(bin)
	if err != nil {
		return false
	}
	v, err := ReadVersion(ctx, path)
	has := false
	if err == nil && !v.Verified() {
		r, err := runRaw(ctx, runSpec{bin: path, args: []string{"heartbeat", "--help"}, timeout: DefaultTimeout})
		has = err == nil && r.code == 0
	}
	leases.Store(path, has)
	return has
}

// KeepLease renews the lease on issue id, claimed by the client's actor,
// every LeaseEvery until stop is called or ctx ends, when ProbeLeases
// found that this bd has leases; otherwise it starts nothing. A failed
// renewal goes to OnCall like any bd call and is tried again at the next
// tick; the claim's read-back is what decides who holds the issue.
func (c *Client) KeepLease(ctx context.Context, id string) (stop func()) {
	return c.keepLease(ctx, id, LeaseEvery)
}

func (c *Client) keepLease(ctx context.Context, id string, every time.Duration) (stop func()) {
	if c == nil || checkID(id) != nil {
		return func() {}
	}
	if has, _ := leases.Load(c.Bin); has != true {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_, _ = c.RunJSON(ctx, "heartbeat", id)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

package modes

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestPauseHoldsClaims: the pause is pressed while two workers run. Each
// finishes the issue it holds, then waits before its next claim: no claim
// is made until the resume, after which the rest of the work is done.
func TestPauseHoldsClaims(t *testing.T) {
	is := is.New(t)
	p := newProject(t)
	for _, title := range []string{"one", "two", "three", "four"} {
		p.create(title)
	}
	var (
		mu     sync.Mutex
		paused bool
		resume = make(chan struct{})
		claims int
	)
	waiting := make(chan string, 8)
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	var n atomic.Int32
	pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
		if n.Add(1) <= 2 {
			started <- struct{}{}
			<-release // both run when the pause is pressed
		}
		if err := os.WriteFile(filepath.Join(a.Dir, a.Issue.ID+".txt"), []byte(a.Issue.ID+"\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	pool.Hold = func(ctx context.Context) error {
		mu.Lock()
		held := paused
		mu.Unlock()
		if !held {
			return nil
		}
		waiting <- "held"
		select {
		case <-resume:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	pool.Log = func(e Event) {
		if e.Kind == "claimed" {
			mu.Lock()
			claims++
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := pool.Run(ctx)
		done <- result{sum, err}
	}()
	for range 2 {
		select {
		case <-started:
		case r := <-done:
			t.Fatalf("the pool ended before two workers ran: %+v", r)
		}
	}
	mu.Lock()
	paused = true // pressed while both work
	mu.Unlock()
	close(release)
	for range 2 {
		select {
		case <-waiting:
		case r := <-done:
			t.Fatalf("the pool ended without holding for the pause: %+v", r)
		case <-time.After(30 * time.Second):
			t.Fatal("the workers never held for the pause")
		}
	}
	// Both workers wait before their next claim: none was made.
	mu.Lock()
	is.Equal(claims, 2)
	paused = false
	mu.Unlock()
	close(resume)
	r := <-done
	is.NoErr(r.err)
	is.Equal(len(r.sum.Integrated), 4) // the rest was done after the resume
	mu.Lock()
	is.Equal(claims, 4)
	mu.Unlock()
}

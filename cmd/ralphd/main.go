// Command ralphd runs AI coding agents in a loop over a beads (bd) issue
// tracker, and enforces what each loop mode may do to the tracker.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The first SIGINT or SIGTERM cancels ctx: no new iteration starts and
	// the running agent is stopped gracefully. Then default handling comes
	// back, so a second Ctrl-C stops ralphd at once. Its agent's processes
	// then end as README's "Process containment" says: by the cgroup
	// reaper, or, without a cgroup, the agent itself by its parent-death
	// signal and whatever it detached at the next start.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

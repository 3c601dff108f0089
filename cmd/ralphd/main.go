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
	// back, so a second Ctrl-C stops ralphd at once (its agent dies with it:
	// agents run with a parent-death signal).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Command fakebd is ralphd's stand-in for the beads `bd` CLI (1.0.5).
// Build it as `bd` for tests and demos:
//
//	go build -o DIR/bd ./internal/testkit/fakebd
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ralphd/ralphd/internal/testkit/standin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: cannot read the working directory: %v\n", err)
		os.Exit(1)
	}
	code := standin.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ(), cwd)
	stop()
	os.Exit(code)
}

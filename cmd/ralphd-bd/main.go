// Command ralphd-bd is the `bd` on an agent's PATH when it is installed
// beside ralphd: a client of the iteration's broker in the running ralphd,
// which decides and runs each call (see internal/guard, Serve). It is
// ralphd's own `bd-client` mode in a binary small enough to start in a
// fraction of ralphd's time, for an agent that calls bd often. Without
// it, ralphd runs itself as the client.
package main

import (
	"os"

	"github.com/ralphd/ralphd/internal/broker"
)

func main() {
	os.Exit(broker.RunClient(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

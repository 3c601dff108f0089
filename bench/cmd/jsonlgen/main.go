// Command jsonlgen writes SIZE bytes of lines shaped like Claude Code's
// stream-json to stdout (logjsonltest.Stream): the benchmark's agent
// output, produced at memory speed so that the consumer is what is
// measured.
//
//	jsonlgen 1GiB > /dev/null
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/testkit/logjsonltest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jsonlgen SIZE (bytes, or with a suffix: 100M, 1GiB)")
		os.Exit(2)
	}
	size, err := bench.ParseSize(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "jsonlgen: %v\n", err)
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 256<<10)
	if _, err := io.Copy(w, logjsonltest.Stream(size)); err != nil {
		fmt.Fprintf(os.Stderr, "jsonlgen: write: %v\n", err)
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "jsonlgen: write: %v\n", err)
		os.Exit(1)
	}
}

package broker

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
)

// RunClient is the thin `bd` on the agent's PATH: it sends args (the
// arguments after "bd"), the working directory and stdin to the broker
// named by the RALPHD_BD_BROKER entry that getenv returns, copies what the
// broker sends back to stdout and stderr, and returns the real bd's exit
// code.
func RunClient(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ralphd bd client: "+format+"\n", a...)
		return ExitRefused
	}
	sock, token, ok := strings.Cut(getenv(Env), "#")
	if !ok || sock == "" {
		return fail("%s is not set; this bd only works inside an agent run by ralphd", Env)
	}
	dir, err := os.Getwd()
	if err != nil {
		return fail("read the working directory: %v", err)
	}
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fail("reach ralphd: %v (the iteration that started this agent has ended)", err)
	}
	defer conn.Close()
	b, err := json.Marshal(hello{Token: token, Argv: args, Dir: dir})
	if err != nil {
		return fail("encode the call: %v", err)
	}
	var mu sync.Mutex
	if err := writeFrame(conn, frameHello, b); err != nil {
		return fail("send the call: %v", err)
	}
	go func() {
		// Stdin streams to the broker as it comes; a broker that is done
		// makes the writes fail, which ends this.
		w := frameWriter{mu: &mu, w: conn, typ: frameStdin}
		if stdin != nil {
			if _, err := io.Copy(w, stdin); err != nil {
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		_ = writeFrame(conn, frameStdinEOF, nil)
	}()
	for {
		typ, p, err := readFrame(conn, maxData)
		if err != nil {
			return fail("the connection to ralphd broke: %v", err)
		}
		switch typ {
		case frameStdout:
			_, _ = stdout.Write(p)
		case frameStderr:
			_, _ = stderr.Write(p)
		case frameExit:
			code, err := parseExit(p)
			if err != nil {
				return fail("%v", err)
			}
			return code
		}
	}
}

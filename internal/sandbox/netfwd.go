package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ForwarderCommand is the hidden ralphd subcommand that starts an agent in
// a sandbox with a network namespace of its own (Net):
//
//	ralphd internal-netfwd -socket PATH -no-proxy HOSTS -pass ADDRS -- AGENT ARGS...
//
// It listens on a free port of 127.0.0.1 inside the namespace, hands the
// listener to a copy of itself that forwards each connection to the
// proxy's unix socket, sets the agent's proxy variables to that port, and
// then becomes the agent (exec), so that the agent's exit status and the
// signals it gets are its own. Each -pass address (an allowed endpoint on
// the host's loopback) is listened on too, at the same address, and
// tunnelled through the proxy with CONNECT.
const ForwarderCommand = "internal-netfwd"

// forwardServe is the forwarder copy's own argument: it serves the
// listener it got as fd 3.
const forwardServe = "-serve"

// proxyVars are the variables that point an agent's HTTP clients at the
// forwarder, in both spellings (curl reads only the lower-case
// http_proxy; Node clients and Go read either).
var proxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

// RunForwarder is the body of ForwarderCommand. It returns only on an
// error: on success the process has become the agent.
func RunForwarder(args []string, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == forwardServe {
		serveForward(args[1], args[2:], stderr)
		return 0
	}
	fs := flag.NewFlagSet(ForwarderCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "the proxy's unix socket")
	noProxy := fs.String("no-proxy", "", "hosts the agent reaches without the proxy, comma-separated")
	pass := fs.String("pass", "", "allowed host-loopback endpoints to serve at the same address, comma-separated")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if *socket == "" || len(argv) == 0 {
		fmt.Fprintf(stderr, "ralphd: %s: usage: %s -socket PATH [-no-proxy HOSTS] -- COMMAND [ARGS...]\n", ForwarderCommand, ForwarderCommand)
		return 2
	}
	var passes []string
	for _, p := range strings.Split(*pass, ",") {
		if p = strings.TrimSpace(p); p != "" {
			passes = append(passes, p)
		}
	}
	if err := forward(*socket, *noProxy, passes, argv); err != nil {
		fmt.Fprintf(stderr, "ralphd: %s: %v\n", ForwarderCommand, err)
		return 1
	}
	return 0 // not reached
}

// forward listens, starts the serving copy and execs argv.
func forward(socket, noProxy string, passes, argv []string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen inside the sandbox's network namespace: %w", err)
	}
	passLns, passes := listenPasses(passes)
	files := []*os.File{}
	for _, l := range append([]net.Listener{ln}, passLns...) {
		f, err := l.(*net.TCPListener).File()
		if err != nil {
			return err
		}
		l.Close()
		files = append(files, f)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv := exec.Command(self, append([]string{ForwarderCommand, forwardServe, socket}, passes...)...)
	srv.Args[0] = os.Args[0]
	srv.ExtraFiles = files
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start the forwarder: %w", err)
	}
	for _, f := range files {
		f.Close()
	}
	// The forwarder is not waited for: it ends with the sandbox (the pid
	// namespace dies with the agent).
	_ = srv.Process.Release()

	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	env := proxyEnv(os.Environ(), "http://127.0.0.1:"+port, noProxy)
	if err := sealFDs(); err != nil {
		return err
	}
	return syscall.Exec(path, argv, env)
}

// proxyEnv sets the proxy variables in env to url and the NO_PROXY ones
// to noProxy (emptied when noProxy is: the user's own NO_PROXY, which
// may name the model's host, does not apply inside the sandbox).
func proxyEnv(env []string, url, noProxy string) []string {
	drop := append(slices.Clone(proxyVars), "NO_PROXY", "no_proxy")
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, k)
	})
	for _, k := range proxyVars {
		out = append(out, k+"="+url)
	}
	return append(out, "NO_PROXY="+noProxy, "no_proxy="+noProxy)
}

// listenPasses listens on each pass address inside the namespace and
// returns the listeners with their addresses; one that cannot be listened
// on (taken, or not an address) is left out, and the agent reaches that
// endpoint through the proxy variables only.
func listenPasses(passes []string) ([]net.Listener, []string) {
	var lns []net.Listener
	var addrs []string
	for _, p := range passes {
		if l, err := net.Listen("tcp", p); err == nil {
			lns, addrs = append(lns, l), append(addrs, p)
		}
	}
	return lns, addrs
}

// serveForward accepts on fd 3 and joins each connection to the proxy's
// socket, and on fd 4 on, one per pass address in order, tunnels each
// connection through the proxy to that address.
func serveForward(socket string, passes []string, stderr io.Writer) {
	for i, p := range passes {
		ln, err := net.FileListener(os.NewFile(uintptr(4+i), "pass"))
		if err != nil {
			fmt.Fprintf(stderr, "ralphd: %s: %s: %v\n", ForwarderCommand, p, err)
			continue
		}
		go servePass(ln, socket, p, stderr)
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintf(stderr, "ralphd: %s: %v\n", ForwarderCommand, err)
		return
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				fmt.Fprintf(stderr, "ralphd: %s: %v\n", ForwarderCommand, err)
			}
			return
		}
		go func() {
			defer c.Close()
			p, err := net.Dial("unix", socket)
			if err != nil {
				fmt.Fprintf(stderr, "ralphd: %s: reach ralphd's proxy: %v\n", ForwarderCommand, err)
				return
			}
			defer p.Close()
			join(c, p)
		}()
	}
}

// servePass tunnels each connection to ln through the proxy's CONNECT to
// addr: the proxy decides, and logs a refusal, as for any other request.
func servePass(ln net.Listener, socket, addr string, stderr io.Writer) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			p, err := net.Dial("unix", socket)
			if err != nil {
				fmt.Fprintf(stderr, "ralphd: %s: reach ralphd's proxy: %v\n", ForwarderCommand, err)
				return
			}
			defer p.Close()
			if err := connect(p, addr); err != nil {
				fmt.Fprintf(stderr, "ralphd: %s: %s: %v\n", ForwarderCommand, addr, err)
				return
			}
			join(c, p)
		}()
	}
}

// connect asks the proxy on p for a tunnel to addr and reads its answer
// up to the blank line that ends it.
func connect(p net.Conn, addr string) error {
	if _, err := fmt.Fprintf(p, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		return err
	}
	var head []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if len(head) > 8<<10 {
			return errors.New("the proxy's answer is too long")
		}
		if _, err := p.Read(one); err != nil {
			return fmt.Errorf("the proxy's answer: %w", err)
		}
		head = append(head, one[0])
	}
	status, _, _ := strings.Cut(string(head), "\r\n")
	if f := strings.Fields(status); len(f) < 2 || f[1] != "200" {
		return fmt.Errorf("the proxy refused: %s", status)
	}
	return nil
}

// join copies a to b and b to a until both directions end, passing each
// half-close on.
func join(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, a)
		closeWrite(b)
		close(done)
	}()
	_, _ = io.Copy(a, b)
	closeWrite(a)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

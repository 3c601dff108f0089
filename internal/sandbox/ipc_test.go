package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// probeCommand makes the test binary the in-sandbox probe; the forwarder
// command makes it the forwarder (ralphd's own binary in real use).
const probeCommand = "sandbox-probe"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case probeCommand:
			os.Exit(runProbe(os.Args[2:]))
		case ForwarderCommand:
			os.Exit(RunForwarder(os.Args[2:], os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// finding is one way out of the sandbox the probe found.
type finding struct {
	Kind string `json:"kind"` // fd, unix, file, device, connect
	What string `json:"what"`
}

// runProbe lists, from inside a sandbox, everything that could reach a
// program outside it: open fds beyond stdio, named unix sockets of its
// network namespace, sockets and FIFOs under the dirs given, device nodes
// in /dev beyond bwrap's own set and anywhere else under those dirs, and
// whether the addresses given after "--" (unix:PATH, abstract:NAME,
// tcp:HOST:PORT) accept a connection. It prints the findings as JSON.
func runProbe(args []string) int {
	var out []finding
	// First, before the runtime opens anything of its own.
	out = append(out, openFDs()...)
	dirs, addrs, _ := strings.Cut(strings.Join(args, "\x00"), "\x00--")
	out = append(out, namedUnixSockets()...)
	devs, _ := os.ReadDir("/dev")
	for _, d := range devs {
		if d.Type()&fs.ModeDevice != 0 && !slices.Contains(bwrapDevices, d.Name()) {
			out = append(out, finding{"device", "/dev/" + d.Name()})
		}
	}
	for _, dir := range strings.Split(dirs, "\x00") {
		if dir == "" {
			continue
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			// Lstat, not the dir entry's type: that is the type under a
			// mount point, not what is mounted on it.
			fi, err := os.Lstat(p)
			switch {
			case err != nil:
			case fi.Mode()&(fs.ModeSocket|fs.ModeNamedPipe) != 0:
				out = append(out, finding{"file", p})
			case fi.Mode()&fs.ModeDevice != 0 && !strings.HasPrefix(p, "/dev/"):
				out = append(out, finding{"device", p})
			}
			return nil
		})
	}
	for _, a := range strings.Split(addrs, "\x00") {
		network, addr, ok := strings.Cut(a, ":")
		if !ok {
			continue
		}
		switch network {
		case "abstract":
			network, addr = "unix", "@"+addr
		case "tcp", "unix":
		default:
			continue
		}
		if c, err := net.DialTimeout(network, addr, 2*time.Second); err == nil {
			c.Close()
			out = append(out, finding{"connect", a})
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

// bwrapDevices are the nodes bwrap's --dev makes.
var bwrapDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// openFDs lists fds beyond 0, 1 and 2, but for the one that lists them.
func openFDs() []finding {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return []finding{{"fd", "cannot list: " + err.Error()}}
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []finding
	for _, n := range names {
		fd, _ := strconv.Atoi(n)
		if fd <= 2 || uintptr(fd) == d.Fd() {
			continue
		}
		target, _ := os.Readlink("/proc/self/fd/" + n)
		if strings.HasPrefix(target, "anon_inode:[event") {
			continue // the Go runtime's poller, opened by the line above
		}
		out = append(out, finding{"fd", n + " -> " + target})
	}
	return out
}

// namedUnixSockets lists the unix sockets of the network namespace that
// have a name (a path or an abstract name): a socket the sandbox made
// itself for its own use (a socketpair) has none.
func namedUnixSockets() []finding {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return []finding{{"unix", "cannot list: " + err.Error()}}
	}
	defer f.Close()
	var out []finding
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 {
			out = append(out, finding{"unix", fields[7]})
		}
	}
	return out
}

// hostIPC is a set of the ways into programs outside the sandbox that a
// user's session has: sockets and a FIFO in /tmp, /run, the runtime dir,
// /dev/shm and the home dir, an abstract socket, a TCP port on loopback,
// and an fd open without close-on-exec.
type hostIPC struct {
	home, runtime, tmp string
	paths              []string // named sockets and FIFOs
	addrs              []string // probe addresses
	fd                 int
}

func newHostIPC(t *testing.T) *hostIPC {
	t.Helper()
	h := &hostIPC{}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	h.home, h.runtime, h.tmp = filepath.Join(root, "home"), filepath.Join(root, "run-user"), filepath.Join(root, "scratch")
	for _, d := range []string{h.home + "/.ssh", h.runtime, h.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	shortDir, err := os.MkdirTemp("", "ipc") // unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shortDir) })
	listen := func(network, addr string) net.Listener {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("listen on %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return ln
	}
	sockets := []string{filepath.Join(shortDir, "tmux"), filepath.Join(h.runtime, "bus"), filepath.Join(h.home, ".ssh", "cm-git@host:22")}
	if d, err := os.MkdirTemp("/dev/shm", "ipc"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		sockets = append(sockets, filepath.Join(d, "s"))
	}
	if d, err := os.MkdirTemp("/run", "ralphd-test-"); err == nil { // as root (docker.sock's place)
		t.Cleanup(func() { os.RemoveAll(d) })
		sockets = append(sockets, filepath.Join(d, "docker.sock"))
	}
	for _, p := range sockets {
		listen("unix", p)
		h.paths = append(h.paths, p)
		h.addrs = append(h.addrs, "unix:"+p)
	}
	fifo := filepath.Join(shortDir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	h.paths = append(h.paths, fifo)
	abstract := fmt.Sprintf("ralphd-test-%d", time.Now().UnixNano())
	listen("unix", "@"+abstract)
	tcp := listen("tcp", "127.0.0.1:0")
	h.addrs = append(h.addrs, "abstract:"+abstract, "tcp:"+tcp.Addr().String())
	// An fd ralphd inherited without close-on-exec: a connection to a
	// program outside.
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: sockets[0]}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	h.fd = fd
	return h
}

// probe runs the probe in l and returns its findings.
func (h *hostIPC) probe(t *testing.T, bwrap string, l Layout) []finding {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{"/tmp", "/run", "/var/run", "/var/tmp", "/dev/shm", h.home, h.runtime, h.tmp}
	argv := append([]string{self, probeCommand}, dirs...)
	argv = append(append(argv, "--"), h.addrs...)
	if err := l.Prepare(); err != nil {
		t.Fatal(err)
	}
	args := l.Args(bwrap, argv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The probe's runtime must not open the cgroup's CPU quota files to
	// size itself.
	cmd.Env = append(os.Environ(), "HOME="+h.home, "XDG_RUNTIME_DIR="+h.runtime, "GOMAXPROCS=2", "GODEBUG=containermaxprocs=0,updatemaxprocs=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the probe failed: %v\n%s", err, stderr.String())
	}
	var fs []finding
	if err := json.Unmarshal(out, &fs); err != nil {
		t.Fatalf("the probe said %q: %v", out, err)
	}
	return fs
}

// Nothing of the host's IPC reaches into a BUILD sandbox: the probe
// enumerates what it can see, and a layout without the new layers (the
// whole filesystem read-only, the network shared, fds left alone) sees
// every planted endpoint, so the check itself is known to bite.
func TestSandboxNoHostIPC(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	h := newHostIPC(t)
	self, _ := os.Executable()
	kinds := func(fs []finding) map[string][]string {
		m := map[string][]string{}
		for _, f := range fs {
			m[f.Kind] = append(m[f.Kind], f.What)
		}
		return m
	}

	// The old sandbox: everything planted is in reach, but /dev/shm
	// (bwrap's --dev was always private).
	old := kinds(h.probe(t, bwrap, Layout{Writable: []string{h.tmp}, Hidden: []string{}}))
	for _, p := range h.paths {
		if strings.HasPrefix(p, "/dev/shm/") {
			continue
		}
		if !slices.Contains(old["file"], p) {
			t.Errorf("the probe missed %s in a sandbox that shows it: %v", p, old["file"])
		}
	}
	for _, a := range h.addrs {
		if !strings.HasPrefix(a, "unix:/dev/shm/") && !slices.Contains(old["connect"], a) {
			t.Errorf("the probe could not reach %s in a sandbox that shares it: %v", a, old["connect"])
		}
	}
	if !slices.ContainsFunc(old["fd"], func(s string) bool { return strings.HasPrefix(s, strconv.Itoa(h.fd)+" ") }) {
		t.Errorf("the probe missed inherited fd %d: %v", h.fd, old["fd"])
	}
	if t.Failed() {
		t.Fatal("the probe cannot tell: stopping")
	}

	// The BUILD sandbox, in its own network namespace, after ralphd
	// sealed its fds.
	if err := SealFDs(); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(h.home, "repo")
	if err := os.MkdirAll(wt, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_RUNTIME_DIR": h.runtime}
	l := BuildLayout(Project{WorkTree: wt, Scratch: h.tmp, Home: h.home, AgentDirs: []string{h.home + "/.claude"}, Keep: []string{self},
		Getenv: func(k string) string { return env[k] }})
	l.Net = &Net{}
	if got := h.probe(t, bwrap, l); len(got) > 0 {
		t.Errorf("the sandbox reaches outside:\n%s", fmtFindings(got))
	}
}

func fmtFindings(fs []finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s\n", f.Kind, f.What)
	}
	return b.String()
}

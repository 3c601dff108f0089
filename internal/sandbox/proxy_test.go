package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestParseAllow(t *testing.T) {
	is := is.New(t)
	a, err := ParseAllow([]string{" api.anthropic.com ", "", "127.0.0.1:8080", "*.npmjs.org", "[::1]:9", "Proxy.Golang.org."})
	is.NoErr(err)
	tests := []struct {
		host, port string
		want       bool
	}{
		{"api.anthropic.com", "443", true},
		{"API.anthropic.com.", "80", true},
		{"api.anthropic.com", "22", false}, // no port given: 443 and 80 only
		{"evil.com", "443", false},
		{"api.anthropic.com.evil.com", "443", false},
		{"127.0.0.1", "8080", true},
		{"127.0.0.1", "3306", false}, // the Dolt server next door
		{"localhost", "8080", false}, // a name is not its address
		{"registry.npmjs.org", "443", true},
		{"npmjs.org", "443", false}, // *. is below the domain only
		{"evilnpmjs.org", "443", false},
		{"::1", "9", true},
		{"[::1]", "9", true},
		{"proxy.golang.org", "443", true},
	}
	for _, tt := range tests {
		is.Equal(a.Allows(tt.host, tt.port), tt.want) // tt.host:tt.port
	}
	is.Equal(a.NoProxy(), []string{"localhost"}) // 127.0.0.1 and ::1 are allowed: through the proxy
	b, _ := ParseAllow([]string{"127.0.0.1"})
	is.Equal(b.NoProxy(), []string{"localhost", "::1"})

	for _, bad := range []string{"http://example.com", "example.com:0", "example.com:http", "ex*ample.com", "*.", "a/b"} {
		_, err := ParseAllow([]string{bad})
		is.True(err != nil) // refused
		is.True(strings.Contains(err.Error(), bad))
	}
}

// upstreams are servers on the host's loopback: two allowed, one not.
type upstreams struct {
	plain, tls, other *httptest.Server
}

func newUpstreams(t *testing.T) upstreams {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s\n", r.Host) })
	u := upstreams{httptest.NewServer(hello), httptest.NewTLSServer(hello), httptest.NewServer(hello)}
	t.Cleanup(u.plain.Close)
	t.Cleanup(u.tls.Close)
	t.Cleanup(u.other.Close)
	return u
}

func hostOf(s *httptest.Server) string {
	return strings.TrimPrefix(strings.TrimPrefix(s.URL, "http://"), "https://")
}

// startProxy runs a proxy that allows u.plain and u.tls, and records
// what it refused.
func startProxy(t *testing.T, u upstreams) (*Proxy, func() []string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "px")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, err := ProxyDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	allow, err := ParseAllow([]string{hostOf(u.plain), hostOf(u.tls)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refused []string
	p, err := ListenProxy(sock, allow, func(h string) {
		mu.Lock()
		defer mu.Unlock()
		refused = append(refused, h)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(refused)
	}
}

// The proxy passes plain HTTP and CONNECT to allowed hosts, and refuses
// the rest with a 403 that names the host, counting each refusal.
// proxyGet returns a GET through p, as an agent's HTTP client in the
// sandbox makes it (the proxy's socket is all it can reach; TLS is not
// checked): the status code and body, or 0 and the error.
func proxyGet(p *Proxy) func(url string) (int, string) {
	c := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
		DialContext:     func(ctx context.Context, _, _ string) (net.Conn, error) { return net.Dial("unix", p.Socket()) },
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	return func(url string) (int, string) {
		resp, err := c.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

func TestProxy(t *testing.T) {
	is := is.New(t)
	u := newUpstreams(t)
	p, refused := startProxy(t, u)
	get := proxyGet(p)
	code, body := get(u.plain.URL + "/x")
	is.Equal(code, 200) // plain HTTP to an allowed host
	is.Equal(body, "hello from "+hostOf(u.plain)+"\n")
	code, body = get(u.tls.URL)
	is.Equal(code, 200) // CONNECT to an allowed host
	is.True(strings.HasPrefix(body, "hello"))

	code, body = get(u.other.URL)
	is.Equal(code, 403) // plain HTTP elsewhere
	is.True(strings.Contains(body, hostOf(u.other)+" is not on the sandbox's network allowlist"))
	_, body = get("https://" + hostOf(u.other))
	is.True(strings.Contains(body, "Forbidden")) // CONNECT elsewhere: the client says the tunnel failed
	is.Equal(p.Refused(), int64(2))
	is.Equal(refused(), []string{hostOf(u.other), hostOf(u.other)})

	// A raw CONNECT to a refused host gets the explanation in its body.
	conn, err := net.Dial("unix", p.Socket())
	is.NoErr(err)
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT 127.0.0.1:3306 HTTP/1.1\r\nHost: 127.0.0.1:3306\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	is.NoErr(err)
	b, _ := io.ReadAll(resp.Body)
	is.Equal(resp.StatusCode, 403)
	is.True(strings.Contains(string(b), "127.0.0.1:3306 is not on the sandbox's network allowlist"))
	is.Equal(p.Refused(), int64(3))

	// Close ends an open tunnel.
	tunnel, err := net.Dial("unix", p.Socket())
	is.NoErr(err)
	defer tunnel.Close()
	fmt.Fprintf(tunnel, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", hostOf(u.tls))
	br := bufio.NewReader(tunnel)
	resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	is.NoErr(err)
	is.Equal(resp.StatusCode, 200)
	is.NoErr(p.Close())
	_ = tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = br.ReadByte()
	is.True(err == io.EOF) // the tunnel ended with the proxy
}

// From inside a sandbox with its own network namespace, curl reaches the
// allowed hosts through the forwarder and the proxy, over HTTP and
// HTTPS; any other host gets the proxy's 403 and is counted; without
// the proxy nothing outside is reachable at all.
func TestSandboxNetThroughProxy(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	u := newUpstreams(t)
	p, refused := startProxy(t, u)
	self, _ := os.Executable()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	allow, _ := ParseAllow([]string{hostOf(u.plain), hostOf(u.tls)})
	l := BuildLayout(Project{WorkTree: root, Scratch: t.TempDir(), Getenv: os.Getenv, Keep: []string{self}})
	l.Net = &Net{Socket: p.Socket(), Forwarder: self, NoProxy: allow.NoProxy()}
	sh := func(script string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		argv := l.Args(bwrap, []string{"sh", "-c", script})
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Env = append(os.Environ(), "CURL="+curl, "NO_PROXY=127.0.0.1", "HTTPS_PROXY=http://corp:3128")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := sh(`set -e
test "$HTTPS_PROXY" = "$http_proxy"
case "$HTTPS_PROXY" in http://127.0.0.1:*) ;; *) echo "HTTPS_PROXY=$HTTPS_PROXY"; exit 1 ;; esac
test "$NO_PROXY" = localhost,::1
"$CURL" -sS ` + u.plain.URL + `/a
"$CURL" -sSk ` + u.tls.URL + `/b
"$CURL" -sS -o /dev/null -w '%{http_code}\n' ` + u.other.URL + `/c
! "$CURL" -sS --noproxy '*' --max-time 5 ` + u.plain.URL + ` 2>/dev/null
echo done`)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "hello from " + hostOf(u.plain) + "\nhello from " + hostOf(u.tls) + "\n403\ndone\n"
	if out != want {
		t.Errorf("inside the sandbox:\n%s\nwant:\n%s", out, want)
	}
	if got := refused(); !slices.Equal(got, []string{hostOf(u.other)}) || p.Refused() != 1 {
		t.Errorf("refused %v (%d), want %s once", got, p.Refused(), hostOf(u.other))
	}

	// The agent's exit status is its own: the forwarder became the agent.
	if _, err := sh("exit 7"); err == nil || err.(*exec.ExitError).ExitCode() != 7 {
		t.Errorf("exit 7 came back as %v", err)
	}
}

// A scratch dir too deep for a unix socket (a long TMPDIR) still gets a
// proxy: its socket goes in a short dir of its own.
func TestProxyDirDeep(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	sock, err := ProxyDir(deep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(sock)) })
	if len(sock) > maxSocketPath {
		t.Fatalf("socket path %q is %d bytes, more than a unix socket takes", sock, len(sock))
	}
	p, err := ListenProxy(sock, Allow{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}

// An allowed endpoint on the host's loopback is served at the same address
// inside the namespace, so a client that ignores proxy variables for
// loopback (as some agent CLIs do) reaches it directly; the proxy still
// decides, and an endpoint not allowed stays out of reach.
func TestSandboxNetPassesLoopback(t *testing.T) {
	bwrap := bwrapOrSkip(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	u := newUpstreams(t)
	p, _ := startProxy(t, u)
	self, _ := os.Executable()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	allow, _ := ParseAllow([]string{hostOf(u.plain)})
	is := is.New(t)
	is.Equal(allow.Loopback(), []string{hostOf(u.plain)}) // a loopback entry with its port is passed
	l := BuildLayout(Project{WorkTree: root, Scratch: t.TempDir(), Getenv: os.Getenv, Keep: []string{self}})
	l.Net = &Net{Socket: p.Socket(), Forwarder: self, NoProxy: allow.NoProxy(), Pass: allow.Loopback()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := l.Args(bwrap, []string{"sh", "-c", `set -e
"$CURL" -sS --noproxy '*' ` + u.plain.URL + `/a
! "$CURL" -sS --noproxy '*' --max-time 5 ` + u.other.URL + ` 2>/dev/null
echo done`})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "CURL="+curl)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := "hello from " + hostOf(u.plain) + "\ndone\n"; string(out) != want {
		t.Errorf("inside the sandbox:\n%s\nwant:\n%s", out, want)
	}
}

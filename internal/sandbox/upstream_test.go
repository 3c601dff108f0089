package sandbox

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
)

// UpstreamFromEnv follows Go's own rules for HTTPS_PROXY, HTTP_PROXY and
// NO_PROXY, in either case: tunnels take HTTPS_PROXY, plain http
// HTTP_PROXY, NO_PROXY's hosts and loopback go direct.
func TestUpstreamFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name           string
		env            map[string]string
		scheme, target string
		want           string // "" for direct
	}{
		{"none set", nil, "https", "api.anthropic.com:443", ""},
		{"https proxy", map[string]string{"HTTPS_PROXY": "http://proxy.corp:3128"}, "https", "api.anthropic.com:443", "http://proxy.corp:3128"},
		{"lower case", map[string]string{"https_proxy": "http://proxy.corp:3128"}, "https", "api.openai.com:443", "http://proxy.corp:3128"},
		{"upper case wins", map[string]string{"HTTPS_PROXY": "http://a:1", "https_proxy": "http://b:2"}, "https", "x.example:443", "http://a:1"},
		{"http proxy for plain http", map[string]string{"HTTP_PROXY": "http://p:8080", "HTTPS_PROXY": "http://q:8080"}, "http", "registry.example:80", "http://p:8080"},
		{"only http proxy: tunnels go direct", map[string]string{"HTTP_PROXY": "http://p:8080"}, "https", "x.example:443", ""},
		{"no_proxy domain", map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".internal.corp"}, "https", "git.internal.corp:443", ""},
		{"no_proxy other domain", map[string]string{"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".internal.corp"}, "https", "api.anthropic.com:443", "http://p:1"},
		{"loopback never proxied", map[string]string{"HTTPS_PROXY": "http://p:1"}, "https", "127.0.0.1:8443", ""},
		{"credentials kept", map[string]string{"HTTPS_PROXY": "http://me:secret@p:1"}, "https", "x.example:443", "http://me:secret@p:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			up := UpstreamFromEnv(func(k string) string { return tc.env[k] })
			if len(tc.env) == 0 {
				is.True(up == nil)
				return
			}
			u, err := up(tc.scheme, tc.target)
			is.NoErr(err)
			got := ""
			if u != nil {
				got = u.String()
			}
			is.Equal(got, tc.want)
		})
	}
}

// fakeCorpProxy is the proxy of a user's network: it wants credentials,
// records what it was asked for, and joins a CONNECT for any host to
// target (a server on the loopback standing in for the world).
type fakeCorpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	asked  []string
}

func newFakeCorpProxy(t *testing.T, target string) *fakeCorpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCorpProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeCorpProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.asked = append(f.asked, req.Method+" "+req.Host)
	f.mu.Unlock()
	if req.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("me:secret")) {
		fmt.Fprint(c, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
		return
	}
	if req.Method != http.MethodConnect {
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 19\r\nConnection: close\r\n\r\nvia the corp proxy\n")
		return
	}
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		fmt.Fprint(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	go func() { _, _ = io.Copy(up, br) }()
	_, _ = io.Copy(c, up)
}

func (f *fakeCorpProxy) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// Behind a user's proxy, the sandbox's proxy still decides what is
// allowed, and sends what it allows through the user's proxy, with its
// credentials: a tunnel and a plain request. What it refuses never
// reaches the user's proxy, and a refusal upstream reaches the agent.
func TestProxyChainsToUpstream(t *testing.T) {
	is := is.New(t)
	world := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello from the world") }))
	t.Cleanup(world.Close)
	corp := newFakeCorpProxy(t, strings.TrimPrefix(world.URL, "https://"))
	dir, err := os.MkdirTemp("", "px")
	is.NoErr(err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, err := ProxyDir(dir)
	is.NoErr(err)
	allow, err := ParseAllow([]string{"api.example.test", "registry.example.test:80"})
	is.NoErr(err)
	via := func(user string) Upstream {
		return UpstreamFromEnv(func(k string) string {
			switch k {
			case "HTTPS_PROXY", "HTTP_PROXY":
				return "http://" + user + "@" + corp.ln.Addr().String()
			}
			return ""
		})
	}
	p, err := ListenProxy(sock, allow, nil, via("me:secret"))
	is.NoErr(err)
	t.Cleanup(func() { p.Close() })
	get := proxyGet(p)

	code, body := get("https://api.example.test/v1")
	is.Equal(code, 200) // a tunnel, through the corp proxy to the world
	is.Equal(body, "hello from the world\n")
	code, body = get("http://registry.example.test/pkg")
	is.Equal(code, 200) // plain http, through the corp proxy
	is.Equal(body, "via the corp proxy\n")
	code, _ = get("https://elsewhere.example.test/")
	is.True(code != 200) // refused here
	is.Equal(p.Refused(), int64(1))
	is.Equal(corp.requests(), []string{"CONNECT api.example.test:443", "GET registry.example.test"})

	// Wrong credentials: the corp proxy's refusal comes back as a failed tunnel.
	sock2, err := ProxyDir(t.TempDir())
	is.NoErr(err)
	p2, err := ListenProxy(sock2, allow, nil, via("me:wrong"))
	is.NoErr(err)
	t.Cleanup(func() { p2.Close() })
	conn, err := net.Dial("unix", p2.Socket())
	is.NoErr(err)
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	is.NoErr(err)
	b, _ := io.ReadAll(resp.Body)
	is.Equal(resp.StatusCode, http.StatusBadGateway)
	is.True(strings.Contains(string(b), "407 Proxy Authentication Required"))
	is.True(!strings.Contains(string(b), "wrong")) // the password is not echoed
}

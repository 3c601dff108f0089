package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The values of the `network` setting.
const (
	NetAllowlist = "allowlist" // own network namespace; out only through the proxy, to allowed hosts
	NetOpen      = "open"      // the host's network, unfiltered
)

// NetSettings lists the values of the `network` setting, default first.
func NetSettings() []string { return []string{NetAllowlist, NetOpen} }

// dialTimeout bounds the proxy's connection to an allowed host.
const dialTimeout = 30 * time.Second

// Allow is a parsed allowlist. An entry is a host name or IP address,
// optionally with a port ("api.example.com", "127.0.0.1:8080",
// "[::1]:8080"), or "*." and a domain for every name below it
// ("*.example.com", not example.com itself). Without a port an entry
// allows ports 443 and 80 only; with one, that port only.
type Allow struct {
	rules []rule
}

type rule struct {
	host   string // lower case, no trailing dot; "*.x" for a wildcard
	port   string // "" for 443 and 80
	source string
}

// ParseAllow parses allowlist entries; empty entries are skipped.
func ParseAllow(entries []string) (Allow, error) {
	var a Allow
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		r, err := parseRule(e)
		if err != nil {
			return Allow{}, err
		}
		a.rules = append(a.rules, r)
	}
	return a, nil
}

func parseRule(e string) (rule, error) {
	bad := fmt.Errorf("%q: want a host name or address, optionally with :port (example.com, *.example.com, 127.0.0.1:8080)", e)
	if strings.ContainsAny(e, "/@ ?#") {
		return rule{}, bad
	}
	host, port := e, ""
	if h, p, err := net.SplitHostPort(e); err == nil {
		host, port = h, p
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return rule{}, fmt.Errorf("%q: port %q is not a number from 1 to 65535", e, p)
		}
	} else if strings.HasPrefix(e, "[") {
		host = strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")
	}
	host = normHost(host)
	name := strings.TrimPrefix(host, "*.")
	switch {
	case name == "":
		return rule{}, bad
	case strings.Contains(name, "*"):
		return rule{}, fmt.Errorf("%q: a wildcard goes only at the start, as *.example.com", e)
	}
	return rule{host: host, port: port, source: e}, nil
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// Allows reports whether host:port may be reached.
func (a Allow) Allows(host, port string) bool {
	host = normHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	for _, r := range a.rules {
		if r.port == "" && port != "443" && port != "80" || r.port != "" && r.port != port {
			continue
		}
		if r.host == host || strings.HasPrefix(r.host, "*.") && strings.HasSuffix(host, r.host[1:]) {
			return true
		}
	}
	return false
}

// Hosts returns the allowlist's host names and addresses.
func (a Allow) Hosts() []string {
	var hs []string
	for _, r := range a.rules {
		hs = append(hs, r.host)
	}
	return hs
}

// Loopback returns the allowed entries that name the host's loopback with
// a port (a model API in tests, a registry mirror on the host), as
// host:port. Inside the namespace the forwarder listens on each and
// tunnels it through the proxy, so a client that ignores proxy variables
// for loopback addresses (many do) still reaches it.
func (a Allow) Loopback() []string {
	var out []string
	for _, r := range a.rules {
		if r.port != "" && slices.Contains(loopback, r.host) && r.host != "localhost" {
			out = append(out, net.JoinHostPort(r.host, r.port))
		}
	}
	return out
}

// loopback are the names of the sandbox's own loopback, reached without
// the proxy unless an allowed entry names one (a model on the host's
// loopback, which only the proxy reaches).
var loopback = []string{"localhost", "127.0.0.1", "::1"}

// NoProxy returns the hosts an agent reaches directly inside its network
// namespace: the loopback names that no allowlist entry claims. Inside,
// loopback is the sandbox's own (a test server the agent starts), while
// an allowed loopback entry means the host's, through the proxy.
func (a Allow) NoProxy() []string {
	return slices.DeleteFunc(slices.Clone(loopback), func(h string) bool {
		return slices.ContainsFunc(a.rules, func(r rule) bool { return r.host == h })
	})
}

// Proxy is an HTTP proxy on a unix socket that lets a sandboxed agent
// reach the allowed hosts and nothing else: CONNECT tunnels (HTTPS and
// anything else over TCP) and plain HTTP requests with an absolute URL.
// Every other request gets 403 with a body that says why, and is counted
// and reported to OnRefused.
type Proxy struct {
	allow     Allow
	onRefused func(host string)
	refused   atomic.Int64
	ln        net.Listener
	srv       *http.Server
	rp        *httputil.ReverseProxy
	dialer    net.Dialer
	upstream  Upstream // nil: allowed hosts are dialled directly

	mu    sync.Mutex
	conns map[net.Conn]struct{} // hijacked tunnels, closed by Close
}

// ListenProxy starts a proxy on a new unix socket at socket (its dir must
// exist; a file there is replaced). onRefused, when set, is called with
// "host:port" for each refused request; it must not block. up, when not
// nil, is the proxy of the user's network that the allowed connections go
// through (UpstreamFromEnv); the allowlist is this proxy's either way.
func ListenProxy(socket string, allow Allow, onRefused func(hostport string), up Upstream) (*Proxy, error) {
	_ = os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("start the sandbox's network proxy: %w", err)
	}
	p := &Proxy{allow: allow, onRefused: onRefused, ln: ln, conns: map[net.Conn]struct{}{}, upstream: up}
	p.dialer = net.Dialer{Timeout: dialTimeout}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = r.In.URL
			r.Out.Host = r.In.Host
		},
		// Streamed answers (server-sent events from a model API) go
		// through as they come.
		FlushInterval: -1,
		Transport: &http.Transport{
			// The agent's own proxy settings point here; the user's network's
			// proxy, when there is one, is ralphd's.
			Proxy: func(r *http.Request) (*url.URL, error) {
				if p.upstream == nil {
					return nil, nil
				}
				return p.upstream("http", canonicalHostPort(r.URL))
			},
			DialContext:         p.dialer.DialContext,
			TLSHandshakeTimeout: dialTimeout,
			IdleConnTimeout:     90 * time.Second,
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Socket returns the path of the proxy's socket.
func (p *Proxy) Socket() string { return p.ln.Addr().String() }

// Refused returns how many requests the proxy refused.
func (p *Proxy) Refused() int64 { return p.refused.Load() }

// Close stops the proxy and ends every open tunnel and request.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	_ = os.Remove(p.Socket())
	return err
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port := r.Host, ""
	if r.Method != http.MethodConnect {
		if !r.URL.IsAbs() || r.URL.Scheme != "http" {
			http.Error(w, "ralphd's sandbox proxy: send an absolute http:// URL, or CONNECT for https\n", http.StatusBadRequest)
			return
		}
		host = r.URL.Host
		port = "80"
	}
	if h, pt, err := net.SplitHostPort(host); err == nil {
		host, port = h, pt
	}
	if port == "" || !p.allow.Allows(host, port) {
		p.refuse(w, net.JoinHostPort(host, port))
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, net.JoinHostPort(host, port))
		return
	}
	p.rp.ServeHTTP(w, r)
}

func (p *Proxy) refuse(w http.ResponseWriter, hostport string) {
	p.refused.Add(1)
	if p.onRefused != nil {
		p.onRefused(hostport)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "ralphd: %s is not on the sandbox's network allowlist: the agent's model API hosts and the network_allow setting (network=open lifts the allowlist)\n", hostport)
}

// tunnel joins the client to hostport after a 200.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, hostport string) {
	ctx, cancel := context.WithTimeout(r.Context(), dialTimeout)
	up, err := p.dial(ctx, hostport)
	cancel()
	if err != nil {
		http.Error(w, "ralphd's sandbox proxy: "+err.Error()+"\n", http.StatusBadGateway)
		return
	}
	down, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !p.track(down, up) {
		return
	}
	defer p.untrack(down, up)
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	// Bytes the client sent right after its CONNECT are in buf.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	join(down, up)
}

// dial connects to hostport, through the upstream proxy when there is one
// for it.
func (p *Proxy) dial(ctx context.Context, hostport string) (net.Conn, error) {
	if p.upstream != nil {
		u, err := p.upstream("https", hostport)
		if err != nil {
			return nil, err
		}
		if u != nil {
			return dialVia(ctx, &p.dialer, u, hostport)
		}
	}
	return p.dialer.DialContext(ctx, "tcp", hostport)
}

// canonicalHostPort is u's host with its port, 80 by default (plain http).
func canonicalHostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// track records open tunnel ends so Close can end them; it reports false
// (and closes them) once the proxy is closed.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.conns, c)
	}
}

// ProxyDir makes a dir for a proxy's socket in dir, and returns the
// socket's path: the sandbox binds the dir read-only, so the agent can
// neither remove the socket nor put its own in its place. A unix socket's
// path is limited to about 100 bytes: when dir is too deep, the dir goes
// in the temp dir, or in /tmp. The caller removes the socket's dir when
// done.
func ProxyDir(dir string) (string, error) {
	if d := filepath.Join(dir, "net"); len(d)+len("/proxy.sock") <= maxSocketPath {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("make the proxy's dir: %w", err)
		}
		return filepath.Join(d, "proxy.sock"), nil
	}
	for _, p := range []string{os.TempDir(), "/tmp"} {
		if len(p)+len("/ralphd-net-0123456789/proxy.sock") > maxSocketPath {
			continue
		}
		d, err := os.MkdirTemp(p, "ralphd-net-")
		if err != nil {
			return "", fmt.Errorf("make the proxy's dir: %w", err)
		}
		return filepath.Join(d, "proxy.sock"), nil
	}
	return "", fmt.Errorf("make the proxy's dir: no directory with a path short enough for a unix socket (%s)", dir)
}

// maxSocketPath is the longest socket path used (sun_path holds 108 bytes
// with its terminating NUL).
const maxSocketPath = 104

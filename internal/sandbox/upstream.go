package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// Upstream says which proxy, if any, ralphd's own connections to
// scheme://hostport must go through: the proxy of the user's network
// (a company's, say), which the sandbox's proxy then chains to. It
// returns nil to dial directly.
type Upstream func(scheme, hostport string) (*url.URL, error)

// UpstreamFromEnv is the Upstream of ralphd's own environment: HTTPS_PROXY
// for tunnels (CONNECT, which is how the agents reach their model APIs),
// HTTP_PROXY for plain http, NO_PROXY's exceptions, each in either case,
// with the rules Go's own HTTP client follows (loopback is never
// proxied). It is nil when neither proxy is set.
func UpstreamFromEnv(getenv func(string) string) Upstream {
	either := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return getenv(strings.ToLower(k))
	}
	cfg := httpproxy.Config{HTTPProxy: either("HTTP_PROXY"), HTTPSProxy: either("HTTPS_PROXY"), NoProxy: either("NO_PROXY")}
	if cfg.HTTPProxy == "" && cfg.HTTPSProxy == "" {
		return nil
	}
	proxyFor := cfg.ProxyFunc()
	return func(scheme, hostport string) (*url.URL, error) {
		u, err := proxyFor(&url.URL{Scheme: scheme, Host: hostport})
		if err != nil {
			return nil, fmt.Errorf("the proxy ralphd is to go through (%s_PROXY): %w", strings.ToUpper(scheme), err)
		}
		return u, nil
	}
}

// dialVia opens a tunnel to hostport through the proxy at u (http or
// https): a CONNECT, with u's user and password as basic credentials.
func dialVia(ctx context.Context, d *net.Dialer, u *url.URL, hostport string) (net.Conn, error) {
	addr := u.Host
	if u.Port() == "" {
		switch u.Scheme {
		case "https":
			addr = net.JoinHostPort(u.Hostname(), "443")
		default:
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("reach the upstream proxy %s: %w", u.Redacted(), err)
	}
	if u.Scheme == "https" {
		tc := tls.Client(c, &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("reach the upstream proxy %s: %w", u.Redacted(), err)
		}
		c = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: hostport}, Host: hostport, Header: http.Header{}}
	if u.User != nil {
		pw, _ := u.User.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)))
	}
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("ask the upstream proxy %s for %s: %w", u.Redacted(), hostport, err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("ask the upstream proxy %s for %s: %w", u.Redacted(), hostport, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("the upstream proxy %s refused %s: %s", u.Redacted(), hostport, resp.Status)
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() == 0 {
		return c, nil
	}
	return &bufConn{Conn: c, r: br}, nil
}

// bufConn is a connection whose first bytes were read into r.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the connection when it can (join uses it).
func (b *bufConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return b.Conn.Close()
}

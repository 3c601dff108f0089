// Package dashboard serves ralphd's web dashboard: what runs now (live,
// through server-sent events), the issue graph laid out by Graphviz, the
// runs with their logs and reports, each issue's attempts, and the cost
// over time. Pages are plain HTML from templates embedded in the binary;
// they work without JavaScript except for the live updates.
//
// Everything shown comes from what ralphd already records: the state dir
// (history, run logs, reports) and the tracker. Agent output and tracker
// text are untrusted: templates escape them, graph labels are reduced to a
// safe alphabet, and a strict Content-Security-Policy forbids inline
// scripts, so a <script> in an agent's stream stays text.
//
// Security rules (see [CheckBind] and [Server.Handler]): the dashboard binds
// to loopback unless a token is set; when a token is set every request
// needs it (bearer header, or ?token= once, which sets a cookie); on a
// loopback bind without a token only loopback Host names are served, which
// stops DNS rebinding. It is read-only, except for the control actions a
// daemon offers when a token is set (see [Control]): POST only, the token
// even on loopback, and for a browser a same-origin form with a CSRF value.
package dashboard

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/charmbracelet/log"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Sources are where the dashboard reads from. Every function may be nil.
type Sources struct {
	History    func() ([]state.Record, error)
	Issues     func(ctx context.Context) ([]beads.Issue, error) // every issue, closed included
	Attempt    func(id string) (int, error)
	LogsDir    string
	ReportsDir string
	StuckLabel string
	MaxStuck   int
	// Fleet is who plans on a tracker the daemon shares with others (fleet
	// planning), as the daemon last saw it; nil when there is no such
	// daemon.
	Fleet func() *state.FleetStatus
}

// Options configure a Server.
type Options struct {
	Sources Sources
	// Live: a daemon feeds the server events (Observe); false for `ralphd
	// serve`, which reads only what is recorded.
	Live bool
	// Workers is how many workers the "now" panel shows (at least one).
	Workers int
	// Token, when set, is required on every request.
	Token string
	// Control, with Token set, offers the control actions (pause, resume,
	// reset an issue); nil keeps the dashboard read-only.
	Control Control
	// Metrics serves /metrics when set.
	Metrics http.Handler
	// Dot is the Graphviz dot executable: "" looks it up on PATH, "none"
	// forces the list fallback.
	Dot string
	// Project names the project in the page titles.
	Project string
	// Log receives errors; nil discards them.
	Log *log.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// KeepAlive is the interval of SSE keep-alive comments; 0 means 60s.
	KeepAlive time.Duration
}

// Server is the dashboard. It is an logjsonl.Sink: a daemon hands it the
// loop's events for the "now" panel.
type Server struct {
	opts  Options
	live  *live
	graph *renderer
	tmpl  *template.Template
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = log.New(discard{})
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 60 * time.Second
	}
	if opts.Sources.StuckLabel == "" {
		opts.Sources.StuckLabel = "ralph:stuck"
	}
	t, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard templates: %w", err)
	}
	return &Server{opts: opts, live: newLive(opts.Live, opts.Workers, opts.Now), graph: newRenderer(opts.Dot), tmpl: t}, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Observe feeds the "now" panel one loop event. It never blocks.
func (s *Server) Observe(ev logjsonl.Event) { s.live.Observe(ev) }

// HasDot reports whether graphs are laid out by Graphviz (else listed).
func (s *Server) HasDot() bool { return s.graph.dot != "" }

// Handler returns the dashboard's routes behind its security checks.
// loopback says whether the listener is bound to loopback only.
func (s *Server) Handler(loopback bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /now", s.nowFragment)
	mux.HandleFunc("GET /graph", s.graphFragment)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /runs", s.runs)
	mux.HandleFunc("GET /logs/{name}", s.runLog)
	mux.HandleFunc("GET /reports/{name}", s.report)
	mux.HandleFunc("GET /issue/{id}", s.issue)
	mux.HandleFunc("GET /cost", s.cost)
	if s.controlsOn() {
		mux.HandleFunc("POST /control/pause", s.pause)
		mux.HandleFunc("POST /control/resume", s.resume)
		mux.HandleFunc("POST /control/reset/{id}", s.reset)
	}
	sub, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", s.opts.Metrics)
	}
	return s.guard(loopback, mux)
}

// cookieName holds the token after a ?token= visit.
const cookieName = "ralphd_token"

// guard applies the security headers, the Host check and the token rule.
func (s *Server) guard(loopback bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Only the control actions change anything, under their own
			// rules (token even on loopback, CSRF).
			if s.controlAllowed(w, r) {
				next.ServeHTTP(w, r)
			}
			return
		}
		if s.opts.Token == "" {
			if !loopback || !loopbackHost(r.Host) {
				http.Error(w, "this dashboard answers only to a loopback host name (localhost, 127.0.0.1, [::1])", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" {
			if !s.tokenOK(q) {
				http.Error(w, "wrong token", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			u := *r.URL
			qs := u.Query()
			qs.Del("token")
			u.RawQuery = qs.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if !s.authorized(r) {
			h.Set("WWW-Authenticate", `Bearer realm="ralphd"`)
			http.Error(w, "this dashboard needs its token: send Authorization: Bearer <http_token>, or open it once with ?token=<http_token>", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

func (s *Server) authorized(r *http.Request) bool {
	if a := r.Header.Get("Authorization"); a != "" {
		tok, ok := strings.CutPrefix(a, "Bearer ")
		return ok && s.tokenOK(tok)
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return s.tokenOK(c.Value)
	}
	return false
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrNeedToken is returned by CheckBind for a non-loopback address without
// a token.
var ErrNeedToken = errors.New("refusing to serve the dashboard on a non-loopback address without http_token")

// CheckBind validates a listen address against the token rule and reports
// whether it is loopback only. "localhost" counts as loopback; an empty
// host (":7777") means every interface, which does not.
func CheckBind(addr, token string) (loopback bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("http address %q: %w (want host:port, e.g. 127.0.0.1:7777)", addr, err)
	}
	loopback = strings.EqualFold(host, "localhost")
	if ip := net.ParseIP(host); ip != nil {
		loopback = ip.IsLoopback()
	}
	if !loopback && token == "" {
		return false, fmt.Errorf("%w: %s is reachable from other machines; set http_token (RALPH_HTTP_TOKEN) or bind 127.0.0.1", ErrNeedToken, addr)
	}
	return loopback, nil
}

// Serve listens on addr and serves the dashboard until ctx ends. ready, when
// set, receives the bound address (useful with port 0).
func (s *Server) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	loopback, err := CheckBind(addr, s.opts.Token)
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	srv := &http.Server{
		Handler:           s.Handler(loopback),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("dashboard: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	}
}

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"

	"github.com/charmbracelet/log"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/dashboard"
	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/internal/state"
)

func cmdServe(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "serve", "serve [--http ADDR] [flags]", `
Serve the dashboard read-only from the state dir and the tracker, with no
daemon running: past runs, their logs and reports, the issue graph and the
cost over time. It binds 127.0.0.1:7777 unless --http (config key http)
says otherwise; a non-loopback address needs http_token. It stops on
SIGINT or SIGTERM.`)
	config.BindFlags(fs, "http", "http_token", "bd", "max_stuck")
	// The key's own help is the daemon's; serve has a default address and
	// no /metrics (the counters are a running daemon's).
	fs.Lookup("http").Usage = "serve the dashboard on this address (empty: 127.0.0.1:7777) [env RALPH_HTTP]"
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(a, fs, "unexpected arguments: %q", pos)
	}
	if code, stop := a.parsedOnly(fs); stop {
		return code
	}
	// Read only: find the project's state dir without state.Open, which
	// creates directories and writes metadata.
	id, err := identify(ctx, "")
	if err != nil {
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "run ralphd inside a git repository that uses beads (git init && bd init)")
		return exitUsage
	}
	cfg, err := loadConfig(a, id.TopLevel, fs)
	if err != nil {
		return reportErr(a, err)
	}
	addr := cfg.HTTP
	if addr == "" {
		addr = "127.0.0.1:7777"
	}
	bd, err := beads.NewClient(cfg.BD, id.TopLevel)
	if err != nil {
		return reportErr(a, err)
	}
	root, err := filepath.Abs(stateRoot(a))
	if err != nil {
		return reportErr(a, err)
	}
	dir := state.ProjectDir(root, id.ID)
	src := dashboard.Sources{
		History: func() ([]state.Record, error) {
			recs, _, err := state.ReadHistory(filepath.Join(dir, state.HistoryFile))
			return recs, err
		},
		Issues: func(ctx context.Context) ([]beads.Issue, error) { return bd.List(ctx, beads.ListOptions{All: true}) },
		Attempt: func(issue string) (int, error) {
			st, err := state.ReadStatus(root, id, cfg.MaxStuck)
			if err != nil {
				return 0, err
			}
			for _, at := range st.Attempts {
				if at.IssueID == issue {
					return at.Count, nil
				}
			}
			return 0, nil
		},
		LogsDir:    filepath.Join(dir, state.LogsDirName),
		ReportsDir: filepath.Join(dir, state.ReportsDirName),
		StuckLabel: modes.StuckLabel,
		MaxStuck:   cfg.MaxStuck,
		Fleet: func() *state.FleetStatus {
			st, err := state.ReadStatus(root, id, cfg.MaxStuck)
			if err != nil {
				return nil
			}
			return st.Fleet
		},
	}
	srv, err := dashboard.New(dashboard.Options{Sources: src, Token: cfg.HTTPToken, Project: filepath.Base(id.TopLevel), Log: humanLogger(a)})
	if err != nil {
		return reportErr(a, err)
	}
	return serveDashboard(ctx, a, srv, addr, cfg.HTTPToken)
}

// serveDashboard serves srv on addr until ctx ends, after checking the
// token rule.
func serveDashboard(ctx context.Context, a *app, srv *dashboard.Server, addr, token string) int {
	if _, err := dashboard.CheckBind(addr, token); err != nil {
		errorf(a.stderr, "%v", err)
		return exitUsage
	}
	if !srv.HasDot() {
		warnf(a.stderr, "Graphviz dot is not installed: the dashboard lists the issues instead of drawing the graph (Debian: apt-get install graphviz)")
	}
	err := srv.Serve(ctx, addr, func(at net.Addr) {
		fmt.Fprintf(a.stderr, "dashboard: http://%s/\n", at)
	})
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitError
	}
	return exitOK
}

// dashboardSources reads the project's state dir and tracker.
func dashboardSources(p *project, bd *beads.Client) dashboard.Sources {
	return dashboard.Sources{
		History:    p.store.History,
		Issues:     func(ctx context.Context) ([]beads.Issue, error) { return bd.List(ctx, beads.ListOptions{All: true}) },
		Attempt:    p.store.Attempt,
		LogsDir:    p.store.LogsDir(),
		ReportsDir: p.store.ReportsDir(),
		StuckLabel: modes.StuckLabel,
		MaxStuck:   p.cfg.MaxStuck,
		Fleet: func() *state.FleetStatus {
			f, _ := p.store.Fleet()
			return f
		},
	}
}

// daemonControl is the dashboard's control of a running daemon: pause and
// resume (the daemon holds before its next pass, never mid-iteration), and
// reset an issue as `ralphd reset ID` does.
type daemonControl struct {
	store   *state.Store
	bd      *beads.Client
	metrics *dashboard.Metrics
	log     *log.Logger

	mu     sync.Mutex
	paused bool
	wake   chan struct{} // closed on resume
	poke   chan struct{} // ends an idle wait after a reset
}

func newDaemonControl(store *state.Store, bd *beads.Client, m *dashboard.Metrics, l *log.Logger) *daemonControl {
	return &daemonControl{store: store, bd: bd, metrics: m, log: l, wake: make(chan struct{}), poke: make(chan struct{}, 1)}
}

// Pause makes the daemon hold before its next pass.
func (c *daemonControl) Pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		c.paused = true
		c.wake = make(chan struct{})
		c.metrics.SetDaemonState("paused")
		c.log.Warn("paused from the dashboard; resume there, or restart")
	}
}

// Resume lets a held daemon go on.
func (c *daemonControl) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		c.paused = false
		close(c.wake)
		c.log.Info("resumed from the dashboard")
	}
}

// Paused reports whether the daemon is paused.
func (c *daemonControl) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Hold returns once the daemon is not paused, or ctx ends.
func (c *daemonControl) Hold(ctx context.Context) error {
	c.mu.Lock()
	paused, wake := c.paused, c.wake
	c.mu.Unlock()
	if !paused {
		return nil
	}
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reset clears the issue's attempt record and removes its stuck label.
func (c *daemonControl) Reset(ctx context.Context, id string) error {
	if _, err := c.store.Reset(id); err != nil {
		return fmt.Errorf("reset %s: %w", id, err)
	}
	if err := c.bd.LabelRemove(ctx, id, modes.StuckLabel); err != nil {
		return fmt.Errorf("remove %s from %s: %w", modes.StuckLabel, id, err)
	}
	select { // an idle daemon looks again now
	case c.poke <- struct{}{}:
	default:
	}
	return nil
}

// startDashboard serves the dashboard and /metrics from the daemon when
// the http key is set, fed by the loop's events. With http_token set it
// also offers the control actions, whose pause opts.Hold applies. It
// returns a function that waits for the server to stop after ctx ends.
func (ls *loopSetup) startDashboard(ctx context.Context, a *app, opts *modes.DaemonOptions) (wait func(), code int) {
	cfg := ls.loop.Config
	if cfg.HTTP == "" {
		return func() {}, exitOK
	}
	if _, err := dashboard.CheckBind(cfg.HTTP, cfg.HTTPToken); err != nil {
		errorf(a.stderr, "%v", err)
		return nil, exitUsage
	}
	m := dashboard.NewMetrics(1)
	ls.loop.BD.OnCall = m.BDCall
	// The dashboard offers the controls only with a token, and refuses
	// them (403) without one.
	control := newDaemonControl(ls.p.store, ls.loop.BD, m, ls.loop.Human)
	opts.Hold, opts.Paused, opts.Wake = control.Hold, control.Paused, control.poke
	srv, err := dashboard.New(dashboard.Options{
		Sources: dashboardSources(ls.p, ls.loop.BD), Live: true, Workers: 1, Token: cfg.HTTPToken,
		Metrics: m.Handler(), Project: filepath.Base(ls.p.dir), Log: ls.loop.Human, Control: control,
	})
	if err != nil {
		return nil, reportErr(a, err)
	}
	ls.addSink(m)
	ls.addSink(srv)
	if !srv.HasDot() {
		ls.loop.Human.Warn("Graphviz dot is not installed: the dashboard lists the issues instead of drawing the graph (Debian: apt-get install graphviz)")
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	bound := make(chan error, 1)
	go func() {
		defer close(done)
		err := srv.Serve(sctx, cfg.HTTP, func(at net.Addr) {
			ls.loop.Human.Info("dashboard", "url", fmt.Sprintf("http://%s/", at))
			bound <- nil
		})
		if err != nil {
			bound <- err
		}
	}()
	if err := <-bound; err != nil {
		stop()
		errorf(a.stderr, "%v", err)
		return nil, exitError
	}
	return func() {
		m.SetDaemonState("stopped")
		stop()
		<-done
	}, exitOK
}

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/dashboard"
	"github.com/ralphd/ralphd/internal/metrics"
	"github.com/ralphd/ralphd/internal/modes"
)

func cmdServe(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "serve", "serve [--http ADDR] [flags]", `
Serve the dashboard read-only from the state dir and the tracker, with no
daemon running: past runs, their logs and reports, the issue graph and the
cost over time. It binds 127.0.0.1:7777 unless --http (config key http)
says otherwise; a non-loopback address needs http_token. It stops on
SIGINT or SIGTERM.`)
	config.BindFlags(fs, "http", "http_token", "bd", "max_stuck")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(a, fs, "unexpected arguments: %q", pos)
	}
	p, code := openProject(ctx, a, fs, "")
	if p == nil {
		return code
	}
	addr := p.cfg.HTTP
	if addr == "" {
		addr = "127.0.0.1:7777"
	}
	bd, err := beads.NewClient(p.cfg.BD, p.dir)
	if err != nil {
		return reportErr(a, err)
	}
	srv, err := dashboard.New(dashboard.Options{
		Sources: dashboardSources(p, bd), Token: p.cfg.HTTPToken, Project: filepath.Base(p.dir), Log: humanLogger(a),
	})
	if err != nil {
		return reportErr(a, err)
	}
	return serveDashboard(ctx, a, srv, addr, p.cfg.HTTPToken)
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
	}
}

// startDashboard serves the dashboard and /metrics from the daemon when
// the http key is set, fed by the loop's events. It returns a function that
// waits for the server to stop after ctx ends.
func (ls *loopSetup) startDashboard(ctx context.Context, a *app) (wait func(), code int) {
	cfg := ls.loop.Config
	if cfg.HTTP == "" {
		return func() {}, exitOK
	}
	if _, err := dashboard.CheckBind(cfg.HTTP, cfg.HTTPToken); err != nil {
		errorf(a.stderr, "%v", err)
		return nil, exitUsage
	}
	m := metrics.New(1)
	ls.loop.BD.OnCall = m.BDCall
	srv, err := dashboard.New(dashboard.Options{
		Sources: dashboardSources(ls.p, ls.loop.BD), Live: true, Workers: 1, Token: cfg.HTTPToken,
		Metrics: m.Handler(), Project: filepath.Base(ls.p.dir), Log: ls.loop.Human,
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

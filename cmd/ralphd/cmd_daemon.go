package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/prompts"
)

func cmdDaemon(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "daemon", "daemon [flags]", `
Run unattended: alternate PLANNING and BUILD, and sleep on .beads/ changes
while there is nothing to do. It plans when an issue became stuck, every
--plan-every BUILD iterations, and when nothing is ready while open issues
remain and the graph changed; it builds in batches of --build-batch.

SIGTERM or SIGINT stops it cleanly (exit 0): the running agent gets SIGTERM,
then SIGKILL after --stop-grace, and its iteration is recorded as
interrupted. A second SIGINT stops at once. SIGHUP reloads the
configuration and prompts before the next iteration. Under systemd it
speaks the notify protocol (READY, STATUS, WATCHDOG, STOPPING); see
'ralphd service'.`)
	config.BindFlags(fs)
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
	notify := newSDNotifier(a.getenv)
	ls, code := setupLoop(ctx, a, fs, "daemon")
	if ls == nil {
		return code
	}
	defer ls.close()
	var opts modes.DaemonOptions
	waitHTTP, code := ls.startDashboard(ctx, a, &opts)
	if waitHTTP == nil {
		return code
	}
	defer waitHTTP()
	loop := ls.loop
	if _, err := loop.Sweep(ctx); err != nil {
		return loopExit(a, err)
	}
	loop.OnStatus = func(s string) { _ = notify.Status(s) }

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()

	opts.Reload = reload
	opts.ReloadFunc = func(l *modes.Loop) error { return reloadLoop(a, fs, l) }
	if loop.Config.Log { // one log per batch, so retention applies to a long-lived daemon
		opts.NewLog = func(runID string) (*logjsonl.Writer, error) {
			return logjsonl.CreateRun(ls.p.store.LogsDir(), runID, loop.Config.LogRetention, logjsonl.Options{Redact: ls.redact.Lines})
		}
	}
	wctx, stopWatchdog := context.WithCancel(context.Background())
	defer stopWatchdog()
	// READY first, then the watchdog's pings: systemd reads them in order.
	if err := notify.Ready(); err != nil {
		loop.Human.Warn("systemd notify failed", "err", err)
	}
	go notify.RunWatchdog(wctx, func(err error) { loop.Human.Warn("systemd watchdog ping failed", "err", err) })
	loop.Human.Info("daemon started", "project", ls.p.dir, "agent", loop.Backend.Name(), "pid", os.Getpid())
	err := loop.Daemon(ctx, opts)
	_ = notify.Stopping()
	loop.Human.Info("daemon stopped")
	return loopExit(a, err)
}

// reloadLoop re-reads the configuration (files and environment; the
// command-line flags still win) and the prompts into l.
func reloadLoop(a *app, fs *flag.FlagSet, l *modes.Loop) error {
	cfg, err := loadConfig(a, l.Dir, fs)
	if err != nil {
		return fmt.Errorf("reload config: %w", err)
	}
	dir := cfg.PromptDir
	if dir == "" {
		dir = filepath.Join(l.Dir, ".ralph")
	}
	ps, err := prompts.Load(dir)
	if err != nil {
		return fmt.Errorf("reload prompts: %w", err)
	}
	l.Config, l.Prompts = cfg, ps
	return nil
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/notify"
)

func cmdNotify(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "notify", "notify test [flags]", `
Send one sample of each notification to notify_cmd and notify_url, now,
and say which deliveries failed. notify_events selects which samples are
sent, as it selects the real events.`)
	config.BindFlags(fs, "notify_cmd", "notify_url", "notify_format", "notify_events", "notify_timeout")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) != 1 || pos[0] != "test" {
		return usageErrorf(a, fs, "want: ralphd notify test")
	}
	if code, stop := a.parsedOnly(fs); stop {
		return code
	}
	dir := ""
	if id, err := identify(ctx, ""); err == nil {
		dir = id.TopLevel
	}
	cfg, err := loadConfig(a, dir, fs)
	if err != nil {
		return reportErr(a, err)
	}
	n, err := newNotifier(a, cfg, dir, "test")
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitUsage
	}
	if !n.Enabled() {
		errorf(a.stderr, "nothing to notify: set notify_cmd or notify_url")
		return exitUsage
	}
	defer n.Close(context.Background())
	kinds, _ := notify.ParseKinds(cfg.NotifyEvents)
	failed := 0
	for _, e := range notify.Samples(time.Now()) {
		if !contains(kinds, e.Kind) {
			continue
		}
		if err := n.Send(ctx, e); err != nil {
			failed++
			fmt.Fprintf(a.stdout, "%-15s FAILED: %v\n", e.Kind, err)
			continue
		}
		fmt.Fprintf(a.stdout, "%-15s sent\n", e.Kind)
	}
	if failed > 0 {
		return exitError
	}
	return exitOK
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// newNotifier builds the notifier the configuration asks for (possibly one
// with nothing to deliver to).
func newNotifier(a *app, cfg *config.Config, dir, project string) (*notify.Notifier, error) {
	kinds, err := notify.ParseKinds(cfg.NotifyEvents)
	if err != nil {
		return nil, &config.Error{Source: cfg.Source("notify_events"), Key: "notify_events", Msg: err.Error()}
	}
	return notify.New(notify.Config{
		Cmd: cfg.NotifyCmd, URL: cfg.NotifyURL, Format: cfg.NotifyFormat, Kinds: kinds,
		Timeout: cfg.NotifyTimeout, Project: project, Dir: dir, Env: a.env, Log: humanLogger(a),
	}), nil
}

// addSink makes the loop hand its events to s as well.
func (ls *loopSetup) addSink(s logjsonl.Sink) {
	ls.sinks = append(ls.sinks, s)
	ls.loop.Observer = logjsonl.Fanout(ls.sinks)
}

// startNotifier hands the loop's events to notify_cmd and notify_url when
// either is set. On exit, queued notifications get up to notify_timeout to
// go out.
func (ls *loopSetup) startNotifier(a *app) int {
	cfg := ls.loop.Config
	if cfg.NotifyCmd == "" && cfg.NotifyURL == "" {
		return exitOK
	}
	n, err := newNotifier(a, cfg, ls.p.dir, filepath.Base(ls.p.dir))
	if err != nil {
		return reportErr(a, err)
	}
	ls.addSink(n)
	ls.closer = append(ls.closer, func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.NotifyTimeout+time.Second)
		defer cancel()
		n.Close(ctx)
	})
	return exitOK
}

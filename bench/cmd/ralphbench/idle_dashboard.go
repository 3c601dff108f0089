package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/ralphd/ralphd/bench"
)

// idleDashboard is what figure 4f measured: an idle daemon serving the
// dashboard with one open server-sent-events client.
type idleDashboard struct {
	Window  time.Duration
	CPU     time.Duration // the daemon's CPU over the window (schedstat)
	Events  int           // SSE messages the client received during the window
	Command string
}

var dashboardURL = regexp.MustCompile(`dashboard url=(http://127\.0\.0\.1:[0-9]+/)`)

// measureIdleDashboard runs a daemon with --http on an empty tracker,
// opens the dashboard's event stream once it is idle, and measures the
// daemon's CPU over window while the stream stays open.
func measureIdleDashboard(ctx context.Context, e *benchEnv, window time.Duration, say func(string, ...any)) (*idleDashboard, error) {
	dir := filepath.Join(e.work, "idle-dashboard")
	if err := e.makeProject(ctx, dir, 0); err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.work, "daemon-dashboard.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create daemon log: %w", err)
	}
	defer logf.Close()
	args := []string{"daemon", "--bd", e.bd(), "--agent-cmd", agentCmd, "--poll", "60s", "--http", "127.0.0.1:0"}
	res := &idleDashboard{Window: window, Command: "ralphd daemon --agent-cmd ... --poll 60s --http 127.0.0.1:0   # and one client on /events"}
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := command(dctx, e.env(), dir, e.ralphd(), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	say("starting ralphd daemon --http on an empty tracker")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cancel()
			<-exited
		}
	}()
	var base string
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(logPath)
		if m := dashboardURL.FindStringSubmatch(string(b)); m != nil && strings.Contains(string(b), "idle: ") {
			base = m[1]
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the daemon never served the dashboard and went idle:\n%s", tail(string(b), 2000))
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("the daemon exited: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	req, err := http.NewRequestWithContext(dctx, "GET", base+"events", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("open the event stream: %w", err)
	}
	defer resp.Body.Close()
	events := make(chan struct{}, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: ") {
				events <- struct{}{}
			}
		}
	}()
	select {
	case <-events: // the stream's first message, the panel as it is
	case <-time.After(30 * time.Second):
		return nil, errors.New("no first message on the event stream")
	}
	time.Sleep(2 * time.Second)
	say("measuring the idle daemon with one dashboard client for %s", window)
	t0, err := bench.ReadThreads(pid)
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t1, err := bench.ReadThreads(pid)
	if err != nil {
		return nil, err
	}
	res.CPU = t1.CPU - t0.CPU
	res.Events = len(events)
	return res, nil
}

// idleDashboardFigure is figure 4f, against 4a's idle daemon of the same
// run as the baseline.
func idleDashboardFigure(id *idleResult) bench.Figure {
	d := id.Dashboard
	perHour := d.CPU.Seconds() * float64(time.Hour) / float64(d.Window)
	base := id.CPU.Seconds() * float64(time.Hour) / float64(id.Window)
	ratio := "-"
	if base > 0 {
		ratio = fmt.Sprintf("%.2f×", perHour/base)
	}
	return bench.Figure{
		ID:      "4f",
		Name:    "CPU seconds per idle hour serving the dashboard with one open SSE client (÷ 4a's idle daemon)",
		Value:   fmt.Sprintf("%.3f s (%s over %s, scaled; %s of 4a; %d stream messages)", perHour, fmtDur(d.CPU), d.Window, ratio, d.Events),
		Goal:    "< 1 s",
		Verdict: bench.Judge(perHour < 1),
		Command: d.Command + "\n# sum of /proc/<pid>/task/*/schedstat over the window",
	}
}

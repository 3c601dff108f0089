package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// grace is the time between SIGTERM and SIGKILL for a notify_cmd that
// outlives its timeout.
const grace = 2 * time.Second

// runCmd runs notify_cmd with body on stdin, under the timeout, in its own
// process group.
func (n *Notifier) runCmd(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	cmd := proc.Command(ctx, grace, "sh", "-c", n.cfg.Cmd)
	cmd.Dir, cmd.Env = n.cfg.Dir, n.cfg.Env
	cmd.Stdin = bytes.NewReader(append(body, '\n'))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	proc.KillGroup(cmd)
	if ctx.Err() != nil {
		return fmt.Errorf("notify_cmd: no exit within %s; killed", n.cfg.Timeout)
	}
	if err != nil {
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			return fmt.Errorf("notify_cmd exited %d: %s", xe.ExitCode(), tail(out.String()))
		}
		return fmt.Errorf("notify_cmd: %w", err)
	}
	return nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = "…" + s[len(s)-300:]
	}
	return s
}

// Format returns the body format for the URL: format itself unless it is
// "auto" or empty, then text for an ntfy topic and json otherwise.
func Format(format, rawURL string) string {
	if format != "" && format != "auto" {
		return format
	}
	if u, err := url.Parse(rawURL); err == nil && strings.Contains(u.Hostname(), "ntfy") {
		return "text"
	}
	return "json"
}

// request builds the POST for e in the configured format.
func (n *Notifier) request(ctx context.Context, e Event, body []byte) (*http.Request, error) {
	ctype := "application/json"
	switch Format(n.cfg.Format, n.cfg.URL) {
	case "text":
		ctype = "text/plain; charset=utf-8"
		text := e.Summary
		if e.Detail != "" {
			text += "\n\n" + e.Detail
		}
		body = []byte(text)
	case "slack":
		text := "*" + e.Title() + "*: " + e.Summary
		if e.Detail != "" {
			text += "\n" + e.Detail
		}
		b, err := json.Marshal(map[string]string{"text": text})
		if err != nil {
			return nil, err
		}
		body = b
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("notify_url: %w", err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "ralphd")
	// ntfy reads these; other servers ignore them.
	req.Header.Set("Title", e.Title())
	req.Header.Set("Tags", e.Kind)
	return req, nil
}

// post sends e to notify_url, trying again after a network error, a 5xx or
// a 429, with a doubling wait between tries.
func (n *Notifier) post(ctx context.Context, e Event, body []byte) error {
	wait := n.cfg.Backoff
	var last error
	for try := 0; try <= n.cfg.Retries; try++ {
		if try > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("notify_url: gave up: %w (last: %v)", ctx.Err(), last)
			case <-t.C:
			}
			wait *= 2
		}
		retry, err := n.postOnce(ctx, e, body)
		if err == nil {
			return nil
		}
		last = err
		if !retry {
			return err
		}
	}
	return fmt.Errorf("notify_url: gave up after %d tries: %w", n.cfg.Retries+1, last)
}

func (n *Notifier) postOnce(ctx context.Context, e Event, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	req, err := n.request(ctx, e, body)
	if err != nil {
		return false, err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return true, fmt.Errorf("notify_url: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("notify_url: %s: %s", resp.Status, tail(string(msg)))
	return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests, err
}

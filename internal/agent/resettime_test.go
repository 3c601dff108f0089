package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestQuotaWait: an exact reset costs its distance plus a few seconds, a
// reset read from minute-rounded text a minute more and never less than a
// minute. A 3-second limit used to cost 62 seconds.
func TestQuotaWait(t *testing.T) {
	now := time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		reset   time.Time
		rounded bool
		want    time.Duration
	}{
		{"exact, 3s away", now.Add(3 * time.Second), false, 6 * time.Second},
		{"exact, an hour away", now.Add(time.Hour), false, time.Hour + 3*time.Second},
		{"exact, already past", now.Add(-time.Minute), false, 3 * time.Second},
		{"exact, now", now, false, 3 * time.Second},
		{"rounded, 3s away", now.Add(3 * time.Second), true, 63 * time.Second},
		{"rounded, an hour away", now.Add(time.Hour), true, time.Hour + time.Minute},
		{"rounded, already past", now.Add(-time.Hour), true, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(QuotaWait(now, tt.reset, tt.rounded), tt.want)
		})
	}
}

// TestResetPrecision: which texts give a reset exactly and which to the
// minute, end to end through the Claude parser and the shared one.
func TestResetPrecision(t *testing.T) {
	tests := []struct {
		text    string
		rounded bool
	}{
		{"Claude AI usage limit reached|1795366800", false},
		{"You've hit your limit · resets 3pm (UTC)", true},
		{"resets Nov 22, 3pm (UTC)", true},
		{"try again in 4 days 20 hours", true},
		{"retry in 30s", false},
		{"resets in 2h 5m 10s", false},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			is := is.New(t)
			_, rounded, ok := parseResetText(tt.text, fixedNow)
			is.True(ok)
			is.Equal(rounded, tt.rounded)
			_, rounded, ok = resetFromText(tt.text, fixedNow)
			is.True(ok)
			is.Equal(rounded, tt.rounded)
		})
	}
	for _, s := range []string{`{"resets_in_seconds": 12}`, `"resets_at": 1795366800`, "Please retry in 32.5s."} {
		_, rounded, ok := resetFromText(s, fixedNow)
		if !ok || rounded {
			t.Errorf("resetFromText(%q): ok %v rounded %v, want an exact reset", s, ok, rounded)
		}
	}
}

// TestClaudeRateLimitEventIsExact: Claude's rate_limit_event gives resetsAt
// in epoch seconds, so the outcome's reset is exact; the same limit known
// only from the result text is rounded.
func TestClaudeRateLimitEventIsExact(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)
	reset := now.Add(3 * time.Second)
	p := Claude{Now: func() time.Time { return now }}.NewParser()
	p.Line([]byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":` +
		strconv.FormatInt(reset.Unix(), 10) + `,"rateLimitType":"five_hour"}}`))
	p.Line([]byte(`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit · resets 7pm (UTC)"}`))
	o := p.Finish(1, "")
	is.Equal(o.Status, StatusRateLimited)
	is.True(o.ResetAt.Equal(reset))
	is.True(!o.ResetRounded)
	is.Equal(QuotaWait(now, o.ResetAt, o.ResetRounded), 6*time.Second)

	p = Claude{Now: func() time.Time { return now }}.NewParser()
	p.Line([]byte(`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your session limit · resets 8pm (UTC)"}`))
	o = p.Finish(1, "")
	is.Equal(o.Status, StatusRateLimited)
	is.True(o.ResetRounded)
	is.Equal(QuotaWait(now, o.ResetAt, o.ResetRounded), time.Hour+time.Minute)
}

// addResetSeeds seeds f with every line of every recorded agent stream in
// testdata (copied from ../shared/agent-streams and the pinned CLIs'
// recordings) and with each agent's own wording of a reset.
func addResetSeeds(f *testing.F) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no agent streams in testdata: %v", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			f.Add(line)
		}
	}
	for _, s := range []string{
		// Claude Code
		"You've hit your limit · resets 3pm (Europe/Berlin)", "resets Nov 24, 3pm (UTC)", "Claude AI usage limit reached|1795366800",
		// Codex
		"try again at 3:04 PM.", "Try again at Nov 24th, 2026 12:10 AM.", `{"type":"usage_limit_reached","resets_at":1795366800,"resets_in_seconds":1234}`,
		// Gemini CLI
		"Please retry in 32.5s.", "Your quota will reset after 17h36m21s.", "Suggested retry after 3600s.",
		// opencode, amp and the relative forms
		"try again in 4 days 20 hours", "Rate limit exceeded, retry in 30s", "resets in 2h 5m",
		"try again in 99999 days", "retry in 9223372036854775807s", "resets 12:59 a.m. (America/New_York)",
	} {
		f.Add(s)
	}
}

// checkReset checks a reset read from s at now: none means the zero time,
// and a reset more than a day before now must be an instant the text
// named (an epoch, a date with its year): read at another now, it is the
// same. A time relative to now, or a clock time without a year, is never
// that far back.
func checkReset(t *testing.T, read func(string, time.Time) (time.Time, bool, bool), s string) {
	t.Helper()
	got, _, ok := read(s, fixedNow)
	if !ok {
		if !got.IsZero() {
			t.Fatalf("%q: no reset, but time %v", s, got)
		}
		return
	}
	if got.IsZero() {
		t.Fatalf("%q: a reset at the zero time", s)
	}
	if got.Before(fixedNow.Add(-24 * time.Hour)) {
		later, _, ok2 := read(s, fixedNow.Add(time.Hour))
		if !ok2 || !later.Equal(got) {
			t.Fatalf("%q: reset %v is before now (%v) and moves with now (%v, %v)", s, got, fixedNow, later, ok2)
		}
	}
}

// FuzzResetFromText checks the reset reading every backend but Claude's
// stream parser uses (Codex, Gemini CLI, opencode, amp): see checkReset.
func FuzzResetFromText(f *testing.F) {
	addResetSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkReset(t, resetFromText, s)
	})
}

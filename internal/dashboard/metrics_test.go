package dashboard

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/logjsonl"
)

func ptr[T any](v T) *T { return &v }

// feed plays a known run: two BUILD iterations (one closes, one fails),
// a stuck issue, two violations of one kind, two hosts the sandbox
// refused, three issues BUILD created, a quota wait, and the end.
func feed(m *Metrics) {
	for _, ev := range []any{
		logjsonl.RunStart{Mode: "build", Agent: "command"},
		logjsonl.IterationStart{Iteration: 1, IssueID: "a-1", Mode: "build", Attempt: 1},
		logjsonl.IterationEnd{Iteration: 1, Outcome: "closed", IssueClosed: true, DurationSeconds: 12, CostUSD: ptr(0.25), Tokens: &agent.Tokens{InputTokens: 100, OutputTokens: 7}},
		logjsonl.IterationStart{Iteration: 2, IssueID: "a-2", Mode: "build", Attempt: 3},
		logjsonl.Violation{Kind: "priority_changed"},
		logjsonl.Violation{Kind: "priority_changed"},
		logjsonl.Created{Iteration: 2, IssueID: "a-2", Count: 3, Cap: 10, IDs: []string{"a-7", "a-8", "a-9"}},
		logjsonl.IterationEnd{Iteration: 2, Outcome: "agent_error", DurationSeconds: 3, CostUSD: ptr(0.5)},
		logjsonl.Stuck{IssueID: "a-2", Attempts: 3},
		logjsonl.NetworkRefused{Iteration: 2, IssueID: "a-2", Host: "evil.example:443"},
		logjsonl.NetworkRefused{Iteration: 2, IssueID: "a-2", Host: "other.example:80"},
		logjsonl.QuotaWaitStart{WaitSeconds: 60},
		logjsonl.QuotaWaitEnd{WaitedSeconds: 42},
		logjsonl.RunEnd{Iterations: 2, Outcome: "success"},
	} {
		m.Observe(logjsonl.Event{Name: "x", Time: time.Now(), Data: ev})
	}
}

func TestCountersAfterAKnownRun(t *testing.T) {
	m := NewMetrics(1)
	feed(m)
	m.BDCall(nil, 150*time.Millisecond, nil)
	m.BDCall(nil, 2*time.Second, errors.New("boom"))
	for _, tc := range []struct {
		name string
		got  float64
		want float64
	}{
		{"iterations build/closed", testutil.ToFloat64(m.iterations.WithLabelValues("build", "closed")), 1},
		{"iterations build/agent_error", testutil.ToFloat64(m.iterations.WithLabelValues("build", "agent_error")), 1},
		{"closed", testutil.ToFloat64(m.closed), 1},
		{"stuck", testutil.ToFloat64(m.stuck), 1},
		{"created by BUILD", testutil.ToFloat64(m.created), 3},
		{"violations", testutil.ToFloat64(m.violations.WithLabelValues("priority_changed")), 2},
		{"cost", testutil.ToFloat64(m.cost.WithLabelValues("command")), 0.75},
		{"input tokens", testutil.ToFloat64(m.tokens.WithLabelValues("command", "input")), 100},
		{"network refused", testutil.ToFloat64(m.netRefused.WithLabelValues("command")), 2},
		{"quota waits", testutil.ToFloat64(m.quotaWaits), 1},
		{"quota seconds", testutil.ToFloat64(m.quotaSeconds), 42},
		{"bd ok", testutil.ToFloat64(m.bdCalls.WithLabelValues("ok")), 1},
		{"bd error", testutil.ToFloat64(m.bdCalls.WithLabelValues("error")), 1},
		{"busy", testutil.ToFloat64(m.workers.WithLabelValues("busy")), 0},
		{"idle", testutil.ToFloat64(m.workers.WithLabelValues("idle")), 1},
		{"runs", testutil.ToFloat64(m.runs.WithLabelValues("build", "success")), 1},
		{"daemon waiting", testutil.ToFloat64(m.daemon.WithLabelValues("waiting")), 1},
		{"daemon building", testutil.ToFloat64(m.daemon.WithLabelValues("building")), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %g, want %g", tc.name, tc.got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(m.duration); n != 1 {
		t.Errorf("duration series = %d, want 1", n)
	}
}

// TestCountersByAgent: a run that falls back from Claude to Codex counts
// each iteration's cost, tokens and refused hosts under the backend that
// ran it, not the run's first.
func TestCountersByAgent(t *testing.T) {
	m := NewMetrics(1)
	for _, ev := range []any{
		logjsonl.RunStart{Mode: "build", Agent: "claude", Agents: []string{"claude", "codex:gpt-5"}},
		logjsonl.IterationStart{Iteration: 1, IssueID: "a-1", Mode: "build", Agent: "claude"},
		logjsonl.IterationEnd{Iteration: 1, Outcome: "rate_limited", Agent: "claude", Tokens: &agent.Tokens{InputTokens: 5}},
		logjsonl.IterationStart{Iteration: 1, IssueID: "a-1", Mode: "build", Agent: "codex", Model: "gpt-5"},
		logjsonl.NetworkRefused{Iteration: 1, IssueID: "a-1", Host: "evil.example:443"},
		logjsonl.IterationEnd{Iteration: 1, Outcome: "closed", IssueClosed: true, Agent: "codex", Model: "gpt-5", CostUSD: ptr(0.5), Tokens: &agent.Tokens{InputTokens: 100}},
	} {
		m.Observe(logjsonl.Event{Name: "x", Time: time.Now(), Data: ev})
	}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"claude iterations", testutil.ToFloat64(m.agentIters.WithLabelValues("claude", "rate_limited")), 1},
		{"codex iterations", testutil.ToFloat64(m.agentIters.WithLabelValues("codex", "closed")), 1},
		{"claude tokens", testutil.ToFloat64(m.tokens.WithLabelValues("claude", "input")), 5},
		{"codex tokens", testutil.ToFloat64(m.tokens.WithLabelValues("codex", "input")), 100},
		{"codex cost", testutil.ToFloat64(m.cost.WithLabelValues("codex")), 0.5},
		{"refused under codex", testutil.ToFloat64(m.netRefused.WithLabelValues("codex")), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %g, want %g", tc.name, tc.got, tc.want)
		}
	}
}

func TestWorkersBusyWhileAnIterationRuns(t *testing.T) {
	m := NewMetrics(3)
	m.Observe(logjsonl.Event{Worker: "w1", Data: logjsonl.IterationStart{Mode: "build"}})
	m.Observe(logjsonl.Event{Worker: "w2", Data: logjsonl.IterationStart{Mode: "plan"}})
	if b, i := testutil.ToFloat64(m.workers.WithLabelValues("busy")), testutil.ToFloat64(m.workers.WithLabelValues("idle")); b != 2 || i != 1 {
		t.Fatalf("busy %g idle %g, want 2 and 1", b, i)
	}
	m.Observe(logjsonl.Event{Worker: "w2", Data: logjsonl.IterationEnd{Outcome: "ok"}})
	if got := testutil.ToFloat64(m.iterations.WithLabelValues("plan", "ok")); got != 1 {
		t.Fatalf("the plan iteration was counted under another mode: %g", got)
	}
}

func TestCostCapPausesTheDaemonState(t *testing.T) {
	m := NewMetrics(1)
	m.Observe(logjsonl.Event{Data: logjsonl.RunEnd{Outcome: "budget"}})
	if got := testutil.ToFloat64(m.daemon.WithLabelValues("paused")); got != 1 {
		t.Fatalf("paused = %g after a budget stop", got)
	}
	m.Observe(logjsonl.Event{Data: logjsonl.Decision{Decision: "build"}})
	if got := testutil.ToFloat64(m.daemon.WithLabelValues("paused")); got != 0 {
		t.Fatalf("still paused after the next decision")
	}
}

func TestDaemonStateIsOneHot(t *testing.T) {
	m := NewMetrics(1)
	m.SetDaemonState("idle")
	m.SetDaemonState("no-such-state")
	for _, s := range DaemonStates {
		want := 0.0
		if s == "idle" {
			want = 1
		}
		if got := testutil.ToFloat64(m.daemon.WithLabelValues(s)); got != want {
			t.Errorf("state %s = %g, want %g", s, got, want)
		}
	}
}

func TestNamesPassTheLinter(t *testing.T) {
	m := NewMetrics(1)
	feed(m)
	m.BDCall(nil, time.Millisecond, nil)
	problems, err := testutil.GatherAndLint(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestServedTextPassesTheLinter lints the text /metrics serves, in
// process, with the rules `promtool check metrics` applies (its promlint
// package): a parse error or any problem fails.
func TestServedTextPassesTheLinter(t *testing.T) {
	m := NewMetrics(1)
	feed(m)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "ralphd_iterations_total{mode=\"build\",outcome=\"closed\"} 1") {
		t.Fatalf("served text lacks the iteration counter:\n%s", body)
	}
	if err := lintText(string(body)); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
}

// TestLintTextCatchesBadMetrics feeds lintText expositions it must reject,
// so that the check above cannot pass by checking nothing.
func TestLintTextCatchesBadMetrics(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"counter without _total", "# HELP ralphd_things Things.\n# TYPE ralphd_things counter\nralphd_things 1\n", `ralphd_things: counter metrics should have "_total" suffix`},
		{"no HELP", "# TYPE ralphd_things_total counter\nralphd_things_total 1\n", "ralphd_things_total: no help text"},
		{"camelCase name", "# HELP ralphd_thingCount Things.\n# TYPE ralphd_thingCount gauge\nralphd_thingCount 1\n", "ralphd_thingCount: metric names should be written in 'snake_case'"},
		{"not the text format", "ralphd_things_total{ 1\n", "parsing error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := lintText(tc.text)
			if err == nil {
				t.Fatalf("lintText accepted:\n%s", tc.text)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("lintText: %v; want it to mention %q", err, tc.want)
			}
		})
	}
	if err := lintText("# HELP ralphd_things_total Things.\n# TYPE ralphd_things_total counter\nralphd_things_total 1\n"); err != nil {
		t.Errorf("lintText rejected a good counter: %v", err)
	}
}

// lintText lints a text exposition as `promtool check metrics` does: an
// error if it does not parse or if promlint reports any problem, with every
// problem in the message.
func lintText(text string) error {
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		return fmt.Errorf("lint: parse the exposition: %w", err)
	}
	if len(problems) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lint: %d problem(s):", len(problems))
	for _, p := range problems {
		fmt.Fprintf(&b, "\n  %s: %s", p.Metric, p.Text)
	}
	return errors.New(b.String())
}

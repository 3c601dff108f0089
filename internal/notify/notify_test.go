package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
)

func TestFromLoop(t *testing.T) {
	cost := 1.5
	for _, tc := range []struct {
		name     string
		data     any
		kind     string // "" when no notification
		issue    string
		contains string
	}{
		{"stuck", logjsonl.Stuck{IssueID: "x-1", Attempts: 3, Reason: "Recommendation: split it"}, KindStuck, "x-1", "x-1 is STUCK after 3 attempts"},
		{"violation", logjsonl.Violation{IssueID: "x-2", Kind: "priority_changed"}, KindViolation, "x-2", "priority_changed"},
		{"short quota wait", logjsonl.QuotaWaitStart{WaitSeconds: 600}, "", "", ""},
		{"long quota wait", logjsonl.QuotaWaitStart{WaitSeconds: 601}, KindQuotaWait, "", "10m1s"},
		{"run end", logjsonl.RunEnd{Outcome: "success", Iterations: 4, IssuesClosed: 3, CostUSD: &cost}, KindRunEnd, "", "4 iterations, 3 closed, 0 stuck, $1.50"},
		{"budget", logjsonl.RunEnd{Outcome: "budget"}, KindBudget, "", "cost cap"},
		{"unusable", logjsonl.RunEnd{Outcome: "agent_unusable", Reason: "not logged in"}, KindAgentUnusable, "", "cannot run"},
		{"idle, blocked", logjsonl.Decision{Decision: "idle", Reason: "0 ready, 2 blocked, 3 open"}, KindIdleBlocked, "", "2 blocked"},
		{"idle, nothing blocked", logjsonl.Decision{Decision: "idle", Reason: "0 ready, 0 blocked, 0 open"}, "", "", ""},
		{"build decision", logjsonl.Decision{Decision: "build", Reason: "1 ready issue(s)"}, "", "", ""},
		{"iteration end", logjsonl.IterationEnd{Outcome: "ok"}, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := FromLoop(logjsonl.Event{Data: tc.data})
			if ok != (tc.kind != "") {
				t.Fatalf("ok = %v, want %v", ok, tc.kind != "")
			}
			if !ok {
				return
			}
			if e.Kind != tc.kind || e.IssueID != tc.issue || !strings.Contains(e.Summary, tc.contains) {
				t.Fatalf("got %+v, want kind %s issue %s summary containing %q", e, tc.kind, tc.issue, tc.contains)
			}
		})
	}
	e, _ := FromLoop(logjsonl.Event{Data: logjsonl.Stuck{IssueID: "x", Reason: "Recommendation: split it"}})
	if e.Detail != "Recommendation: split it" {
		t.Fatalf("the STUCK note's recommendation is lost: %q", e.Detail)
	}
}

func FuzzBlockedWork(f *testing.F) {
	f.Add("0 ready, 2 blocked, 3 open")
	f.Add("")
	f.Add("-1 ready, x blocked")
	f.Fuzz(func(t *testing.T, s string) { _ = blockedWork(s) })
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		bad  bool
	}{
		{"", len(Kinds), false},
		{"all", len(Kinds), false},
		{"stuck, run_end", 2, false},
		{"stuck,nope", 0, true},
	} {
		got, err := ParseKinds(tc.in)
		if (err != nil) != tc.bad || len(got) != tc.want {
			t.Errorf("ParseKinds(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestCmdGetsTheEventOnStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "got.json")
	n := New(Config{Cmd: "cat > " + out, Project: "p1"})
	n.Observe(logjsonl.Event{Time: time.Now(), Data: logjsonl.Stuck{IssueID: "x-9", Attempts: 3, Reason: "split it"}})
	n.Close(context.Background())
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("stdin is not one JSON event: %v\n%s", err, b)
	}
	if e.Kind != KindStuck || e.IssueID != "x-9" || e.Project != "p1" || e.Detail != "split it" {
		t.Fatalf("got %+v", e)
	}
}

func TestUnselectedKindsAreNotSent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "got")
	n := New(Config{Cmd: "cat >> " + out, Kinds: []string{KindRunEnd}})
	n.Observe(logjsonl.Event{Data: logjsonl.Stuck{IssueID: "x-9"}})
	n.Close(context.Background())
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a stuck event was sent although only run_end is selected")
	}
}

// A notifier that hangs neither blocks Observe nor outlives its timeout.
func TestHangingCmdDoesNotBlockTheLoop(t *testing.T) {
	var mu sync.Mutex
	var logged strings.Builder
	n := New(Config{Cmd: "sleep 60", Timeout: 200 * time.Millisecond, Log: newLogger(&mu, &logged)})
	start := time.Now()
	for range queueSize * 2 {
		n.Observe(logjsonl.Event{Data: logjsonl.Stuck{IssueID: "x-1"}})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Observe blocked for %s behind a hanging notify_cmd", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	n.Close(ctx)
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "no exit within") || !strings.Contains(logged.String(), "dropped") {
		t.Fatalf("the timeout and the dropped events were not logged:\n%s", logged.String())
	}
}

func TestCmdFailureIsReported(t *testing.T) {
	n := New(Config{Cmd: "echo nope >&2; exit 7"})
	defer n.Close(context.Background())
	err := n.Send(context.Background(), Samples(time.Now())[0])
	if err == nil || !strings.Contains(err.Error(), "exited 7") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err = %v", err)
	}
}

type hit struct {
	ctype, title string
	body         string
}

func server(t *testing.T, codes ...int) (*httptest.Server, func() []hit) {
	var mu sync.Mutex
	var hits []hit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		i := len(hits)
		hits = append(hits, hit{r.Header.Get("Content-Type"), r.Header.Get("Title"), string(b)})
		mu.Unlock()
		code := http.StatusOK
		if i < len(codes) {
			code = codes[i]
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []hit { mu.Lock(); defer mu.Unlock(); return append([]hit(nil), hits...) }
}

func TestPostRetriesAfterA500(t *testing.T) {
	srv, hits := server(t, 500, 503)
	n := New(Config{URL: srv.URL, Backoff: 10 * time.Millisecond})
	defer n.Close(context.Background())
	if err := n.Send(context.Background(), Samples(time.Now())[0]); err != nil {
		t.Fatal(err)
	}
	h := hits()
	if len(h) != 3 {
		t.Fatalf("%d tries, want 3 (two failures, then success)", len(h))
	}
	var e Event
	if err := json.Unmarshal([]byte(h[2].body), &e); err != nil || e.Kind != KindStuck {
		t.Fatalf("body %q: %v", h[2].body, err)
	}
}

func TestPostGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codes []int
		tries int
	}{
		{"4xx is not retried", []int{404, 404, 404, 404}, 1},
		{"5xx is retried up to the limit", []int{500, 500, 500, 500, 500}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, hits := server(t, tc.codes...)
			n := New(Config{URL: srv.URL, Retries: 2, Backoff: time.Millisecond})
			defer n.Close(context.Background())
			if err := n.Send(context.Background(), Samples(time.Now())[0]); err == nil {
				t.Fatal("no error")
			}
			if got := len(hits()); got != tc.tries {
				t.Fatalf("%d tries, want %d", got, tc.tries)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format, ctype, has string
	}{
		{"json", "application/json", `"event":"stuck"`},
		{"text", "text/plain; charset=utf-8", "demo-1 is STUCK after 3 attempts (sample)\n\nRecommendation"},
		{"slack", "application/json", `{"text":"*ralphd: stuck*: demo-1 is STUCK`},
	} {
		srv, hits := server(t)
		n := New(Config{URL: srv.URL, Format: tc.format})
		if err := n.Send(context.Background(), Samples(time.Now())[0]); err != nil {
			t.Fatal(err)
		}
		n.Close(context.Background())
		h := hits()[0]
		if h.ctype != tc.ctype || !strings.Contains(h.body, tc.has) || h.title != "ralphd: stuck" {
			t.Errorf("%s: got %+v", tc.format, h)
		}
	}
	if Format("auto", "https://ntfy.sh/mytopic") != "text" || Format("", "http://example.com/hook") != "json" {
		t.Error("auto does not pick text for ntfy and json otherwise")
	}
}

func TestObserveAfterCloseIsHarmless(t *testing.T) {
	n := New(Config{Cmd: "true"})
	n.Close(context.Background())
	n.Observe(logjsonl.Event{Data: logjsonl.Stuck{IssueID: "x-1"}})
	n.Close(context.Background())
}

// A daemon decides "idle" at every poll: the same blocked state is told
// once an hour, a new one at once.
func TestRepeatsAreDropped(t *testing.T) {
	out := filepath.Join(t.TempDir(), "got")
	n := New(Config{Cmd: "cat >> " + out + "; echo >> " + out})
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n.now = func() time.Time { return clock }
	idle := func(reason string) {
		n.Observe(logjsonl.Event{Data: logjsonl.Decision{Decision: "idle", Reason: reason}})
	}
	idle("0 ready, 2 blocked, 2 open")
	idle("0 ready, 2 blocked, 2 open")
	clock = clock.Add(30 * time.Minute)
	idle("0 ready, 2 blocked, 2 open")
	idle("0 ready, 1 blocked, 2 open") // news
	clock = clock.Add(2 * time.Hour)
	idle("0 ready, 1 blocked, 2 open") // a reminder after the hour
	n.Observe(logjsonl.Event{Data: logjsonl.Stuck{IssueID: "x"}})
	n.Observe(logjsonl.Event{Data: logjsonl.Stuck{IssueID: "x"}}) // stuck is never dropped
	n.Close(context.Background())
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), `"event":"idle_blocked"`); got != 3 {
		t.Errorf("%d idle_blocked notifications, want 3:\n%s", got, b)
	}
	if got := strings.Count(string(b), `"event":"stuck"`); got != 2 {
		t.Errorf("%d stuck notifications, want 2", got)
	}
}

// FuzzParseKinds checks notify_events: what parses is a list of known
// kinds, and a list written back with commas parses the same.
func FuzzParseKinds(f *testing.F) {
	for _, s := range []string{"", "all", "stuck, run_end", "stuck,,violation", " , ", "nope", "all,stuck", "stuck\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kinds, err := ParseKinds(s)
		if err != nil {
			if kinds != nil {
				t.Fatalf("%q: error with kinds %v", s, kinds)
			}
			return
		}
		for _, k := range kinds {
			if !slices.Contains(Kinds, k) {
				t.Fatalf("%q: unknown kind %q taken", s, k)
			}
		}
		if len(kinds) == 0 {
			return // "," names none; written back it would read as all
		}
		again, err := ParseKinds(strings.Join(kinds, ","))
		if err != nil || !slices.Equal(again, kinds) {
			t.Fatalf("%q: %v reads back as %v, %v", s, kinds, again, err)
		}
	})
}

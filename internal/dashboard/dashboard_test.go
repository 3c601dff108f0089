package dashboard

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

const evil = `<script>alert("x")</script>`

func issues() []beads.Issue {
	return []beads.Issue{
		{ID: "t-a", Title: "First " + evil, Status: "closed"},
		{ID: "t-b", Title: "Second", Status: "open", Dependencies: []beads.Dependency{{IssueID: "t-b", DependsOnID: "t-a", Type: "blocks"}}},
		{ID: "t-c", Title: "Third", Status: "open", Dependencies: []beads.Dependency{{IssueID: "t-c", DependsOnID: "t-b", Type: "blocks"}}},
		{ID: "t-d", Title: "Stuck one", Status: "open", Labels: []string{"ralph:stuck"}},
		{ID: "t-e", Title: "Running", Status: "in_progress"},
		{ID: "t-f", Title: "Later", Status: "deferred"},
		{ID: "t-g", Title: "Parked", Status: "blocked"},
	}
}

func newTest(t *testing.T, opts Options) *Server {
	t.Helper()
	dir := t.TempDir()
	if opts.Sources.Issues == nil {
		opts.Sources.Issues = func(context.Context) ([]beads.Issue, error) { return issues(), nil }
	}
	if opts.Sources.LogsDir == "" {
		opts.Sources.LogsDir = filepath.Join(dir, "logs")
		opts.Sources.ReportsDir = filepath.Join(dir, "reports")
		os.MkdirAll(opts.Sources.LogsDir, 0o755)
		os.MkdirAll(opts.Sources.ReportsDir, 0o755)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func get(t *testing.T, h http.Handler, target string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	req.Host = "127.0.0.1:7777"
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNodeStates(t *testing.T) {
	want := map[string]string{"t-a": StateClosed, "t-b": StateReady, "t-c": StateBlocked, "t-d": StateStuck, "t-e": StateInProgress, "t-f": StateDeferred, "t-g": StateBlocked}
	nodes := Nodes(issues(), "ralph:stuck")
	for _, n := range nodes {
		if n.State != want[n.ID] {
			t.Errorf("%s: state %s, want %s", n.ID, n.State, want[n.ID])
		}
		if n.Colour() == "" {
			t.Errorf("%s: no colour", n.ID)
		}
	}
	if len(nodes) != len(want) {
		t.Fatalf("%d nodes", len(nodes))
	}
}

// DOT keeps one line per node and edge whatever the titles hold: no
// quote, backslash or newline from the tracker reaches Graphviz.
func FuzzDOTLabels(f *testing.F) {
	f.Add("t-1", `x"];evil[label="`)
	f.Add("a\nb", "\\\"\n<script>")
	f.Fuzz(func(t *testing.T, id, title string) {
		nodes := []Node{{ID: id, Title: title, State: StateReady}, {ID: "z", State: StateClosed, Deps: []string{id}}}
		out := string(DOT(nodes))
		if n := strings.Count(out, "\n"); n != 5+2+1+1 {
			t.Fatalf("%d lines:\n%s", n, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[5:8] {
			if strings.Count(line, `"`)%2 != 0 || strings.ContainsAny(strings.NewReplacer(`\n`, "", " -> ", "").Replace(line), "<>&\\") {
				t.Fatalf("unsafe line: %s", line)
			}
		}
	})
}

func TestCheckBind(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		loopback    bool
		err         bool
	}{
		{"127.0.0.1:7777", "", true, false},
		{"localhost:7777", "", true, false},
		{"[::1]:7777", "", true, false},
		{"127.0.0.2:7777", "", true, false},
		{"0.0.0.0:7777", "", false, true},
		{":7777", "", false, true},
		{"[::]:7777", "", false, true},
		{"192.168.1.5:7777", "", false, true},
		{"example.com:7777", "", false, true},
		{"0.0.0.0:7777", "tok", false, false},
		{"nonsense", "tok", false, true},
	} {
		lb, err := CheckBind(tc.addr, tc.token)
		if (err != nil) != tc.err || (err == nil && lb != tc.loopback) {
			t.Errorf("CheckBind(%q, %q) = %v, %v", tc.addr, tc.token, lb, err)
		}
		if tc.err && tc.token == "" && err != nil && !errors.Is(err, ErrNeedToken) {
			t.Errorf("CheckBind(%q): %v is not ErrNeedToken", tc.addr, err)
		}
	}
}

func TestTokenRules(t *testing.T) {
	s := newTest(t, Options{Token: "s3cret"})
	h := s.Handler(false)
	if r := get(t, h, "/"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.StatusCode)
	}
	for _, path := range []string{"/metrics", "/events", "/runs", "/static/live.js", "/issue/t-a"} {
		if r := get(t, h, path); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d", path, r.StatusCode)
		}
	}
	if r := get(t, h, "/", "Authorization", "Bearer wrong"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong bearer: %d", r.StatusCode)
	}
	if r := get(t, h, "/", "Authorization", "Bearer s3cret"); r.StatusCode != http.StatusOK {
		t.Fatalf("bearer: %d", r.StatusCode)
	}
	if r := get(t, h, "/?token=wrong"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong ?token: %d", r.StatusCode)
	}
	r := get(t, h, "/runs?token=s3cret")
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/runs" {
		t.Fatalf("?token: %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range r.Cookies() {
		if c.Name == cookieName {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cookie)
	}
	if r := get(t, h, "/runs", "Cookie", cookie.Name+"="+cookie.Value); r.StatusCode != http.StatusOK {
		t.Fatalf("cookie: %d", r.StatusCode)
	}
	if r := get(t, h, "/runs", "Cookie", cookie.Name+"=nope"); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad cookie: %d", r.StatusCode)
	}
}

func TestLoopbackWithoutToken(t *testing.T) {
	s := newTest(t, Options{})
	h := s.Handler(true)
	for _, host := range []string{"127.0.0.1:7777", "localhost:7777", "[::1]:7777", "localhost"} {
		if r := get(t, h, "/", "Host", host); r.StatusCode != http.StatusOK {
			t.Errorf("Host %s: %d", host, r.StatusCode)
		}
	}
	// DNS rebinding: a page on evil.example resolves its name to 127.0.0.1.
	for _, host := range []string{"evil.example:7777", "127.0.0.1.evil.example", ""} {
		if r := get(t, h, "/", "Host", host); r.StatusCode != http.StatusForbidden {
			t.Errorf("Host %q: %d, want 403", host, r.StatusCode)
		}
	}
	// A handler used on a non-loopback listener without a token refuses
	// everything, even if CheckBind was skipped.
	if r := get(t, s.Handler(false), "/"); r.StatusCode != http.StatusForbidden {
		t.Errorf("non-loopback without token: %d", r.StatusCode)
	}
}

func TestReadOnly(t *testing.T) {
	h := newTest(t, Options{Token: "tok"}).Handler(true)
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		req := httptest.NewRequest(m, "/", strings.NewReader("x"))
		req.Header.Set("Authorization", "Bearer tok")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d", m, w.Code)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	r := get(t, newTest(t, Options{}).Handler(true), "/")
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q", csp)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatal("no nosniff")
	}
}

// Agent output and tracker text are shown as text, never as markup.
func TestUntrustedTextIsEscaped(t *testing.T) {
	s := newTest(t, Options{Live: true, Dot: "none"})
	s.Observe(logjsonl.Event{Name: "iteration_start", Time: time.Now(), Data: logjsonl.IterationStart{Iteration: 1, IssueID: "t-b", Mode: "build", IssueTitle: evil, Attempt: 1, MaxAttempts: 3}})
	s.Observe(logjsonl.Event{Name: "iteration_end", Time: time.Now(), Data: logjsonl.IterationEnd{Iteration: 1, IssueID: "t-b", Outcome: "agent_error", Reason: evil}})
	logPath := filepath.Join(s.opts.Sources.LogsDir, "2026-01-01T00-00-00.log")
	w, err := logjsonl.CreateRun(s.opts.Sources.LogsDir, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Local().Format(logjsonl.FileTimeLayout), 10, logjsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Meta(logjsonl.EventRunStart, logjsonl.RunStart{SchemaVersion: 1, Mode: "build"})
	w.AgentLine(logjsonl.StreamStdout, []byte(evil))
	w.AgentLine(logjsonl.StreamStdout, []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"`+strings.ReplaceAll(evil, `"`, `\"`)+`"}]}}`))
	w.Close()
	if _, err := os.Stat(logPath); err != nil {
		t.Fatal(err)
	}
	h := s.Handler(true)
	for _, path := range []string{"/", "/now", "/graph", "/logs/" + filepath.Base(logPath), "/issue/t-a"} {
		b := body(t, get(t, h, path))
		if strings.Contains(b, "<script>alert") {
			t.Errorf("%s renders the script as markup", path)
		}
		if !strings.Contains(b, "&lt;script&gt;alert(") {
			t.Errorf("%s does not show the script as text:\n%s", path, b)
		}
	}
}

func TestPathsStayInTheirDirectories(t *testing.T) {
	s := newTest(t, Options{})
	secret := filepath.Join(filepath.Dir(s.opts.Sources.LogsDir), "secret.log")
	os.WriteFile(secret, []byte("TOPSECRET"), 0o600)
	h := s.Handler(true)
	for _, path := range []string{"/logs/..%2fsecret.log", "/logs/../secret.log", "/logs/.hidden.log", "/reports/..%2f..%2fsecret.log", "/logs/secret", "/static/../dashboard.go"} {
		r := get(t, h, path)
		if b := body(t, r); strings.Contains(b, "TOPSECRET") || strings.Contains(b, "package dashboard") {
			t.Errorf("%s leaks a file outside its directory", path)
		}
	}
}

func TestGraphFallbackWithoutDot(t *testing.T) {
	s := newTest(t, Options{Dot: "none"})
	b := body(t, get(t, s.Handler(true), "/graph"))
	if !strings.Contains(b, "Graphviz dot is not installed") || !strings.Contains(b, `id="node-t-c" class="st-blocked"`) {
		t.Fatalf("no list fallback:\n%s", b)
	}
}

func TestGraphWithDot(t *testing.T) {
	s := newTest(t, Options{})
	if !s.HasDot() {
		t.Skip("Graphviz dot not installed")
	}
	b := body(t, get(t, s.Handler(true), "/graph"))
	if !strings.Contains(b, "<svg") || !strings.Contains(b, "st&#45;stuck") || !strings.Contains(b, "#cc79a7") {
		t.Fatalf("no laid-out SVG with the stuck node:\n%s", b)
	}
	if strings.Contains(b, "<?xml") || strings.Contains(b, "<!DOCTYPE") {
		t.Fatal("the prolog was inlined")
	}
}

func TestSSEPushesTheNowPanel(t *testing.T) {
	s := newTest(t, Options{Live: true, Dot: "none"})
	srv := httptest.NewServer(s.Handler(true))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	rd := bufio.NewReader(resp.Body)
	next := func() (string, string) {
		var name, data string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "" && name != "":
				return name, data
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: "):
				data += line[6:] + "\n"
			}
		}
	}
	if name, data := next(); name != "now" || !strings.Contains(data, `data-seq="0"`) {
		t.Fatalf("first event %s: %s", name, data)
	}
	s.Observe(logjsonl.Event{Time: time.Now(), Data: logjsonl.IterationStart{Iteration: 1, IssueID: "t-b", Mode: "build", Attempt: 2, MaxAttempts: 3}})
	name, data := next()
	if name != "now" || !strings.Contains(data, `data-seq="1"`) || !strings.Contains(data, "t-b") || !strings.Contains(data, "2/3") {
		t.Fatalf("after iteration_start: %s: %s", name, data)
	}
	if name, _ := next(); name != "graph" {
		t.Fatalf("an iteration start does not redraw the graph: %s", name)
	}
	s.Observe(logjsonl.Event{Time: time.Now(), Data: logjsonl.IterationEnd{Iteration: 1, IssueID: "t-b", Outcome: "closed", IssueClosed: true}})
	if name, _ := next(); name != "now" {
		t.Fatalf("got %s", name)
	}
	if name, data := next(); name != "graph" || !strings.Contains(data, `id="graph"`) {
		t.Fatalf("an iteration end does not redraw the graph: %s", name)
	}
	if name, data := next(); name != "cost" || !strings.Contains(data, `id="cost"`) {
		t.Fatalf("an iteration end does not update the cost: %s", name)
	}
}

func TestGraphShowsTheWorkedIssueInProgress(t *testing.T) {
	s := newTest(t, Options{Live: true, Dot: "none"})
	h := s.Handler(true)
	if b := body(t, get(t, h, "/graph")); !strings.Contains(b, `id="node-t-b" class="st-ready"`) {
		t.Fatalf("t-b is not ready before its iteration:\n%s", b)
	}
	s.Observe(logjsonl.Event{Time: time.Now(), Data: logjsonl.IterationStart{IssueID: "t-b", Mode: "build", Attempt: 1}})
	if b := body(t, get(t, h, "/graph")); !strings.Contains(b, `id="node-t-b" class="st-in_progress"`) {
		t.Fatalf("t-b is not in progress while a worker is on it:\n%s", b)
	}
}

func TestNowPanelHasASlotPerWorker(t *testing.T) {
	s := newTest(t, Options{Live: true, Workers: 3})
	s.Observe(logjsonl.Event{Worker: "w2", Time: time.Now(), Data: logjsonl.IterationStart{IssueID: "t-x", Mode: "build", Attempt: 1, MaxAttempts: 3}})
	n := s.live.snapshot()
	if len(n.Workers) != 3 {
		t.Fatalf("%d workers", len(n.Workers))
	}
	for _, w := range n.Workers {
		if (w.Name == "w2") != w.Busy() || (w.Name == "w2" && w.IssueID != "t-x") {
			t.Errorf("worker %+v", w)
		}
	}
}

func TestRunsAndCost(t *testing.T) {
	c1, c2 := 0.5, 0.25
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	recs := []state.Record{
		{RunID: "r1", Mode: "build", IssueID: "t-a", Attempt: 1, StartedAt: t0, EndedAt: t0.Add(time.Minute), Outcome: "closed", CostUSD: &c1, Tokens: agent.Tokens{InputTokens: 100, OutputTokens: 10}, Fingerprint: "abc123"},
		{RunID: "r1", Mode: "build", IssueID: "t-b", Attempt: 1, StartedAt: t0.Add(time.Minute), EndedAt: t0.Add(2 * time.Minute), Outcome: "agent_error", CostUSD: &c2, Violations: []string{"priority_changed"}},
		{RunID: "r1", Kind: state.KindRunEnd, Mode: "build", StartedAt: t0, EndedAt: t0.Add(2 * time.Minute), StopReason: "success", DurationSeconds: 120},
		{RunID: "r2", Mode: "plan", StartedAt: t0.Add(25 * time.Hour), EndedAt: t0.Add(25*time.Hour + time.Minute), Outcome: "ok"},
	}
	s := newTest(t, Options{Sources: Sources{History: func() ([]state.Record, error) { return recs, nil }}})
	os.WriteFile(filepath.Join(s.opts.Sources.ReportsDir, "r1.md"), []byte("# report r1"), 0o600)
	os.WriteFile(filepath.Join(s.opts.Sources.LogsDir, "r1.log"), nil, 0o600)
	h := s.Handler(true)
	runs := body(t, get(t, h, "/runs"))
	for _, want := range []string{"r1", "success", "$0.7500", "110", `href="/reports/r1.md"`, `href="/logs/r1.log"`, "r2"} {
		if !strings.Contains(runs, want) {
			t.Errorf("/runs lacks %q", want)
		}
	}
	if !strings.Contains(body(t, get(t, h, "/reports/r1.md")), "# report r1") {
		t.Error("report not shown")
	}
	cost := body(t, get(t, h, "/cost"))
	for _, want := range []string{"<svg", "2026-01-01", "2026-01-02", "$0.7500"} {
		if !strings.Contains(cost, want) {
			t.Errorf("/cost lacks %q", want)
		}
	}
	issue := body(t, get(t, h, "/issue/t-b"))
	for _, want := range []string{"agent_error", "priority_changed", "ready"} {
		if !strings.Contains(issue, want) {
			t.Errorf("/issue/t-b lacks %q", want)
		}
	}
	if !strings.Contains(body(t, get(t, h, "/issue/t-a")), "abc123") {
		t.Error("the fingerprint is not on the issue page")
	}
}

func TestServeRefusesNonLoopbackWithoutToken(t *testing.T) {
	s := newTest(t, Options{})
	err := s.Serve(context.Background(), "0.0.0.0:0", nil)
	if !errors.Is(err, ErrNeedToken) {
		t.Fatalf("err = %v", err)
	}
}

// FuzzValidName checks the dashboard's reading of a log, report or issue
// name from a URL: a name it takes stays in its directory (one local path
// element, no separator, no dot-dot), and with its suffix checked after
// it, it names a file of that directory.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"20261124-013000.log", "run.md", "t-a", "..", "../x.log", ".hidden", "a/b", "a\\b", "x..log", "rt-0001.2", "a:b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !validName(name) {
			return
		}
		dir := "/state/logs"
		p := filepath.Join(dir, name)
		if !filepath.IsLocal(name) || filepath.Dir(p) != dir || filepath.Base(p) != name || strings.ContainsAny(name, "/\\\x00") || strings.HasPrefix(name, ".") {
			t.Fatalf("%q taken, but it is not one file of its directory (%s)", name, p)
		}
	})
}

// TestNowPanelListsPullRequests: the "now" panel lists the workers' pull
// requests (integrate = pr) from the run log's worker events, each in its
// last state; a link the forge answered is kept only when it is safe.
func TestNowPanelListsPullRequests(t *testing.T) {
	s := newTest(t, Options{Live: true, Workers: 2})
	h := s.Handler(true)
	if b := body(t, get(t, h, "/")); strings.Contains(b, "pull requests") {
		t.Fatalf("a panel without pull requests lists some:\n%s", b)
	}
	step := func(issue string, n int, url, st string) {
		s.Observe(logjsonl.Event{Name: "worker", Worker: "w1", Time: time.Now(), Data: logjsonl.WorkerStep{Worker: "w1", IssueID: issue, Kind: "pull-request",
			PullRequest: &logjsonl.PullRequest{Number: n, URL: url, Branch: "ralph/" + issue, State: st}}})
	}
	step("t-a", 0, "", "opening")
	step("t-a", 7, "https://github.com/o/r/pull/7", "waiting for review")
	step("t-b", 8, "javascript:alert(1)", "checks failing")
	s.Observe(logjsonl.Event{Name: "worker", Worker: "w2", Time: time.Now(), Data: logjsonl.WorkerStep{Worker: "w2", IssueID: "t-c", Kind: "claimed"}})
	b := body(t, get(t, h, "/"))
	for _, want := range []string{
		`<tr class="pull" data-issue="t-a">`, `<a href="https://github.com/o/r/pull/7">#7</a>`, `<td class="pr-state">waiting for review</td>`,
		`<tr class="pull" data-issue="t-b">`, `<td class="pr-state">checks failing</td>`, `ralph/t-b`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("no %q in the panel:\n%s", want, b)
		}
	}
	if strings.Contains(b, "javascript:alert") || strings.Contains(b, `data-issue="t-c"`) || strings.Contains(b, "opening") {
		t.Errorf("the panel shows what it must not:\n%s", b)
	}
	step("t-a", 7, "https://github.com/o/r/pull/7", "merged")
	if b := body(t, get(t, h, "/")); !strings.Contains(b, `<td class="pr-state">merged</td>`) || strings.Contains(b, "waiting for review") {
		t.Errorf("the merge is not shown:\n%s", b)
	}
}

// TestNowPanelShowsWhoPlans: on a fleet tracker the "now" panel says who
// plans (escaped: the actor comes from the tracker), and nothing about a
// fleet off one.
func TestNowPanelShowsWhoPlans(t *testing.T) {
	since := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		fleet *state.FleetStatus
		want  []string
		not   []string
	}{
		{"off a fleet", nil, nil, []string{"now-fleet"}},
		{"this daemon", &state.FleetStatus{Lease: "t-9", Planner: "ralphd/box/a1b2c3/planner", PlannerHost: "box", PlannerClone: "a1b2c3", ThisClone: true, Since: since},
			[]string{`id="now-fleet"`, "this ralphd (clone a1b2c3 on host box) plans, holding lease t-9"}, nil},
		{"nobody", &state.FleetStatus{Lease: "t-9", Since: since}, []string{"nobody plans (lease t-9 free since"}, nil},
		{"another, hostile actor", &state.FleetStatus{Lease: "t-9", Planner: "<script>x</script>", Since: since},
			[]string{"another ralphd plans: &lt;script&gt;"}, []string{"<script>x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var src Sources
			if tc.fleet != nil {
				src.Fleet = func() *state.FleetStatus { return tc.fleet }
			}
			s := newTest(t, Options{Live: true, Sources: src})
			for _, path := range []string{"/now", "/"} {
				out := body(t, get(t, s.Handler(true), path))
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("%s lacks %q:\n%s", path, w, out)
					}
				}
				for _, w := range tc.not {
					if strings.Contains(out, w) {
						t.Errorf("%s has %q", path, w)
					}
				}
			}
		})
	}
}

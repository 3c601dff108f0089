package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// syncBuffer is a strings.Builder safe for a process writing while the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// chromium finds a Chromium to drive. Outside CI the browser test skips
// when there is none; in CI scripts/install-system-deps installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium in CI: scripts/install-system-deps installs it")
	}
	t.Skip("chromium not installed (Debian: apt-get install chromium)")
	return ""
}

var dashURL = regexp.MustCompile(`dashboard url=(http://127\.0\.0\.1:[0-9]+/)`)

// TestDashboardInBrowser drives a real headless Chromium against a daemon
// that runs a scripted agent on the stand-in bd. The agent waits for the
// test's go-ahead before it closes each issue, so the test sees one
// iteration end at a time. It shows, in one page load, that:
//   - the "now" panel changes when an iteration ends, without a reload;
//   - the graph's node for an issue turns from in-progress to closed;
//   - a <script> in an issue title and in the agent's output is shown as
//     text and never runs (on the page and in the rendered run log).
//
// It saves screenshots in the test's artifact directory (go test
// -artifacts); RALPHD_SCREENSHOT=path also writes the dashboard's, as
// docs/dashboard.png is made.
func TestDashboardInBrowser(t *testing.T) {
	chrome := chromium(t)
	bdDir := standinBin(t)
	work := t.TempDir()
	repo := filepath.Join(work, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"PATH="+bdDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+work, "XDG_STATE_HOME="+filepath.Join(work, "state"), "XDG_CONFIG_HOME="+filepath.Join(work, "config"),
		"GIT_CONFIG_NOSYSTEM=1", "BEADS_ACTOR=Test User", "NO_COLOR=1", "WORK="+work,
	)
	bd := func(args ...string) {
		t.Helper()
		name := args[0]
		if name == "bd" {
			name = filepath.Join(bdDir, "bd")
		}
		cmd := exec.Command(name, args[1:]...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	bd("git", "init", "-q")
	bd("bd", "init", "--prefix", "t", "--quiet", "--non-interactive")
	bd("bd", "create", "Parse the config <script>window.__pwned=1</script>", "--id", "t-a", "-p", "0", "-q")
	bd("bd", "create", "Serve the API", "--id", "t-b", "-p", "1", "-q")
	bd("bd", "create", "Write the docs", "--id", "t-c", "-p", "2", "-q")
	bd("bd", "dep", "add", "t-b", "t-a")
	bd("bd", "dep", "add", "t-c", "t-b")
	agent := filepath.Join(work, "agent.sh")
	if err := os.WriteFile(agent, []byte(`
echo '<script>window.__pwned=2</script> working on '"$RALPH_ISSUE_ID"
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"<img src=x onerror=\"window.__pwned=3\">"}]}}'
i=0
while [ ! -e "$WORK/go-$RALPH_ISSUE_ID" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
bd close "$RALPH_ISSUE_ID" --reason "done: tests pass (exit 0)" >/dev/null
echo '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.12,"usage":{"input_tokens":1200,"output_tokens":300},"num_turns":3}'
`), 0o644); err != nil {
		t.Fatal(err)
	}
	release := func(id string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, "go-"+id), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	daemon := exec.Command("ralphd", "daemon", "--http", "127.0.0.1:0", "--agent-cmd", "sh "+agent,
		"--log", "--poll", "1h", "--stop-grace", "1s")
	daemon.Dir, daemon.Env = repo, env
	var stderr syncBuffer
	daemon.Stderr = &stderr
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = daemon.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- daemon.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = daemon.Process.Kill()
			<-done
		}
	})
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; {
		if m := dashURL.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("the daemon never served the dashboard:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 120*time.Second)
	defer cancel()

	// nodeFill is the fill of an issue's shape in the graph.
	nodeFill := func(id string) string {
		return fmt.Sprintf(`(() => { const g = document.getElementById("node-%s"); if (!g) return ""; const s = g.querySelector("path,polygon,ellipse"); return s ? s.getAttribute("fill") + " " + g.getAttribute("class") : "" })()`, id)
	}
	waitJS := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
			t.Fatalf("waiting for %s: %v\ndaemon log:\n%s", what, err, stderr.String())
		}
	}
	navigate := func(url string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatalf("navigate to %s: %v", url, err)
		}
	}
	str := func(js string) string { t.Helper(); return evalAs[string](ctx, t, js) }
	truth := func(js string) bool { t.Helper(); return evalAs[bool](ctx, t, js) }
	shoot := func(name string) {
		t.Helper()
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		saveShot(t, name, shot)
	}

	navigate(base)
	// A marker that a reload would wipe.
	str(`window.__sameLoad = "yes"`)
	waitJS("t-a in the now panel", `(document.querySelector("#now .now-issue") || {}).textContent === "t-a"`)
	fillA := str(nodeFill("t-a"))
	if !strings.Contains(strings.ToLower(fillA), "#56b4e9") {
		t.Errorf("t-a's node is not in progress while its agent runs: %q", fillA)
	}
	seqBefore := str(`document.getElementById("now").dataset.seq`)
	// The graph is drawn by dot when it is installed; the list fallback
	// carries the same ids and classes.
	hasSVG := truth(`!!document.querySelector("#graph svg g.node")`)
	if _, err := exec.LookPath("dot"); err == nil && !hasSVG {
		t.Error("dot is installed but the graph is not an SVG")
	}

	// The elapsed time counts on between events.
	first := str(`document.querySelector("#now .elapsed").textContent`)
	waitJS("the elapsed time to count on", fmt.Sprintf(`document.querySelector("#now .elapsed").textContent !== %q`, first))

	release("t-a")
	waitJS("t-b in the now panel after t-a's iteration ended", `(document.querySelector("#now .now-issue") || {}).textContent === "t-b"`)
	waitJS("t-a's node turned closed", fmt.Sprintf(`%s.includes("st-closed") || %s.includes("st&#45;closed")`, nodeFill("t-a"), nodeFill("t-a")))
	fillA2 := str(nodeFill("t-a"))
	seqAfter := str(`document.getElementById("now").dataset.seq`)
	if str(`String(window.__sameLoad)`) != "yes" {
		t.Fatal("the page was reloaded")
	}
	if fillA == fillA2 || !strings.Contains(strings.ToLower(fillA2), "#009e73") {
		t.Errorf("t-a's node did not change to the closed colour: %q -> %q", fillA, fillA2)
	}
	if seqBefore == seqAfter {
		t.Errorf("the now panel's sequence did not move: %s", seqBefore)
	}
	events := str(`document.querySelector("#now .events").textContent`)
	if !strings.Contains(events, "iteration 1 (t-a) done: closed") {
		t.Errorf("the last events lack t-a's end:\n%s", events)
	}

	// The <script> in t-a's title is text in the page, and never ran.
	if truth(`typeof window.__pwned !== "undefined"`) {
		t.Fatal("a <script> from the tracker ran in the dashboard")
	}
	bodyText := str(`document.body.innerText`)
	if !strings.Contains(bodyText, "Parse the config <script>window.__pwned=1</script>") {
		t.Errorf("the title with <script> is not shown as text:\n%s", bodyText)
	}
	release("t-b")
	waitJS("t-c in the now panel", `(document.querySelector("#now .now-issue") || {}).textContent === "t-c"`)
	waitJS("t-b's node turned closed", fmt.Sprintf(`%s.includes("st-closed") || %s.includes("st&#45;closed")`, nodeFill("t-b"), nodeFill("t-b")))

	shoot("dashboard.png")

	// The run log, rendered: the agent's <script> and onerror are text.
	release("t-c")
	waitJS("idle", `(document.getElementById("now-state") || {}).textContent === "idle"`)
	navigate(base + "runs")
	logHref := str(`document.querySelector('a[href^="/logs/"]').getAttribute("href")`)
	navigate(base + strings.TrimPrefix(logHref, "/"))
	logText := str(`document.querySelector("pre.log").innerText`)
	pwned := truth(`typeof window.__pwned !== "undefined"`)
	if pwned || !strings.Contains(logText, "<script>window.__pwned=2</script> working on t-a") {
		t.Fatalf("the agent's <script> was not rendered inert (ran: %v):\n%s", pwned, logText)
	}
	if n := evalAs[int](ctx, t, `document.querySelectorAll("main img").length`); n != 0 {
		t.Fatalf("the agent's <img onerror> became an element")
	}
	shoot("runlog.png")
}

// evalAs evaluates js in the page and decodes its value.
func evalAs[T any](ctx context.Context, t *testing.T, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// saveShot writes a screenshot to the test's artifact directory, and the
// dashboard's to $RALPHD_SCREENSHOT when set (docs/dashboard.png).
func saveShot(t *testing.T, name string, png []byte) {
	t.Helper()
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	if dst := os.Getenv("RALPHD_SCREENSHOT"); dst != "" && name == "dashboard.png" {
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

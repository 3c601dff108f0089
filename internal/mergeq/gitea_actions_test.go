package mergeq

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/gitearunner"
)

// ciWorkflow is a Gitea Actions workflow the scripted runner runs on the
// host: a test of a.txt that fails, saying why, until a.txt says fixed.
const ciWorkflow = `on: pull_request
jobs:
  test:
    runs-on: ralphd-ci
    steps:
      - name: setup
        run: echo "checking out $GITHUB_SHA"
      - name: test
        run: |
          echo "=== RUN   TestA"
          if grep -qx fixed a.txt; then echo "--- PASS: TestA"; else echo "--- FAIL: TestA: a.txt says \"$(cat a.txt)\", want \"fixed\""; exit 1; fi
`

// actions gives the repository a workflow (on main) and a runner of its
// own, registered with the real Gitea and serving until the test ends.
func (g *giteaRepo) actions(t *testing.T, workflow string) *gitearunner.Runner {
	t.Helper()
	ctx := context.Background()
	runGit(t, g.dir, "checkout", "-q", "main")
	if err := os.MkdirAll(filepath.Join(g.dir, ".gitea", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.dir, ".gitea", "workflows", "ci.yml"), []byte(workflow), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, g.dir, "add", ".gitea")
	runGit(t, g.dir, "commit", "-q", "-m", "ci")
	runGit(t, g.dir, "push", "-q", "origin", "main")
	tok, err := g.srv.RunnerToken(ctx, g.owner, g.repo)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gitearunner.Register(ctx, g.srv.URL, tok, "runner-"+strings.ReplaceAll(g.repo, "/", "-"), []string{"ralphd-ci"})
	if err != nil {
		t.Fatal(err)
	}
	serve, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Serve(serve, 50*time.Millisecond) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the runner: %v", err)
		}
	})
	return r
}

// waitStatus waits until sha's combined status on Gitea is want.
func (g *giteaRepo) waitStatus(t *testing.T, sha, want string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(25 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var s struct {
			State      string `json:"state"`
			TotalCount int    `json:"total_count"`
		}
		if _, err := g.srv.API(context.Background(), g.owner, "GET", "repos/"+g.repo+"/commits/"+sha+"/status", nil, &s); err == nil && s.TotalCount > 0 {
			if last = s.State; last == want {
				return
			}
		}
	}
	t.Fatalf("%s's status is %q, never %q", sha, last, want)
}

// TestGiteaActionsLog: against a real Gitea running a real Actions job
// (the scripted runner runs its steps on the host), a failing job's
// status carries the job's log, read through Gitea's API, its tail
// verbatim; the fix's job passes and the pull request is open again.
func TestGiteaActionsLog(t *testing.T) {
	is := is.New(t)
	g := newGiteaRepo(t, "actions")
	runner := g.actions(t, ciWorkflow)
	ctx := context.Background()

	sha1 := g.push(t, "ralph/bd-1", "a.txt", "bug\n")
	pr, err := g.forge.Open(ctx, "ralph/bd-1", sha1, "main", "bd-1: fix a", "body")
	is.NoErr(err)
	g.waitStatus(t, sha1, "failure")
	st, err := g.forge.Read(ctx, pr.Number, sha1)
	is.NoErr(err)
	t.Logf("evidence:\n%s", st.Evidence)
	is.Equal(st.Verdict, PRChecksFailed)
	is.True(strings.Contains(st.Evidence, `CI check "ci.yml / test (pull_request)": failure`))
	is.True(strings.Contains(st.Evidence, "checking out "+sha1))                              // the runner's checkout, the first step's line
	is.True(strings.Contains(st.Evidence, `--- FAIL: TestA: a.txt says "bug", want "fixed"`)) // the job's log, verbatim
	is.True(strings.Contains(st.Evidence, "Process completed with exit code 1."))
	is.Equal(st.Calls, 3) // the pull request, the status, the job's log (no reviews: CI failed)

	// The fix updates the same pull request; its job passes.
	sha2 := g.push(t, "ralph/bd-1", "a.txt", "fixed\n")
	again, err := g.forge.Open(ctx, "ralph/bd-1", sha2, "main", "bd-1: fix a", "body")
	is.NoErr(err)
	is.Equal(again.Number, pr.Number)
	g.waitStatus(t, sha2, "success")
	st, err = g.forge.Read(ctx, pr.Number, sha2)
	is.NoErr(err)
	is.Equal(st.Verdict, PROpen)
	is.Equal(st.Calls, 3)
	is.Equal(len(runner.Done()), 2) // one job per push

	g.rec.mu.Lock()
	defer g.rec.mu.Unlock()
	logs := 0
	for _, r := range g.rec.reqs {
		if strings.HasSuffix(r, "/logs") {
			logs++
			is.True(strings.HasPrefix(r, "GET /api/v1/repos/"+g.repo+"/actions/jobs/"))
		}
	}
	is.Equal(logs, 1) // only the failing job's
}

// TestGiteaActionsLogNotElsewhere: a failing status whose link looks
// like an Actions job but is another repository's, another server's, or
// not a job at all keeps its description and link; ralphd reads no log
// for it. One that is this repository's job but whose log Gitea does not
// have keeps them too.
func TestGiteaActionsLogNotElsewhere(t *testing.T) {
	is := is.New(t)
	g := newGiteaRepo(t, "elsewhere")
	ctx := context.Background()
	sha := g.push(t, "ralph/bd-1", "a.txt", "bug\n")
	pr, err := g.forge.Open(ctx, "ralph/bd-1", sha, "main", "bd-1", "body")
	is.NoErr(err)
	for i, target := range []string{
		"/someone-else/repo/actions/runs/1/jobs/1",
		"http://ci.example.invalid/" + g.repo + "/actions/runs/1/jobs/1",
		"/" + g.repo + "/actions/runs/1/jobs/x",
		"/" + g.repo + "/actions/runs/1/jobs/999999", // this repository's, no such job
	} {
		_, err := g.srv.API(ctx, g.reviewer, "POST", "repos/"+g.repo+"/statuses/"+sha, map[string]string{
			"state": "failure", "context": fmt.Sprintf("ci/%d", i), "description": "external failure", "target_url": target}, nil)
		is.NoErr(err)
		st, err := g.forge.Read(ctx, pr.Number, sha)
		is.NoErr(err)
		is.Equal(st.Verdict, PRChecksFailed)
		is.True(strings.Contains(st.Evidence, "external failure\n"+target))
	}
	g.rec.mu.Lock()
	defer g.rec.mu.Unlock()
	logs := 0
	for _, r := range g.rec.reqs {
		if strings.HasSuffix(r, "/logs") {
			logs++
		}
	}
	is.Equal(logs, 1) // the last one's, answered 404
}

func TestGiteaActionsJob(t *testing.T) {
	g := &Gitea{URL: "https://git.example.com/sub", Repo: "Acme/Widgets"}
	for _, tc := range []struct {
		target string
		want   int64
	}{
		{"/sub/Acme/Widgets/actions/runs/3/jobs/17", 17},
		{"/sub/acme/widgets/actions/runs/3/jobs/17", 17}, // Gitea's names are case-blind
		{"https://git.example.com/sub/Acme/Widgets/actions/runs/3/jobs/17", 17},
		{"https://git.example.com.evil/sub/Acme/Widgets/actions/runs/3/jobs/17", 0},
		{"https://ci.example.com/sub/Acme/Widgets/actions/runs/3/jobs/17", 0},
		{"/Acme/Widgets/actions/runs/3/jobs/17", 0}, // not below the server's path
		{"/sub/Acme/Other/actions/runs/3/jobs/17", 0},
		{"/sub/Acme/Widgets/actions/runs/3/jobs/17/attempt", 0},
		{"/sub/Acme/Widgets/actions/runs/3/jobs/0", 0},
		{"/sub/Acme/Widgets/actions/runs/3/jobs/-1", 0},
		{"/sub/Acme/Widgets/actions/runs/3/jobs/99999999999999999999", 0},
		{"/sub/Acme/Widgets/actions/runs//jobs/17", 0},
		{"", 0},
		{"http://ci.example.invalid/build/1", 0},
	} {
		got, ok := g.actionsJob(tc.target)
		if got != tc.want || ok != (tc.want > 0) {
			t.Errorf("actionsJob(%q) = %d, %v; want %d", tc.target, got, ok, tc.want)
		}
	}
}

func FuzzGiteaActionsJob(f *testing.F) {
	for _, s := range []string{"/o/r/actions/runs/1/jobs/2", "http://h/o/r/actions/runs/1/jobs/2", "/o/r/actions/runs/a/jobs/b", "%zz"} {
		f.Add(s)
	}
	g := &Gitea{URL: "http://h", Repo: "o/r"}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := g.actionsJob(s)
		if ok && (id <= 0 || !strings.Contains(s, fmt.Sprintf("/jobs/%d", id))) {
			t.Fatalf("actionsJob(%q) = %d", s, id)
		}
	})
}

// TestReadTail: a job's log of any length keeps its last bytes only.
func TestReadTail(t *testing.T) {
	for _, n := range []int{0, 10, 4096, 1 << 20} {
		body := strings.Repeat("x", n) + "the end"
		got, err := readTail(strings.NewReader(body), 100)
		if err != nil || !strings.HasSuffix(string(got), "the end") || len(got) > 100 {
			t.Fatalf("readTail(%d bytes) = %d bytes, %v", len(body), len(got), err)
		}
	}
}

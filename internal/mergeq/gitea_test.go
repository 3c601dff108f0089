package mergeq

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/testkit/giteaserver"
)

// gitea is this test binary's one real Gitea, shared by its tests and
// stopped by TestMain.
var gitea giteaserver.Shared

func TestGiteaBaseURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"git.example.com", "https://git.example.com"},
		{"https://git.example.com/", "https://git.example.com"},
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"https://example.com/gitea/", "https://example.com/gitea"},
		{"", ""},
		{"ftp://git.example.com", ""},
		{"https://user:pw@git.example.com", ""},
		{"https://git.example.com/?a=b", ""},
		{"https://", ""},
	} {
		got, err := GiteaBaseURL(tc.in)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("GiteaBaseURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func FuzzGiteaBaseURL(f *testing.F) {
	for _, s := range []string{"git.example.com", "http://127.0.0.1:3000/", "https://a@b", "x://y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := GiteaBaseURL(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") || strings.HasSuffix(u, "/") || strings.ContainsAny(u, "?#@") {
			t.Fatalf("GiteaBaseURL(%q) = %q", s, u)
		}
	})
}

// giteaRecorder records the requests ralphd's Gitea forge makes.
type giteaRecorder struct {
	mu   sync.Mutex
	reqs []string
}

func (r *giteaRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// giteaRepo is a repository on the shared Gitea owned by ralphd's
// account, with a reviewer (write access) and the agent (read access):
// a clone at dir with main and ralph/<issue> pushed.
type giteaRepo struct {
	srv                   *giteaserver.Server
	repo, dir             string
	owner, reviewer, agnt string // tokens
	forge                 *Gitea
	rec                   *giteaRecorder
}

func newGiteaRepo(t *testing.T, name string) *giteaRepo {
	t.Helper()
	srv := gitea.Get(t)
	ctx := context.Background()
	g := &giteaRepo{srv: srv, rec: &giteaRecorder{}}
	var err error
	for _, u := range []struct {
		tok  *string
		name string
	}{{&g.owner, "ralphd-" + name}, {&g.reviewer, "reviewer-" + name}, {&g.agnt, "agent-" + name}} {
		if *u.tok, err = srv.User(ctx, u.name); err != nil {
			t.Fatal(err)
		}
	}
	g.repo = "ralphd-" + name + "/" + name
	clone, err := srv.Repo(ctx, "ralphd-"+name, g.owner, name)
	if err != nil {
		t.Fatal(err)
	}
	for user, perm := range map[string]string{"reviewer-" + name: "write", "agent-" + name: "read"} {
		if err := srv.Collaborator(ctx, g.owner, g.repo, user, perm); err != nil {
			t.Fatal(err)
		}
	}
	g.dir = t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"remote", "add", "origin", clone},
		{"commit", "-q", "--allow-empty", "-m", "base"},
		{"push", "-q", "origin", "main"},
	} {
		runGit(t, g.dir, args...)
	}
	g.forge = &Gitea{URL: srv.URL, Repo: g.repo, Token: g.owner, Client: &http.Client{Transport: g.rec}}
	return g
}

// push commits file=body on branch and pushes it, returning the commit.
func (g *giteaRepo) push(t *testing.T, branch, file, body string) string {
	t.Helper()
	runGit(t, g.dir, "checkout", "-q", "-B", branch, "origin/main")
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, g.dir, "add", file)
	runGit(t, g.dir, "commit", "-q", "-m", "work on "+file)
	runGit(t, g.dir, "push", "-q", "-f", "origin", branch)
	runGit(t, g.dir, "fetch", "-q", "origin")
	sha := strings.TrimSpace(runGit(t, g.dir, "rev-parse", "HEAD"))
	// Gitea takes in a push's branches after the push ends (its hooks
	// queue the work): wait until its API has the branch at sha.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var b struct{ Commit struct{ ID string } }
		if _, err := g.srv.API(context.Background(), g.owner, "GET", "repos/"+g.repo+"/branches/"+branch, nil, &b); err == nil && b.Commit.ID == sha {
			return sha
		}
		if time.Now().After(deadline) {
			t.Fatalf("Gitea never had %s at %s", branch, sha)
		}
	}
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// TestGiteaForge: against a real Gitea on loopback, ralphd's forge
// opens one pull request per branch (again: the same one), and reads
// what people and CI made of it: open, a failing commit status (its
// description verbatim), a review requesting changes of the head commit
// (its body and line comments verbatim; one of an older commit is not
// acted on), merged by the reviewer, closed without a merge. The agent's
// account (read access) cannot merge or approve; ralphd's forge never
// asks to.
func TestGiteaForge(t *testing.T) {
	is := is.New(t)
	g := newGiteaRepo(t, "forge")
	ctx := context.Background()
	sha1 := g.push(t, "ralph/bd-1", "a.txt", "bug\n")
	pr, err := g.forge.Open(ctx, "ralph/bd-1", sha1, "main", "bd-1: fix a", "acceptance: a.txt says fixed")
	is.NoErr(err)
	is.True(pr.Number > 0 && strings.HasPrefix(pr.URL, g.srv.URL+"/"))
	again, err := g.forge.Open(ctx, "ralph/bd-1", sha1, "main", "bd-1: fix a", "body")
	is.NoErr(err)
	is.Equal(again, pr) // found, not opened twice
	var got struct {
		Title, Body string
	}
	_, err = g.srv.API(ctx, g.owner, "GET", fmt.Sprintf("repos/%s/pulls/%d", g.repo, pr.Number), nil, &got)
	is.NoErr(err)
	is.Equal(got.Body, "acceptance: a.txt says fixed")

	st, err := g.forge.Read(ctx, pr.Number, sha1)
	is.NoErr(err)
	is.Equal(st.Verdict, PROpen)
	is.Equal(st.Calls, 3) // the pull request, the commit's status, the reviews

	// CI: a failing status on the head commit, set by the CI's account.
	const ciLog = "--- FAIL: TestA (0.00s)\n    a_test.go:9: got \"bug\", want \"fixed\""
	_, err = g.srv.API(ctx, g.reviewer, "POST", "repos/"+g.repo+"/statuses/"+sha1, map[string]string{
		"state": "failure", "context": "ci/test", "description": ciLog, "target_url": "http://ci.example.invalid/1"}, nil)
	is.NoErr(err)
	st, err = g.forge.Read(ctx, pr.Number, sha1)
	is.NoErr(err)
	is.Equal(st.Verdict, PRChecksFailed)
	is.True(strings.Contains(st.Evidence, `CI check "ci/test": failure`))
	is.True(strings.Contains(st.Evidence, ciLog)) // verbatim
	is.True(strings.Contains(st.Evidence, "http://ci.example.invalid/1"))

	// The next attempt's commit: the same pull request, CI not yet run.
	sha2 := g.push(t, "ralph/bd-1", "a.txt", "fixed?\n")
	again, err = g.forge.Open(ctx, "ralph/bd-1", sha2, "main", "bd-1: fix a", "body")
	is.NoErr(err)
	is.Equal(again.Number, pr.Number)
	st, err = g.forge.Read(ctx, pr.Number, sha2)
	is.NoErr(err)
	is.Equal(st.Verdict, PROpen) // the failure was sha1's

	// A review of sha2 requesting changes, with a line comment.
	_, err = g.srv.API(ctx, g.reviewer, "POST", fmt.Sprintf("repos/%s/pulls/%d/reviews", g.repo, pr.Number), map[string]any{
		"event": "REQUEST_CHANGES", "body": "Please make it say fixed.", "commit_id": sha2,
		"comments": []map[string]any{{"path": "a.txt", "body": "This still has a question mark.", "new_position": 1}}}, nil)
	is.NoErr(err)
	st, err = g.forge.Read(ctx, pr.Number, sha2)
	is.NoErr(err)
	is.Equal(st.Verdict, PRChangesRequested)
	is.True(strings.Contains(st.Evidence, "review by reviewer-forge requests changes:\nPlease make it say fixed."))
	is.True(strings.Contains(st.Evidence, "a.txt:1:\nThis still has a question mark."))
	is.Equal(st.Calls, 4) // and the review's comments

	// The fix: a review of an older commit is not acted on.
	sha3 := g.push(t, "ralph/bd-1", "a.txt", "fixed\n")
	st, err = g.forge.Read(ctx, pr.Number, sha3)
	is.NoErr(err)
	is.Equal(st.Verdict, PROpen)

	// The agent's account (read access) can neither merge nor approve.
	merge := fmt.Sprintf("repos/%s/pulls/%d/merge", g.repo, pr.Number)
	status, err := g.srv.API(ctx, g.agnt, "POST", merge, map[string]string{"Do": "merge"}, nil)
	t.Logf("the agent's merge: %v", err)
	is.Equal(status, http.StatusMethodNotAllowed) // Gitea's answer to a merge the user may not make
	is.True(strings.Contains(err.Error(), "not allowed to merge"))
	status, err = g.srv.API(ctx, g.agnt, "POST", fmt.Sprintf("repos/%s/pulls/%d/reviews", g.repo, pr.Number), map[string]string{"event": "APPROVED", "body": "lgtm", "commit_id": sha3}, nil)
	t.Logf("the agent's approval: HTTP %d %v", status, err)
	var reviews []struct {
		User     struct{ Login string }
		State    string
		Official bool
	}
	_, err = g.srv.API(ctx, g.owner, "GET", fmt.Sprintf("repos/%s/pulls/%d/reviews", g.repo, pr.Number), nil, &reviews)
	is.NoErr(err)
	for _, r := range reviews {
		if r.User.Login == "agent-forge" {
			is.True(!r.Official) // Gitea takes it as a comment: no approval that counts
		}
	}
	st, err = g.forge.Read(ctx, pr.Number, sha3)
	is.NoErr(err)
	is.Equal(st.Verdict, PROpen) // nothing merged

	// The reviewer merges.
	is.NoErr(g.srv.Merge(ctx, g.reviewer, g.repo, pr.Number))
	st, err = g.forge.Read(ctx, pr.Number, sha3)
	is.NoErr(err)
	is.Equal(st.Verdict, PRMerged)
	is.Equal(st.Calls, 1)
	settled, err := g.forge.Open(ctx, "ralph/bd-1", sha3, "main", "t", "b")
	is.NoErr(err)
	is.Equal(settled.Number, pr.Number) // merged at this very work: not opened again

	// Another pull request, closed without a merge.
	sha4 := g.push(t, "ralph/bd-2", "b.txt", "b\n")
	pr2, err := g.forge.Open(ctx, "ralph/bd-2", sha4, "main", "bd-2: b", "b")
	is.NoErr(err)
	is.True(pr2.Number != pr.Number)
	_, err = g.srv.API(ctx, g.reviewer, "PATCH", fmt.Sprintf("repos/%s/pulls/%d", g.repo, pr2.Number), map[string]string{"state": "closed"}, nil)
	is.NoErr(err)
	st, err = g.forge.Read(ctx, pr2.Number, sha4)
	is.NoErr(err)
	is.Equal(st.Verdict, PRClosed)
	// A new attempt after the close opens a new pull request.
	sha5 := g.push(t, "ralph/bd-2", "b.txt", "b2\n")
	pr3, err := g.forge.Open(ctx, "ralph/bd-2", sha5, "main", "bd-2: b", "b")
	is.NoErr(err)
	is.True(pr3.Number != pr2.Number)
	again, err = g.forge.Open(ctx, "ralph/bd-2", sha5, "main", "bd-2: b", "b")
	is.NoErr(err)
	is.Equal(again.Number, pr3.Number) // the open one, not the closed one, nor a third

	// A merged pull request and the next attempt's work on its branch (a
	// dependent issue reopened it): a new pull request, not the merged.
	sha6 := g.push(t, "ralph/bd-1", "a.txt", "fixed again\n")
	pr4, err := g.forge.Open(ctx, "ralph/bd-1", sha6, "main", "bd-1: again", "b")
	is.NoErr(err)
	is.True(pr4.Number != pr.Number)
	st, err = g.forge.Read(ctx, pr4.Number, sha6)
	is.NoErr(err)
	is.Equal(st.Verdict, PROpen) // not merged

	g.rec.mu.Lock()
	defer g.rec.mu.Unlock()
	for _, r := range g.rec.reqs {
		is.True(!strings.HasSuffix(r, "/merge"))                                     // ralphd never merges
		is.True(!(strings.HasPrefix(r, "POST") && strings.HasSuffix(r, "/reviews"))) // nor reviews
	}
}

// TestGiteaForgeDown: a Gitea that does not answer, or answers 404, or
// refuses ralphd's token, is an error (the pool waits it out), never a
// verdict.
func TestGiteaForgeDown(t *testing.T) {
	srv := gitea.Get(t)
	// A server that takes connections and never answers.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	for _, tc := range []struct {
		name string
		g    *Gitea
	}{
		{"no server", &Gitea{URL: "http://127.0.0.1:1", Repo: "o/r", Token: "x"}},
		{"no answer", &Gitea{URL: "http://" + mute.Addr().String(), Repo: "o/r", Token: "x", Timeout: 200 * time.Millisecond}},
		{"not found", &Gitea{URL: srv.URL + "/no-such-prefix", Repo: "o/r", Token: srv.AdminToken}},
		{"bad token", &Gitea{URL: srv.URL, Repo: "o/r", Token: "not-a-token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.g.Read(context.Background(), 1, "abc")
			if err == nil || st.Verdict != PROpen {
				t.Fatalf("Read = %+v, %v; want an error", st, err)
			}
			if _, err := tc.g.Open(context.Background(), "ralph/x", "abc", "main", "t", "b"); err == nil {
				t.Fatal("Open succeeded")
			}
		})
	}
}

// TestGiteaConditional: a server that sends ETags (a Forgejo, a caching
// proxy; Gitea 1.27 does not on these endpoints) gets every read again
// with If-None-Match, and its 304s are answered from the cache and
// counted. The token goes in every request, and no other header leaks
// it.
func TestGiteaConditional(t *testing.T) {
	is := is.New(t)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("If-None-Match")+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		etag := `"` + r.URL.Path + `"`
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		switch {
		case strings.HasSuffix(r.URL.Path, "/pulls/7"):
			fmt.Fprint(w, `{"number":7,"state":"open","head":{"ref":"ralph/x","sha":"abc"}}`)
		case strings.HasSuffix(r.URL.Path, "/status"):
			fmt.Fprint(w, `{"statuses":[{"context":"ci","status":"failure","description":"boom"}]}`)
		default:
			fmt.Fprint(w, `[]`)
		}
	}))
	defer srv.Close()
	g := &Gitea{URL: srv.URL, Repo: "o/r", Token: "tok"}
	first, err := g.Read(context.Background(), 7, "abc")
	is.NoErr(err)
	is.Equal(first.Verdict, PRChecksFailed)
	is.Equal(first.NotModified, 0)
	again, err := g.Read(context.Background(), 7, "abc")
	is.NoErr(err)
	is.Equal(again.Verdict, PRChecksFailed) // from the cache
	is.Equal(again.Evidence, first.Evidence)
	is.Equal(again.Calls, 2)
	is.Equal(again.NotModified, 2)
	mu.Lock()
	defer mu.Unlock()
	is.Equal(seen, []string{
		"GET /api/v1/repos/o/r/pulls/7  token tok",
		"GET /api/v1/repos/o/r/commits/abc/status  token tok",
		`GET /api/v1/repos/o/r/pulls/7 "/api/v1/repos/o/r/pulls/7" token tok`,
		`GET /api/v1/repos/o/r/commits/abc/status "/api/v1/repos/o/r/commits/abc/status" token tok`,
	})
}

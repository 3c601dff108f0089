package modes

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/mergeq"
	"github.com/ralphd/ralphd/internal/testkit/giteaserver"
)

// giteaSrv is this test binary's one real Gitea, shared by its tests and
// stopped by TestMain.
var giteaSrv giteaserver.Shared

// giteaPull is the part of a Gitea pull request the reviewer reads.
type giteaPull struct {
	Number int
	Title  string
	Body   string
	State  string
	Merged bool
	Head   struct {
		Ref string
		SHA string
	}
}

// giteaTeam makes, on srv, owner's repository widgets with writer (who
// may merge) and reader (read access only, as an agent's account would
// have) as collaborators. It returns each account's token, the
// repository's name and its clone URL.
func giteaTeam(t *testing.T, srv *giteaserver.Server, owner, writer, reader string) (tokens map[string]string, repo, clone string) {
	t.Helper()
	is := is.New(t)
	ctx := context.Background()
	tokens = map[string]string{}
	for _, u := range []string{owner, writer, reader} {
		tok, err := srv.User(ctx, u)
		is.NoErr(err)
		tokens[u] = tok
	}
	repo = owner + "/widgets"
	clone, err := srv.Repo(ctx, owner, tokens[owner], "widgets")
	is.NoErr(err)
	is.NoErr(srv.Collaborator(ctx, tokens[owner], repo, writer, "write"))
	is.NoErr(srv.Collaborator(ctx, tokens[owner], repo, reader, "read"))
	return tokens, repo, clone
}

// TestGiteaPullRequestScenarios: integrate = pr on a real Gitea on
// loopback. The blocker's work is pushed to ralph/<id> on Gitea and its
// pull request opened with the issue's evidence; the dependent waits; a
// failing commit status (or a reviewer's review requesting changes)
// reopens the blocker with the evidence verbatim; the agent, with the
// token of an account that may only read, tries to merge and to approve
// its own pull request over the network: refused; its fix updates the
// same pull request; the reviewer (a second account, with write access)
// merges it; the blocker counts as integrated and the dependent starts
// from the merged main.
func TestGiteaPullRequestScenarios(t *testing.T) {
	const ciLog = "--- FAIL: TestA (0.00s)\n    a_test.go:9: got \"bug\", want \"fixed\""
	for i, tc := range []struct {
		name     string
		feedback func(ctx context.Context, srv *giteaserver.Server, repo, reviewer string, pr giteaPull) error
		evidence []string
	}{
		{"ci fails", func(ctx context.Context, srv *giteaserver.Server, repo, reviewer string, pr giteaPull) error {
			_, err := srv.API(ctx, reviewer, "POST", "repos/"+repo+"/statuses/"+pr.Head.SHA, map[string]string{"state": "failure", "context": "ci/test", "description": ciLog}, nil)
			return err
		}, []string{`CI check "ci/test": failure`, ciLog}},
		{"changes requested", func(ctx context.Context, srv *giteaserver.Server, repo, reviewer string, pr giteaPull) error {
			_, err := srv.API(ctx, reviewer, "POST", fmt.Sprintf("repos/%s/pulls/%d/reviews", repo, pr.Number), map[string]any{
				"event": "REQUEST_CHANGES", "body": "Please fix the bug before merging.", "commit_id": pr.Head.SHA,
				"comments": []map[string]any{{"path": "a.txt", "body": "This still says bug.", "new_position": 1}}}, nil)
			return err
		}, []string{"requests changes:\nPlease fix the bug before merging.", "a.txt:1:\nThis still says bug."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			srv := giteaSrv.Get(t)
			ctx := context.Background()
			n := fmt.Sprint("s", i)
			owner, reviewerName, agentName := "ralphd-"+n, "reviewer-"+n, "agent-"+n
			tokens, repo, clone := giteaTeam(t, srv, owner, reviewerName, agentName)

			var blocker, dependent string
			var mu sync.Mutex
			notesSeen, depSaw := "", ""
			depAfterMerge, merged := false, false
			var agentTried []int // the statuses the agent's merge and approval got
			p := newProject(t)
			sh(t, p.repo, "git", "remote", "add", "origin", clone)
			sh(t, p.repo, "git", "push", "-q", "origin", "main")
			sh(t, p.repo, "git", "fetch", "-q", "origin")
			pool := p.pool(2, func(ctx context.Context, a Assignment) (bool, error) {
				body := "fixed\n"
				switch {
				case a.Issue.ID == blocker && a.Attempt == 1:
					body = "bug\n"
				case a.Issue.ID == blocker:
					mu.Lock()
					notesSeen = sh(t, a.Dir, p.bd, "show", blocker, "--json")
					mu.Unlock()
					// The agent goes for its own pull request with the
					// only token it could come by.
					var open []giteaPull
					if _, err := srv.API(ctx, tokens[agentName], "GET", "repos/"+repo+"/pulls?state=open", nil, &open); err == nil {
						for _, pr := range open {
							s1, _ := srv.API(ctx, tokens[agentName], "POST", fmt.Sprintf("repos/%s/pulls/%d/merge", repo, pr.Number), map[string]string{"Do": "merge"}, nil)
							_, _ = srv.API(ctx, tokens[agentName], "POST", fmt.Sprintf("repos/%s/pulls/%d/reviews", repo, pr.Number), map[string]string{"event": "APPROVED", "body": "lgtm"}, nil)
							mu.Lock()
							agentTried = append(agentTried, s1)
							mu.Unlock()
						}
					}
				case a.Issue.ID == dependent:
					b, _ := os.ReadFile(filepath.Join(a.Dir, "a.txt"))
					mu.Lock()
					depSaw, depAfterMerge = string(b), merged
					mu.Unlock()
					body = ""
				}
				file := "a.txt"
				if body == "" {
					file, body = "b.txt", "b\n"
				}
				if err := os.WriteFile(filepath.Join(a.Dir, file), []byte(body), 0o644); err != nil {
					return false, err
				}
				return commitAndClose(ctx, a)
			})
			// The pool's events, for a failure's story.
			pool.Log = func(e Event) { t.Logf("%s %s %s %s", e.Worker, e.Issue, e.Kind, e.Detail) }
			ralphdSent := &sentRequests{}
			s, err := mergeq.LookupStrategy("pr")
			is.NoErr(err)
			pool.ReviewPoll = 50 * time.Millisecond
			pool.Checks = "verify: go test ./..."
			pool.Queue = &mergeq.Queue{Repo: p.repo, Target: "main", Remote: "origin", Strategy: s,
				Forge: &mergeq.Gitea{URL: srv.URL, Repo: repo, Token: tokens[owner], Client: &http.Client{Transport: ralphdSent}}}
			blocker = p.create("fix a", "--acceptance", "a.txt says fixed")
			dependent = p.create("build on a", "--deps", blocker)

			// The reviewer (and CI): on each new head of an open pull
			// request, feedback on the blocker's first, else a merge.
			done := make(chan struct{})
			reviewed := make(chan struct{})
			var firstBody string
			go func() {
				defer close(reviewed)
				heads := map[int][]string{}
				for {
					select {
					case <-done:
						return
					case <-time.After(30 * time.Millisecond):
					}
					var open []giteaPull
					if _, err := srv.API(ctx, tokens[reviewerName], "GET", "repos/"+repo+"/pulls?state=open", nil, &open); err != nil {
						continue
					}
					for _, pr := range open {
						hs := heads[pr.Number]
						if len(hs) > 0 && hs[len(hs)-1] == pr.Head.SHA {
							continue
						}
						heads[pr.Number] = append(hs, pr.Head.SHA)
						if strings.HasPrefix(pr.Title, blocker) && len(heads[pr.Number]) == 1 {
							firstBody = pr.Body
							if err := tc.feedback(ctx, srv, repo, tokens[reviewerName], pr); err != nil {
								t.Error(err)
							}
							continue
						}
						time.Sleep(150 * time.Millisecond) // the pool reads the open pull request meanwhile
						mu.Lock()
						merged = merged || strings.HasPrefix(pr.Title, blocker)
						mu.Unlock()
						if err := srv.Merge(ctx, tokens[reviewerName], repo, pr.Number); err != nil {
							t.Error(err)
						}
					}
				}
			}()
			runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			sum, err := pool.Run(runCtx)
			close(done)
			<-reviewed
			is.NoErr(err)

			t.Logf("integrated %v, failed %v, stuck %v", sum.Integrated, sum.Failed, sum.Stuck)
			is.Equal(len(sum.Integrated), 2)      // both merged by the reviewer
			is.Equal(len(sum.Failed[blocker]), 1) // the feedback was one failed attempt
			for _, e := range tc.evidence {
				is.True(strings.Contains(sum.Failed[blocker][0], e))                                                   // verbatim
				is.True(strings.Contains(notesSeen, strings.ReplaceAll(strings.ReplaceAll(e, `"`, `\"`), "\n", `\n`))) // in the note the next attempt read
			}
			var all []giteaPull
			_, err = srv.API(ctx, tokens[owner], "GET", "repos/"+repo+"/pulls?state=all", nil, &all)
			is.NoErr(err)
			is.Equal(len(all), 2) // the fix updated the same pull request
			slices.SortFunc(all, func(a, b giteaPull) int { return a.Number - b.Number })
			is.True(strings.HasPrefix(all[0].Title, blocker+": fix a"))
			is.Equal(all[0].Head.Ref, "ralph/"+blocker)
			is.True(all[0].Merged && all[1].Merged)
			for _, want := range []string{blocker, "a.txt says fixed", "done, tests pass", "verify: go test ./...", "attempt 1"} {
				is.True(strings.Contains(firstBody, want)) // the issue's evidence
			}
			is.Equal(depSaw, "fixed\n") // the dependent started from the merged main
			is.True(depAfterMerge)
			mu.Lock()
			is.True(len(agentTried) >= 1)
			for _, st := range agentTried {
				is.Equal(st, http.StatusMethodNotAllowed) // the agent's merge: "User not allowed to merge PR"
			}
			mu.Unlock()
			var reviews []struct {
				User     struct{ Login string }
				State    string
				Official bool
			}
			_, err = srv.API(ctx, tokens[owner], "GET", fmt.Sprintf("repos/%s/pulls/%d/reviews", repo, all[0].Number), nil, &reviews)
			is.NoErr(err)
			approvals := 0
			for _, r := range reviews {
				if r.User.Login == agentName {
					is.True(!r.Official) // the agent's approval counts for nothing
				}
				if r.State == "APPROVED" && r.Official {
					approvals++
				}
			}
			is.Equal(approvals, 0) // no approval that counts: a person merged
			ralphdSent.mu.Lock()
			defer ralphdSent.mu.Unlock()
			is.True(len(ralphdSent.reqs) > 0)
			for _, r := range ralphdSent.reqs {
				is.True(!strings.HasSuffix(r, "/merge"))                                    // ralphd never merges
				is.True(!(strings.HasPrefix(r, "POST") && strings.Contains(r, "/reviews"))) // nor reviews
			}
		})
	}
}

// TestGiteaForgeConfig: forge = gitea opens pull requests on forge_host
// with the token in ralphd's own environment, which no agent's
// environment has; without the token, or the host, the pool refuses to
// start, saying what to set.
func TestGiteaForgeConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		ours []string // ralphd's environment
		err  string
	}{
		{"gitea", map[string]string{"RALPH_FORGE": "gitea", "RALPH_FORGE_HOST": "http://127.0.0.1:3000/"}, []string{"GITEA_TOKEN=secret"}, ""},
		{"no token", map[string]string{"RALPH_FORGE": "gitea", "RALPH_FORGE_HOST": "git.example.com"}, nil, "export GITEA_TOKEN"},
		{"no host", map[string]string{"RALPH_FORGE": "gitea"}, []string{"GITEA_TOKEN=secret"}, "needs forge_host"},
		{"github", map[string]string{}, []string{"GITEA_TOKEN=secret"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			tc.env["RALPH_INTEGRATE"], tc.env["RALPH_FORGE_REPO"] = "pr", "acme/widgets"
			cfg, err := config.Load(config.Loader{Getenv: func(k string) string { return tc.env[k] }})
			is.NoErr(err)
			l := &Loop{Deps: Deps{Config: cfg, Env: tc.ours}}
			f, err := l.forge()
			if tc.err != "" {
				is.True(err != nil && strings.Contains(err.Error(), tc.err))
				return
			}
			is.NoErr(err)
			if tc.env["RALPH_FORGE"] == "gitea" {
				g, ok := f.(*mergeq.Gitea)
				is.True(ok)
				is.Equal(g.URL, "http://127.0.0.1:3000")
				is.Equal(g.Token, "secret")
				is.Equal(g.Repo, "acme/widgets")
			} else {
				_, ok := f.(*mergeq.GitHub)
				is.True(ok)
			}
			// No agent sees the token, by any of its names.
			for _, v := range []string{mergeq.GiteaTokenEnv, "GITEA_SERVER_TOKEN", "FORGEJO_TOKEN"} {
				is.True(slices.Contains(agent.ForgeTokenEnv, v))
				for _, kv := range agent.Env([]string{v + "=secret", "PATH=/usr/bin"}, "", nil) {
					is.True(!strings.Contains(kv, "secret"))
				}
			}
		})
	}
}

// sentRequests records the requests ralphd's Gitea forge sends.
type sentRequests struct {
	mu   sync.Mutex
	reqs []string
}

func (r *sentRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

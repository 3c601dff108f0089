package modes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/mergeq"
	"github.com/ralphd/ralphd/internal/testkit/gitearunner"
)

// TestGiteaActionsAndApprovals: integrate = pr on a real Gitea whose
// CI is a real Gitea Actions workflow (the scripted runner runs its steps
// on the host), and whose main is protected as docs/review.md's team
// set-up says: one official approval, the workflow's check, stale
// approvals dismissed, no pushes. The agent's first work fails CI: the
// issue is reopened with the job's log tail verbatim, in its note and
// in what the next attempt read. Its fix updates the same pull request
// and passes. Then the agent's account (read access only) approves: the
// pull request still cannot be merged, and ralphd still waits; the
// maintainer's approval makes it mergeable (ralphd still waits), the
// maintainer merges, and only then does the issue count as integrated.
func TestGiteaActionsAndApprovals(t *testing.T) {
	is := is.New(t)
	srv := giteaSrv.Get(t)
	ctx := context.Background()
	owner, maintainer, agentName := "ralphd-ci", "maintainer-ci", "agent-ci"
	tokens, repo, clone := giteaTeam(t, srv, owner, maintainer, agentName)

	p := newProject(t)
	is.NoErr(os.MkdirAll(filepath.Join(p.repo, ".gitea", "workflows"), 0o755))
	is.NoErr(os.WriteFile(filepath.Join(p.repo, ".gitea", "workflows", "ci.yml"), []byte(`on: pull_request
jobs:
  test:
    runs-on: ralphd-ci
    steps:
      - run: echo "=== RUN   TestA"
      - run: |
          if grep -qx fixed a.txt; then echo "--- PASS: TestA"; else echo "--- FAIL: TestA: a.txt says \"$(cat a.txt)\", want \"fixed\""; exit 1; fi
`), 0o644))
	sh(t, p.repo, "git", "add", ".gitea")
	sh(t, p.repo, "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "ci")
	sh(t, p.repo, "git", "remote", "add", "origin", clone)
	sh(t, p.repo, "git", "push", "-q", "origin", "main")
	sh(t, p.repo, "git", "fetch", "-q", "origin")
	// The team set-up's protection of main, as docs/review.md gives it.
	_, err := srv.API(ctx, tokens[owner], "POST", "repos/"+repo+"/branch_protections", docsProtection(t), nil)
	is.NoErr(err)

	regToken, err := srv.RunnerToken(ctx, tokens[owner], repo)
	is.NoErr(err)
	runner, err := gitearunner.Register(ctx, srv.URL, regToken, "runner-ci", []string{"ralphd-ci"})
	is.NoErr(err)
	serve, stopRunner := context.WithCancel(ctx)
	runnerDone := make(chan error, 1)
	go func() { runnerDone <- runner.Serve(serve, 50*time.Millisecond) }()
	defer func() {
		stopRunner()
		is.NoErr(<-runnerDone)
	}()

	var mu sync.Mutex
	var notesSeen string
	var issue string
	pool := p.pool(1, func(ctx context.Context, a Assignment) (bool, error) {
		body := "bug\n"
		if a.Attempt > 1 {
			body = "fixed\n"
			mu.Lock()
			notesSeen = sh(t, a.Dir, p.bd, "show", a.Issue.ID, "--json")
			mu.Unlock()
		}
		if err := os.WriteFile(filepath.Join(a.Dir, "a.txt"), []byte(body), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	s, err := mergeq.LookupStrategy("pr")
	is.NoErr(err)
	pool.ReviewPoll = 50 * time.Millisecond
	ralphdSent := &sentRequests{}
	pool.Queue = &mergeq.Queue{Repo: p.repo, Target: "main", Remote: "origin", Strategy: s,
		Forge: &mergeq.Gitea{URL: srv.URL, Repo: repo, Token: tokens[owner], Client: &http.Client{Transport: ralphdSent}}}
	issue = p.create("fix a", "--acceptance", "a.txt says fixed")

	// The people: once a head's CI has passed, the agent's account
	// approves and the maintainer tries to merge (refused: no approval
	// that counts), ralphd is seen still waiting; then the maintainer
	// approves and merges.
	runDone := make(chan struct{})
	people := make(chan struct{})
	var refused string
	var waitedAfterAgentApproval, waitedAfterApproval, merged bool
	go func() {
		defer close(people)
		for !merged {
			select {
			case <-runDone:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var open []giteaPull
			if _, err := srv.API(ctx, tokens[maintainer], "GET", "repos/"+repo+"/pulls?state=open", nil, &open); err != nil {
				continue
			}
			for _, pr := range open {
				var status struct{ State string }
				if _, err := srv.API(ctx, tokens[maintainer], "GET", "repos/"+repo+"/commits/"+pr.Head.SHA+"/status", nil, &status); err != nil || status.State != "success" {
					continue
				}
				_, err := srv.API(ctx, tokens[agentName], "POST", fmt.Sprintf("repos/%s/pulls/%d/reviews", repo, pr.Number), map[string]string{"event": "APPROVED", "body": "lgtm", "commit_id": pr.Head.SHA}, nil)
				if err != nil {
					t.Errorf("the agent's approval: %v", err)
				}
				err = srv.Merge(ctx, tokens[maintainer], repo, pr.Number)
				if err == nil {
					t.Errorf("merged with the agent's approval only")
					merged = true
					return
				}
				mu.Lock()
				refused = err.Error()
				mu.Unlock()
				select { // ralphd goes on waiting meanwhile
				case <-runDone:
				case <-time.After(300 * time.Millisecond):
					waitedAfterAgentApproval = true
				}
				if _, err := srv.API(ctx, tokens[maintainer], "POST", fmt.Sprintf("repos/%s/pulls/%d/reviews", repo, pr.Number), map[string]string{"event": "APPROVED", "body": "ship it", "commit_id": pr.Head.SHA}, nil); err != nil {
					t.Errorf("the maintainer's approval: %v", err)
				}
				select { // approved is not merged: ralphd still waits
				case <-runDone:
				case <-time.After(300 * time.Millisecond):
					waitedAfterApproval = true
				}
				if err := srv.Merge(ctx, tokens[maintainer], repo, pr.Number); err != nil {
					t.Errorf("the maintainer's merge: %v", err)
				}
				merged = true
				break
			}
		}
	}()
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	sum, err := pool.Run(runCtx)
	close(runDone)
	<-people
	is.NoErr(err)

	is.Equal(len(sum.Integrated), 1)
	is.Equal(len(sum.Failed[issue]), 1) // CI's failure was one failed attempt
	const failLine = `--- FAIL: TestA: a.txt says "bug", want "fixed"`
	for _, e := range []string{`CI check "ci.yml / test (pull_request)": failure`, "=== RUN   TestA", failLine, "Process completed with exit code 1."} {
		is.True(strings.Contains(sum.Failed[issue][0], e)) // the job's log, verbatim
	}
	is.True(strings.Contains(notesSeen, strings.ReplaceAll(failLine, `"`, `\"`))) // in the note the next attempt read
	is.True(strings.Contains(refused, "Does not have enough approvals"))          // the agent's approval did not count
	is.True(waitedAfterAgentApproval)                                             // nor did ralphd count the issue integrated
	is.True(waitedAfterApproval)                                                  // nor before the merge

	var all []giteaPull
	_, err = srv.API(ctx, tokens[owner], "GET", "repos/"+repo+"/pulls?state=all", nil, &all)
	is.NoErr(err)
	is.Equal(len(all), 1) // the fix updated the same pull request
	is.True(all[0].Merged)
	is.Equal(len(runner.Done()), 2) // one job per pushed head
	ralphdSent.mu.Lock()
	defer ralphdSent.mu.Unlock()
	logs := 0
	for _, r := range ralphdSent.reqs {
		is.True(!strings.HasSuffix(r, "/merge"))                                    // ralphd never merges
		is.True(!(strings.HasPrefix(r, "POST") && strings.Contains(r, "/reviews"))) // nor reviews
		if strings.HasSuffix(r, "/logs") {
			logs++
		}
	}
	is.True(logs >= 1)
}

// docsProtection is the branch protection docs/review.md's team set-up
// gives Gitea (its curl command's body), so that the test runs the
// documented settings.
func docsProtection(t *testing.T) json.RawMessage {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "review.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`branch_protections \\\n\s+-d '([^']+)'`).FindSubmatch(doc)
	if m == nil || !json.Valid(m[1]) {
		t.Fatal("docs/review.md has no curl command with a JSON body for .../branch_protections")
	}
	return m[1]
}

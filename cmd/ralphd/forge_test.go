package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ralphd/ralphd/internal/testkit/giteaserver"
	"github.com/ralphd/ralphd/internal/testkit/scriptedgh"
)

// forges are the scripted GitHubs the scenarios started, by script.
var forges sync.Map // *testscript.TestScript → *scriptedgh.Server

// cmdScriptedGH plays GitHub for a scenario (internal/testkit/scriptedgh):
//
//	scriptedgh start VAR TOKEN...   serve o/r on loopback, VAR its URL and VAR_HOSTPORT its address; each TOKEN may merge and approve
//	scriptedgh open BRANCH          open a pull request from BRANCH into main
//	scriptedgh requests             print every request answered: METHOD PATH STATUS token=TOKEN
//	[!] scriptedgh merged           some pull request is merged (with !: none is)
func cmdScriptedGH(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: scriptedgh start|open|requests|merged ...")
	}
	if args[0] == "start" {
		if neg || len(args) < 3 {
			ts.Fatalf("usage: scriptedgh start VAR TOKEN...")
		}
		s := &scriptedgh.Server{Owner: "o", Repo: "r", Reviewers: args[2:]}
		s.Start()
		ts.Defer(s.Close)
		forges.Store(ts, s)
		ts.Defer(func() { forges.Delete(ts) })
		ts.Setenv(args[1], s.URL())
		ts.Setenv(args[1]+"_HOSTPORT", strings.TrimPrefix(s.URL(), "http://"))
		return
	}
	v, ok := forges.Load(ts)
	if !ok {
		ts.Fatalf("scriptedgh %s before scriptedgh start", args[0])
	}
	s := v.(*scriptedgh.Server)
	switch args[0] {
	case "open":
		if neg || len(args) != 2 {
			ts.Fatalf("usage: scriptedgh open BRANCH")
		}
		pr := s.Open(args[1], "main", args[1])
		fmt.Fprintf(ts.Stdout(), "#%d\n", pr.Number)
	case "requests":
		for _, r := range s.Requests() {
			fmt.Fprintf(ts.Stdout(), "%s %s %d token=%s\n", r.Method, r.Path, r.Status, r.Token)
		}
	case "merged":
		merged := 0
		for _, p := range s.Pulls() {
			if p.Merged {
				merged++
			}
		}
		if (merged > 0) == neg {
			ts.Fatalf("%d pull requests merged", merged)
		}
	default:
		ts.Fatalf("unknown scriptedgh command %q", args[0])
	}
}

// cmdGitea runs a real Gitea for a scenario (internal/testkit/giteaserver),
// one per script, stopped at its end:
//
//	gitea start VAR    serve on loopback: VAR its URL, VAR_HOSTPORT its address; ralphd's account
//	                   "ralphd" owns ralphd/widgets with main and ralph/t-a pushed and pull request
//	                   #1 open from ralph/t-a; "agent" may read it; VAR_RALPHD_TOKEN, VAR_AGENT_TOKEN
//	[!] gitea merged   pull request #1 is merged (with !: it is not)
//
// The condition [gitea] holds when the pinned Gitea is installed
// (scripts/install-gitea), or when CI is set (then a missing one fails).
func cmdGitea(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: gitea start VAR | gitea merged")
	}
	switch args[0] {
	case "start":
		if neg || len(args) != 2 {
			ts.Fatalf("usage: gitea start VAR")
		}
		bin, static, err := giteaserver.Find()
		ts.Check(err)
		ctx := context.Background()
		s, err := giteaserver.Start(ctx, bin, static)
		ts.Check(err)
		ts.Defer(s.Close)
		gitea.Store(ts, s)
		ts.Defer(func() { gitea.Delete(ts) })
		owner, err := s.User(ctx, "ralphd")
		ts.Check(err)
		agentTok, err := s.User(ctx, "agent")
		ts.Check(err)
		clone, err := s.Repo(ctx, "ralphd", owner, "widgets")
		ts.Check(err)
		ts.Check(s.Collaborator(ctx, owner, "ralphd/widgets", "agent", "read"))
		dir, err := os.MkdirTemp("", "ralphd-gitea-clone-")
		ts.Check(err)
		defer os.RemoveAll(dir)
		for _, a := range [][]string{
			{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "base"}, {"push", "-q", clone, "main"},
			{"checkout", "-q", "-b", "ralph/t-a"}, {"commit", "-q", "--allow-empty", "-m", "work"}, {"push", "-q", clone, "ralph/t-a"},
		} {
			cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, a...)...)
			cmd.Dir, cmd.Env = dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
			if out, err := cmd.CombinedOutput(); err != nil {
				ts.Fatalf("git %v: %v: %s", a, err, out)
			}
		}
		var pr struct{ Number int }
		for deadline := time.Now().Add(30 * time.Second); pr.Number == 0; time.Sleep(50 * time.Millisecond) {
			_, err = s.API(ctx, owner, "POST", "repos/ralphd/widgets/pulls", map[string]string{"head": "ralph/t-a", "base": "main", "title": "t-a: work"}, &pr)
			if time.Now().After(deadline) {
				ts.Fatalf("open the pull request: %v", err)
			}
		}
		ts.Setenv(args[1], s.URL)
		ts.Setenv(args[1]+"_HOSTPORT", strings.TrimPrefix(s.URL, "http://"))
		ts.Setenv(args[1]+"_RALPHD_TOKEN", owner)
		ts.Setenv(args[1]+"_AGENT_TOKEN", agentTok)
	case "merged":
		v, ok := gitea.Load(ts)
		if !ok {
			ts.Fatalf("gitea merged before gitea start")
		}
		s := v.(*giteaserver.Server)
		var pr struct{ Merged bool }
		_, err := s.API(context.Background(), s.AdminToken, "GET", "repos/ralphd/widgets/pulls/1", nil, &pr)
		ts.Check(err)
		if pr.Merged == neg {
			ts.Fatalf("pull request #1 merged: %v", pr.Merged)
		}
	default:
		ts.Fatalf("unknown gitea command %q", args[0])
	}
}

// gitea are the Gitea servers the scenarios started, by script.
var gitea sync.Map // *testscript.TestScript → *giteaserver.Server

// giteaCondition is [gitea]: the pinned Gitea is installed, or CI is set.
func giteaCondition(cond string) (bool, error) {
	if cond != "gitea" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	_, _, err := giteaserver.Find()
	return err == nil || os.Getenv("CI") != "", nil
}

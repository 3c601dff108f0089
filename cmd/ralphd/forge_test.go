package main

import (
	"fmt"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

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

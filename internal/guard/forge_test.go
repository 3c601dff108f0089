package guard

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// forgeRefused are shell commands that merge, approve, dismiss a review or
// read the token through a forge CLI, by every route the extractor knows:
// RuleForgeMerge refuses each, in BUILD and in PLANNING.
var forgeRefused = []string{
	// gh pr merge, every way of running it.
	`gh pr merge 1 --squash`,
	`gh pr merge --auto --squash 1`,
	`gh pr merge`,
	`gh pr merge --disable-auto 1`,
	`/usr/bin/gh pr merge 1`,
	`./gh pr merge 1`,
	`command gh pr merge 1`,
	`command -p gh pr merge 1`,
	`exec gh pr merge 1`,
	`env GH_TOKEN=x gh pr merge 1`,
	`env -i PATH=/usr/bin gh pr merge 1`,
	`env -S 'gh pr merge 1'`,
	`GH_HOST=github.com gh pr merge 1`,
	`sudo -u me gh pr merge 1`,
	`timeout 5 nice -n 3 nohup gh pr merge 1 &`,
	`sh -c 'gh pr merge 1'`,
	`bash -lc "cd /tmp && gh pr merge 1"`,
	`sh -c "sh -c 'gh pr merge 1'"`,
	`eval "gh pr merge 1"`,
	`echo 1 | xargs gh pr merge`,
	`echo 1 | xargs -I{} gh pr merge {} --squash`,
	`echo 'gh pr merge 1' | bash`,
	`printf 'gh pr %s 1\n' merge | sh`,
	"sh <<'EOF'\ngh pr merge 1\nEOF",
	"bash <<< 'gh pr merge 1'",
	`G=gh; $G pr merge 1`,
	`G=/usr/local/bin/gh; "$G" pr merge 1`,
	`$(which gh) pr merge 1`,
	"`command -v gh` pr merge 1",
	`(gh pr merge 1)`,
	`x=$(gh pr merge 1)`,
	`true && gh pr merge 1 || true`,
	`find . -maxdepth 0 -exec gh pr merge 1 \;`,
	`strace -f gh pr merge 1`,
	`ssh host gh pr merge 1`,
	`gh pr -R o/r merge 1`,
	`gh pr --repo o/r merge 1`,
	`gh "$sub" merge 1`,
	`gh pr "$verb" 1`,
	"shopt -s expand_aliases; alias m='gh pr merge'\nm 1",
	`f() { gh pr merge "$1"; }; f 1`,
	`declare g=gh; $g pr merge 1`,
	`parallel gh pr merge ::: 1 2`,
	`echo pr merge 1 | xargs gh`,
	`'g'"h" p\r mer""ge 1`,
	// Approving.
	`gh pr review 1 --approve`,
	`gh pr review 1 -a`,
	`gh pr review -ab lgtm 1`,
	`gh pr review --approve=true 1`,
	`gh pr review 1 -b ok --approve`,
	`gh pr --approve review 1`,
	`gh pr review 1 "$FLAG"`,
	// gh api: REST writes to merge, reviews, merges.
	`gh api -X PUT repos/o/r/pulls/1/merge`,
	`gh api --method=PUT /repos/o/r/pulls/1/merge`,
	`gh api --method put repos/o/r/pulls/1/merge`,
	`gh api -XPUT 'repos/{owner}/{repo}/pulls/1/merge'`,
	`gh api -iXPUT repos/o/r/pulls/1/merge`,
	`gh api repos/o/r/pulls/1/merge -f merge_method=squash -X PUT`,
	`gh api repos/o/r/pulls/1/reviews -f event=APPROVE`,
	`gh api repos/o/r/pulls/1/reviews -F event=APPROVE`,
	`gh api repos/o/r/pulls/1/reviews --raw-field=event=APPROVE`,
	`gh api repos/o/r/pulls/1/reviews --input review.json`,
	`gh api repos/o/r/pulls/1/reviews/5/events -f event=APPROVE`,
	`gh api -X PUT repos/o/r/pulls/1/reviews/5/dismissals -f message=x`,
	`gh api repos/o/r/merges -f base=main -f head=ralph/t-a`,
	`gh api -X PUT https://api.github.com/repos/o/r/pulls/1/merge`,
	`gh api -X PUT 'https://ghe.example.com/api/v3/repos/o/r/pulls/1/merge?x=1'`,
	`gh api -X PUT repos/o/r/pulls/1/%6Derge`,
	`gh api -X PUT repos/o/r/pulls/1/%256Derge`,
	`gh api -X PUT repos/o/r/PULLS/1/MERGE`,
	`gh api -X PUT repos/o/r/pulls//1/./merge/`,
	`gh api -X PUT repos/o/r/pulls/1/x/../merge`,
	`gh api -t '{{.}}' -X PUT repos/o/r/pulls/1/merge`,
	`gh api -H 'Accept: x' -X PUT repos/o/r/pulls/1/merge`,
	`gh api repos/o/r/pulls/1/merge -X "$M"`,
	`gh api "$URL" -X PUT`,
	`gh api "repos/o/r/pulls/$N/merge" -X PUT`,
	`gh api repos/o/r/pulls/1/reviews "$F"`,
	// gh api graphql.
	`gh api graphql -f query='mutation { mergePullRequest(input:{pullRequestId:"x"}) { clientMutationId } }'`,
	`gh api graphql -f query='mutation{enablePullRequestAutoMerge(input:{pullRequestId:"x"}){clientMutationId}}'`,
	`gh api graphql -f query='mutation{addPullRequestReview(input:{pullRequestId:"x",event:APPROVE}){clientMutationId}}'`,
	`gh api graphql -f query='mutation{submitPullRequestReview(input:{pullRequestReviewId:"x",event:APPROVE}){clientMutationId}}'`,
	`gh api graphql -f query='mutation{dismissPullRequestReview(input:{pullRequestReviewId:"x",message:"m"}){clientMutationId}}'`,
	`gh api graphql -f query='mutation{enqueuePullRequest(input:{pullRequestId:"x"}){clientMutationId}}'`,
	`gh api graphql -f query='mutation{mergeBranch(input:{repositoryId:"x",base:"main",head:"h"}){clientMutationId}}'`,
	`gh api graphql -F query=@merge.graphql`,
	`gh api graphql --input body.json`,
	`gh api graphql -f query="$Q"`,
	`gh api graphql -f "$FIELD"`,
	`gh api https://api.github.com/graphql -f query='mutation{mergePullRequest(input:{}){clientMutationId}}'`,
	// The token.
	`gh auth token`,
	`gh auth token --hostname github.com`,
	`gh auth status --show-token`,
	`gh auth status -t`,
	`gh auth status -at`,
	`printf 'protocol=https\nhost=github.com\n' | gh auth git-credential get`,
	// Aliases that hide a verb.
	`gh alias set m 'pr merge'`,
	`gh alias set --shell m 'gh pr merge "$1"'`,
	`gh alias set m '!gh pr merge "$1"'`,
	`gh alias set m "$X"`,
	`gh alias set m -`,
	`gh alias import aliases.yml`,
	// Gitea's tea.
	`tea pr merge 1`,
	`tea pulls merge 1`,
	`tea pull merge --style squash 1`,
	`tea pr m 1`,
	`tea pr approve 1`,
	`tea pulls approve 1`,
	`tea pr lgtm 1`,
	`tea pr a 1`,
	`tea api -X POST repos/o/r/pulls/1/merge`,
	`tea api repos/o/r/pulls/1/reviews -f event=APPROVED`,
	// GitLab's glab.
	`glab mr merge 1`,
	`glab mr accept 1`,
	`glab merge-request merge 1`,
	`glab mr approve 1`,
	`glab mr revoke 1`,
	`glab mr -R g/p merge 1`,
	`glab api -X PUT projects/1/merge_requests/2/merge`,
	`glab api -X POST projects/:id/merge_requests/2/approve`,
	`glab api https://gitlab.example.com/api/v4/projects/1/merge_requests/2/merge -X PUT`,
	`glab api graphql -f query='mutation{mergeRequestAccept(input:{projectPath:"g/p",iid:"2"}){errors}}'`,
	`glab auth status --show-token`,
	// hub.
	`hub merge https://github.com/o/r/pull/1`,
	`hub api -X PUT repos/o/r/pulls/1/merge`,
	`hub api -t -X PUT repos/o/r/pulls/1/merge`,
	`hub api repos/o/r/pulls/1/reviews -F event=APPROVE`,
}

// forgeAllowed are forge CLI calls that read, or write nothing that lands
// work or approves: the guard leaves them alone, and text that only
// mentions a verb is no call.
var forgeAllowed = []string{
	`gh pr view 1`,
	`gh pr view 1 --json state,mergeable`,
	`gh pr checks 1`,
	`gh pr diff 1`,
	`gh pr list --search merge`,
	`gh pr create --title merge --body 'please merge'`,
	`gh pr review 1 --comment -b 'looks fine'`,
	`gh pr review 1 -b -a`, // -a is the body: pflag gives -b the next word
	`gh pr review 1 --request-changes -b 'not yet'`,
	`gh issue view 1`,
	`gh api repos/o/r/pulls/1`,
	`gh api repos/o/r/pulls/1/merge`, // GET: is it merged?
	`gh api repos/o/r/pulls/1/reviews`,
	`gh api -X GET repos/o/r/pulls/1/reviews -f per_page=100`,
	`gh api repos/o/r/issues/1/comments -f body=merged`,
	`gh api "repos/o/r/pulls/$N"`,
	`gh api graphql -f query='query { repository(owner:"o",name:"r"){ pullRequest(number:1){ state } } }'`,
	`gh auth status`,
	`gh alias set pv 'pr view'`,
	`gh alias set --shell pv 'gh pr view "$1"'`,
	`tea pr list`,
	`tea pulls checkout 1`,
	`glab mr view 1`,
	`glab mr list`,
	`hub pr list`,
	`echo gh pr merge 1`,
	`git commit -m 'gh pr merge 1'`,
	`grep -r 'gh pr merge' .`,
	`cat <<'EOF'
gh pr merge 1
EOF`,
	`bd ready --json`,
	`go test ./...`,
}

func TestForgeMergeRefused(t *testing.T) {
	for _, mode := range []Mode{ModeBuild, ModePlan} {
		for _, cmd := range forgeRefused {
			t.Run(string(mode)+"/"+cmd, func(t *testing.T) {
				is := is.New(t)
				code, stderr := runHook(t, mode, hookJSON(t, cmd))
				is.Equal(code, HookBlock)                                                                       // refused
				is.True(strings.Contains(stderr, "(rule forge-merge)"))                                         // the rule is named
				is.True(strings.Contains(stderr, "a person or the forge's auto-merge merges the pull request")) // what to do instead
				is.True(strings.Contains(stderr, mode.label()+" mode refused"))
			})
		}
	}
}

func TestForgeAllowed(t *testing.T) {
	for _, mode := range []Mode{ModeBuild, ModePlan} {
		for _, cmd := range forgeAllowed {
			t.Run(string(mode)+"/"+cmd, func(t *testing.T) {
				is := is.New(t)
				code, stderr := runHook(t, mode, hookJSON(t, cmd))
				is.Equal(stderr, "")
				is.Equal(code, HookAllow)
			})
		}
	}
}

// TestForgeHookArgv: an agent that sends its command as an argv array is
// judged the same.
func TestForgeHookArgv(t *testing.T) {
	tests := []struct {
		argv []string
		code int
	}{
		{[]string{"gh", "pr", "merge", "1", "--squash"}, HookBlock},
		{[]string{"/usr/bin/env", "gh", "pr", "review", "-a", "1"}, HookBlock},
		{[]string{"bash", "-c", "tea pr merge 1"}, HookBlock},
		{[]string{"gh", "pr", "view", "1"}, HookAllow},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			is := is.New(t)
			in, err := json.Marshal(map[string]any{"tool_name": "shell", "tool_input": map[string]any{"command": tc.argv}})
			is.NoErr(err)
			code, _ := runHook(t, ModePlan, in)
			is.Equal(code, tc.code)
		})
	}
}

// TestForgeMessage: the refusal names the call as written, the rule, why
// and what to do instead, and the verb refused.
func TestForgeMessage(t *testing.T) {
	is := is.New(t)
	code, stderr := runHook(t, ModeBuild, hookJSON(t, `bd ready; /usr/bin/gh pr merge 1 --squash; bd delete x`))
	is.Equal(code, HookBlock)
	is.True(strings.Contains(stderr, "it runs 2 calls that BUILD mode does not allow"))
	is.True(strings.Contains(stderr, "BUILD mode refused `/usr/bin/gh pr merge 1 --squash` (rule forge-merge)"))
	is.True(strings.Contains(stderr, "Why: `gh pr merge`: no agent of ralphd"))
	is.True(strings.Contains(stderr, "Instead: leave the pull request as it is: ralphd integrates through the merge queue"))
	is.True(strings.Contains(stderr, "(rule build-delete)"))

	// In PLANNING the bd call is allowed, the merge is not.
	code, stderr = runHook(t, ModePlan, hookJSON(t, `bd delete x --force && gh api -X PUT repos/o/r/pulls/1/merge`))
	is.Equal(code, HookBlock)
	is.True(strings.Contains(stderr, "it runs a call that PLANNING mode does not allow"))
	is.True(strings.Contains(stderr, "`gh api` with PUT to repos/o/r/pulls/1/merge"))
	is.True(!strings.Contains(stderr, "bd delete"))
}

// TestForgeVerbsTable: every verb without a check is a deny prefix in
// every spelling, and the table's names are well formed.
func TestForgeVerbsTable(t *testing.T) {
	is := is.New(t)
	prefixes := forgeDenyPrefixes()
	is.True(slices.Contains(prefixes, "gh pr merge"))
	is.True(slices.Contains(prefixes, "tea pr m"))
	is.True(slices.Contains(prefixes, "glab mr accept"))
	is.True(!slices.Contains(prefixes, "gh api"))       // refused only for some calls: no lexical rule
	is.True(!slices.Contains(prefixes, "gh pr review")) // the same
	for _, v := range forgeVerbs() {
		is.True(v.prog != "" && v.path != "")
		for _, p := range v.prefixes() {
			words := strings.Fields(p)
			is.Equal(forgeDecide(ModeBuild, words[0], staticArgs(words[1:])).Rule, RuleForgeMerge)
		}
	}
	is.True(!judged("git"))
	is.True(judged("gh") && judged("bd") && judged("hub"))
}

func TestNormalisePath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"repos/o/r/pulls/1/merge", "repos/o/r/pulls/1/merge"},
		{"/repos/o/r/pulls/1/merge/", "repos/o/r/pulls/1/merge"},
		{"https://api.github.com/repos/o/r/pulls/1/merge?a=b#c", "repos/o/r/pulls/1/merge"},
		{"https://ghe.example.com/api/v3/repos/O/R/pulls/1/MERGE", "repos/o/r/pulls/1/merge"},
		{"api/v4/projects/1/merge_requests/2/merge", "projects/1/merge_requests/2/merge"},
		{"repos/o/r/pulls/1/%6derge", "repos/o/r/pulls/1/merge"},
		{"repos/o/r/pulls/1/%zz", "repos/o/r/pulls/1/%zz"},
		{"repos//o/./r/x/../pulls/1/merge", "repos/o/r/pulls/1/merge"},
		{"https://host", ""},
		{"graphql", "graphql"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			is := is.New(t)
			is.Equal(normalisePath(tc.in), tc.want)
		})
	}
}

// FuzzForgeDecide checks the forge verdicts on any argv: no panic, a
// refusal is always forge-merge with a reason, the verdict is the same in
// both modes, and an allowed call is forge-other's.
func FuzzForgeDecide(f *testing.F) {
	for _, s := range append(slices.Clone(forgeRefused), forgeAllowed...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		calls, err := extractCalls(cmd)
		if err != nil {
			return
		}
		for _, c := range calls {
			if c.name == "bd" {
				continue
			}
			b := forgeDecide(ModeBuild, c.name, c.args)
			p := forgeDecide(ModePlan, c.name, c.args)
			if b.Allowed != p.Allowed || b.Rule != p.Rule {
				t.Fatalf("%q: BUILD %v (%s), PLAN %v (%s)", cmd, b.Allowed, b.Rule, p.Allowed, p.Rule)
			}
			if !b.Allowed && (b.Rule != RuleForgeMerge || b.Reason == "" || b.Instead == "") {
				t.Fatalf("%q: refused without the forge rule's reason: %+v", cmd, b)
			}
			if b.Allowed && b.Rule != RuleForgeOther {
				t.Fatalf("%q: allowed by %s", cmd, b.Rule)
			}
		}
	})
}

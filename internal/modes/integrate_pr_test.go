package modes

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/mergeq"
	"github.com/ralphd/ralphd/internal/sandbox"
	"github.com/ralphd/ralphd/internal/testkit/scriptedgh"
)

// ghBinary is the real gh CLI, or a skip (a failure with CI set).
func ghBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("gh")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gh is not installed (scripts/install-system-deps installs it in CI)")
		}
		t.Skip("gh is not installed")
	}
	return bin
}

// prFixture is a project with a bare remote, a scripted GitHub serving
// it to the real gh, and a pool of two workers with integrate = pr.
type prFixture struct {
	p      *project
	remote string
	srv    *scriptedgh.Server
	pool   *Pool
}

func newPRFixture(t *testing.T, it func(context.Context, Assignment) (bool, error)) *prFixture {
	gh := ghBinary(t)
	p := newProject(t)
	f := &prFixture{p: p, remote: p.withRemote(t)}
	f.srv = &scriptedgh.Server{Owner: "o", Repo: "r", Tokens: []string{"ralphd-token"}, Reviewers: []string{"reviewer-token"},
		HeadSHA: func(branch string) string {
			out, err := exec.Command("git", "-C", f.remote, "rev-parse", "-q", "--verify", "refs/heads/"+branch).Output()
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(out))
		}}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	s, err := mergeq.LookupStrategy("pr")
	if err != nil {
		t.Fatal(err)
	}
	f.pool = p.pool(2, it)
	f.pool.ReviewPoll = 20 * time.Millisecond
	f.pool.StatusFile = filepath.Join(t.TempDir(), "workers.json")
	f.pool.Checks = "verify: go test ./..."
	f.pool.Queue = &mergeq.Queue{Repo: p.repo, Target: "main", Remote: "origin", Strategy: s,
		Forge: &mergeq.GitHub{Bin: gh, Repo: "o/r", Env: f.srv.Env("ralphd-token", p.root)}}
	return f
}

// merge does what a reviewer's merge on the forge does: the remote's
// main moves to the pull request's head, and the forge says merged.
func (f *prFixture) merge(t *testing.T, pr scriptedgh.Pull) {
	sh(t, f.remote, "git", "update-ref", "refs/heads/main", pr.Head.SHA)
	f.srv.Merge(pr.Number)
}

// reviewer plays the people and CI: act is called for each pull request
// whenever its head moves, until the pool ends.
func (f *prFixture) reviewer(t *testing.T, act func(pr scriptedgh.Pull, seen int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		heads := map[int][]string{}
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			for _, pr := range f.srv.Pulls() {
				hs := heads[pr.Number]
				if pr.State != "open" || pr.Head.SHA == "" || (len(hs) > 0 && hs[len(hs)-1] == pr.Head.SHA) {
					continue
				}
				heads[pr.Number] = append(hs, pr.Head.SHA)
				act(pr, len(heads[pr.Number]))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestPullRequestScenarios: integrate = pr with the real gh against a
// scripted GitHub. The blocker's work is pushed to ralph/<id> and its
// pull request opened with the issue's evidence; the dependent waits; CI
// fails (or a reviewer requests changes) on the first attempt, which
// reopens the blocker with the log tail (or the comments) verbatim; the
// agent's fix updates the same pull request; a reviewer merges it; the
// blocker counts as integrated and the dependent starts from the merged
// main. ralphd never merges nor approves.
func TestPullRequestScenarios(t *testing.T) {
	const logTail = "=== RUN   TestA\n    a_test.go:9: got \"bug\", want \"fixed\"\n--- FAIL: TestA (0.00s)\nFAIL"
	for _, tc := range []struct {
		name     string
		feedback func(f *prFixture, pr scriptedgh.Pull)
		evidence []string
		state    string // the pull request's state after the feedback
	}{
		{"ci fails", func(f *prFixture, pr scriptedgh.Pull) {
			f.srv.SetCheck(pr.Head.SHA, "lint", "success", "ok")
			f.srv.SetCheck(pr.Head.SHA, "test", "failure", "setup\n"+logTail)
		}, []string{`CI check "test": failure`, logTail}, ReviewChecksFailing},
		{"changes requested", func(f *prFixture, pr scriptedgh.Pull) {
			f.srv.RequestChanges(pr.Number, "Please fix the bug before merging.", map[string]string{"a.txt:1": "This still says bug."})
		}, []string{"requests changes:\nPlease fix the bug before merging.", "a.txt:1:\nThis still says bug."}, ReviewChangesRequested},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var blocker, dependent string
			var mu sync.Mutex
			notesSeen := "" // the blocker's notes, as its second attempt found them
			depSaw := ""    // a.txt, as the dependent's worktree had it
			depAfterMerge := false
			merged := false
			var shown []string // what the status file said while the reviewer looked
			var f *prFixture
			f = newPRFixture(t, func(ctx context.Context, a Assignment) (bool, error) {
				body := "fixed\n"
				switch {
				case a.Issue.ID == blocker && a.Attempt == 1:
					body = "bug\n"
				case a.Issue.ID == blocker:
					mu.Lock()
					notesSeen = sh(t, a.Dir, f.p.bd, "show", blocker, "--json")
					mu.Unlock()
				case a.Issue.ID == dependent:
					b, _ := os.ReadFile(filepath.Join(a.Dir, "a.txt"))
					mu.Lock()
					depSaw, depAfterMerge = string(b), merged
					mu.Unlock()
					body = ""
				}
				if body != "" {
					if err := os.WriteFile(filepath.Join(a.Dir, "a.txt"), []byte(body), 0o644); err != nil {
						return false, err
					}
				} else if err := os.WriteFile(filepath.Join(a.Dir, "b.txt"), []byte("b\n"), 0o644); err != nil {
					return false, err
				}
				return commitAndClose(ctx, a)
			})
			blocker = f.p.create("fix a", "--acceptance", "a.txt says fixed")
			dependent = f.p.create("build on a", "--deps", blocker)
			stop := f.reviewer(t, func(pr scriptedgh.Pull, seen int) {
				switch {
				case strings.HasPrefix(pr.Title, blocker) && seen == 1:
					tc.feedback(f, pr)
				default:
					time.Sleep(150 * time.Millisecond) // the pool reads the unchanged pull request meanwhile
					mu.Lock()
					merged = merged || strings.HasPrefix(pr.Title, blocker)
					mu.Unlock()
					f.merge(t, pr)
				}
			})
			var logged []string // the pull-request events, in order
			f.pool.Log = func(e Event) {
				if e.Kind == "pull-request" && e.Review != nil {
					logged = append(logged, e.Issue+" "+e.Review.State) // under the pool's lock
				}
			}
			// What status showed: the status file, read every few ms.
			watching := make(chan struct{})
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				for {
					select {
					case <-watching:
						return
					case <-time.After(2 * time.Millisecond):
					}
					if b, err := os.ReadFile(f.pool.StatusFile); err == nil {
						if st, err := ParseStatusFile(b); err == nil {
							mu.Lock()
							for _, r := range st.Reviews {
								if !slices.Contains(shown, r.Issue+" "+r.State) {
									shown = append(shown, r.Issue+" "+r.State)
								}
							}
							mu.Unlock()
						}
					}
				}
			}()
			sum, err := f.pool.Run(context.Background())
			stop()
			close(watching)
			<-watched
			is.NoErr(err)
			is.Equal(logged, []string{ // every state, as the dashboard hears of them
				blocker + " " + ReviewWaiting, blocker + " " + tc.state, blocker + " " + ReviewWaiting, blocker + " " + ReviewMerged,
				dependent + " " + ReviewWaiting, dependent + " " + ReviewMerged,
			})
			is.Equal(len(sum.Integrated), 2)      // both merged by the reviewer
			is.Equal(len(sum.Failed[blocker]), 1) // the feedback was one failed attempt
			for _, e := range tc.evidence {
				is.True(strings.Contains(sum.Failed[blocker][0], e))                                                   // verbatim
				is.True(strings.Contains(notesSeen, strings.ReplaceAll(strings.ReplaceAll(e, `"`, `\"`), "\n", `\n`))) // in the note the next attempt read
			}
			pulls := f.srv.Pulls()
			is.Equal(len(pulls), 2) // the fix updated the same pull request
			is.True(strings.HasPrefix(pulls[0].Title, blocker+": fix a"))
			for _, want := range []string{blocker, "a.txt says fixed", "done, tests pass", "verify: go test ./...", "attempt 1"} {
				is.True(strings.Contains(pulls[0].Body, want)) // the issue's evidence
			}
			is.Equal(pulls[0].Head.Ref, "ralph/"+blocker)
			is.True(pulls[0].Merged && pulls[1].Merged)
			is.True(slices.Contains(shown, blocker+" "+ReviewWaiting))   // status listed the open pull request
			is.True(slices.Contains(shown, dependent+" "+ReviewWaiting)) // and the dependent's, later
			is.True(slices.Contains(shown, blocker+" "+ReviewMerged))    // with the blocker's merged by then
			is.Equal(len(sum.Reviews), 2)                                // the run's pull requests, for the report
			for _, r := range sum.Reviews {
				is.Equal(r.State, ReviewMerged)
				is.True(r.PR != 0 && r.URL != "" && r.Branch == "ralph/"+r.Issue)
			}
			var md strings.Builder
			(&Report{Mode: ModeBuild, PullRequests: sum.Reviews}).WriteMarkdown(&md)
			is.True(strings.Contains(md.String(), "## Pull requests"))
			is.True(strings.Contains(md.String(), "| "+blocker+" | [#1](https://github.localhost/o/r/pull/1) | merged | ralph/"+blocker+" |"))
			is.Equal(depSaw, "fixed\n") // the dependent started from the merged main
			is.True(depAfterMerge)
			conditional := 0
			for _, r := range f.srv.Requests() {
				is.True(!strings.HasSuffix(r.Path, "/merge"))                           // ralphd never merges
				is.True(!(r.Method == "POST" && strings.HasSuffix(r.Path, "/reviews"))) // nor approves
				if r.IfNoneMatch != "" {
					conditional++
				}
			}
			is.True(conditional > 0) // reads again are conditional
			calls, notModified := f.pool.ForgeCalls()
			t.Logf("forge reads: %d requests, %d answered 304", calls, notModified)
		})
	}
}

// TestNoForgeOnTheDefaultAllowlist: with the default configuration and
// integrate = pr, no agent's sandbox lets it reach GitHub's API, its git
// host or a configured GitHub Enterprise host; only the user's own
// network_allow does.
func TestNoForgeOnTheDefaultAllowlist(t *testing.T) {
	forges := []string{"api.github.com", "github.com", "uploads.github.com", "ghe.acme.example"}
	for _, name := range agent.Names() {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			env := map[string]string{"RALPH_INTEGRATE": "pr", "RALPH_FORGE_REPO": "acme/w", "RALPH_FORGE_HOST": "ghe.acme.example", "RALPH_AGENT_CMD": "true"}
			cfg, err := config.Load(config.Loader{Getenv: func(k string) string { return env[k] }})
			is.NoErr(err)
			b, err := agent.Lookup(name, agent.WithAgentCmd("true"))
			is.NoErr(err)
			l := &Loop{Deps: Deps{Config: cfg, Backend: b, Env: []string{"PATH=/usr/bin"}}}
			allow, err := sandbox.ParseAllow(l.allowEntries())
			is.NoErr(err)
			for _, h := range forges {
				for _, port := range []string{"443", "80", "22"} {
					is.True(!allow.Allows(h, port)) // refused by default
				}
			}
			env["RALPH_NETWORK_ALLOW"] = "*.github.com"
			cfg, err = config.Load(config.Loader{Getenv: func(k string) string { return env[k] }})
			is.NoErr(err)
			l.Config = cfg
			allow, err = sandbox.ParseAllow(l.allowEntries())
			is.NoErr(err)
			is.True(allow.Allows("api.github.com", "443")) // the user's choice
		})
	}
}

// TestPullRequestWatchedAfterRestart: a pool stopped while it waits on a
// pull request journals it; the next pool watches it again before any
// worker claims, holding its issue so that the dependent waits, and
// settles it: merged while ralphd was down, or merged after the restart.
// An entry whose issue a person reopened meanwhile is dropped, and the
// issue, freed of the worker's claim bd kept, is worked again.
func TestPullRequestWatchedAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mergedWhile   bool // merged while no ralphd ran
		reopenedWhile bool // a person reopened the issue while no ralphd ran
	}{
		{"merged while down", true, false},
		{"merged after the restart", false, false},
		{"reopened by a person while down", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var blocker, dependent string
			var mu sync.Mutex
			depSaw, depAfterMerge, merged := "", false, false
			blockerTries := 0
			var f *prFixture
			it := func(ctx context.Context, a Assignment) (bool, error) {
				if a.Issue.ID == dependent {
					b, _ := os.ReadFile(filepath.Join(a.Dir, "a.txt"))
					mu.Lock()
					depSaw, depAfterMerge = string(b), merged
					mu.Unlock()
					if err := os.WriteFile(filepath.Join(a.Dir, "b.txt"), []byte("b\n"), 0o644); err != nil {
						return false, err
					}
					return commitAndClose(ctx, a)
				}
				// The attempt after a person reopened it pushes other work:
				// the same work, committed within the same second, would be
				// the same commit, the head the reviewer leaves alone.
				mu.Lock()
				blockerTries++
				fix := strings.Repeat("fixed\n", blockerTries)
				mu.Unlock()
				if err := os.WriteFile(filepath.Join(a.Dir, "a.txt"), []byte(fix), 0o644); err != nil {
					return false, err
				}
				return commitAndClose(ctx, a)
			}
			f = newPRFixture(t, it)
			blocker = f.p.create("fix a")
			dependent = f.p.create("build on a", "--deps", blocker)

			// The first pool: stopped once the blocker's pull request is open.
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for ctx.Err() == nil {
					if ps := f.srv.Pulls(); len(ps) == 1 && ps[0].Head.SHA != "" {
						time.Sleep(100 * time.Millisecond) // a read or two
						cancel()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			_, err := f.pool.Run(ctx)
			cancel()
			is.True(err == nil || errors.Is(err, context.Canceled))
			mark, err := os.ReadFile(filepath.Join(f.pool.Trees.Root, ".review-"+blocker))
			is.NoErr(err) // journaled
			is.True(strings.Contains(string(mark), `"pr":1`))
			is.True(strings.Contains(sh(t, f.p.repo, f.p.bd, "show", blocker, "--json"), `"status": "closed"`))
			is.True(depSaw == "") // the dependent did not start

			pr := f.srv.Pulls()[0]
			if tc.mergedWhile {
				mu.Lock()
				merged = true
				mu.Unlock()
				f.merge(t, pr)
			}
			if tc.reopenedWhile {
				sh(t, f.p.repo, f.p.bd, "reopen", blocker)
			}

			// The second pool, as after a restart.
			second := f.p.pool(2, it)
			second.ReviewPoll, second.Checks, second.Queue = f.pool.ReviewPoll, f.pool.Checks, f.pool.Queue
			second.Trees = f.pool.Trees
			var events []string
			var emu sync.Mutex
			second.Log = func(e Event) {
				emu.Lock()
				events = append(events, e.Issue+" "+e.Kind+" "+e.Detail)
				emu.Unlock()
			}
			stop := f.reviewer(t, func(got scriptedgh.Pull, seen int) {
				if tc.reopenedWhile && got.Head.SHA == pr.Head.SHA {
					return // the attempt the person reopened: left as it is
				}
				pr := got
				if tc.mergedWhile {
					if !strings.HasPrefix(pr.Title, blocker) {
						f.merge(t, pr)
					}
					return
				}
				time.Sleep(150 * time.Millisecond) // the dependent waits meanwhile
				mu.Lock()
				merged = merged || strings.HasPrefix(pr.Title, blocker)
				mu.Unlock()
				f.merge(t, pr)
			})
			sum, err := second.Run(context.Background())
			stop()
			is.NoErr(err)
			emu.Lock()
			defer emu.Unlock()
			_, statErr := os.Stat(filepath.Join(f.pool.Trees.Root, ".review-"+blocker))
			is.True(os.IsNotExist(statErr)) // settled: out of the journal
			if tc.reopenedWhile {
				is.True(slices.ContainsFunc(events, func(e string) bool {
					return strings.HasPrefix(e, blocker+" recovered no longer waits on pull request #1")
				}))
				// A person took it back: bd kept the worker's assignee, which
				// the start frees (claimsleft.go), and the issue is worked
				// again, through a pull request of its own.
				is.True(slices.ContainsFunc(events, func(e string) bool {
					return strings.HasPrefix(e, blocker+" recovered freed the claim ")
				}))
				is.True(slices.Contains(sum.Integrated, blocker))
				is.True(slices.Contains(sum.Integrated, dependent))
				return
			}
			is.True(slices.Contains(sum.Integrated, blocker)) // the merge settled it
			is.True(slices.Contains(sum.Integrated, dependent))
			is.Equal(depSaw, "fixed\n") // the dependent started from the merged main
			is.True(depAfterMerge)      // and only after the merge
			is.True(slices.ContainsFunc(events, func(e string) bool { return e == blocker+" recovered watching pull request #1 again" }))
			notes := sh(t, f.p.repo, f.p.bd, "show", blocker, "--json")
			is.True(strings.Contains(notes, "pull request #1 (https://github.localhost/o/r/pull/1) was merged into main"))
		})
	}
}

// eventLog collects a pool's events, for assertions after its run.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(e Event) { l.mu.Lock(); l.events = append(l.events, e); l.mu.Unlock() }

// kinds returns the kinds of id's events, in order.
func (l *eventLog) kinds(id string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.events {
		if e.Issue == id {
			out = append(out, e.Kind)
		}
	}
	return out
}

// TestForgeOutageIsWaitedOut: while the forge answers 502 or not at all
// (each gh call timing out), the pool waits, reports the outage once
// (forge-down, then forge-up), never counts it as an attempt, and settles
// the pull request once the forge is back: from the open onwards, and
// while it is read.
func TestForgeOutageIsWaitedOut(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stall       bool // no answer at all, rather than a 502
		fromTheOpen bool // down already when the work is pushed
	}{
		{"502 while read", false, false},
		{"no answer while read", true, false},
		{"502 from the open", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var down atomic.Bool
			f := newPRFixture(t, func(ctx context.Context, a Assignment) (bool, error) {
				if err := os.WriteFile(filepath.Join(a.Dir, "a.txt"), []byte("fixed\n"), 0o644); err != nil {
					return false, err
				}
				return commitAndClose(ctx, a)
			})
			f.srv.DownStatus = http.StatusBadGateway
			if tc.stall {
				f.srv.Stall = down.Load
			} else {
				f.srv.Down = down.Load
			}
			f.pool.Queue.Forge.(*mergeq.GitHub).Timeout = 300 * time.Millisecond
			var log eventLog
			f.pool.Log = log.add
			id := f.p.create("fix a")
			down.Store(tc.fromTheOpen)
			outage := make(chan struct{})
			go func() { // the outage: a few polls long
				defer close(outage)
				refusedYet := func() bool {
					return slices.ContainsFunc(f.srv.Requests(), func(r scriptedgh.Request) bool { return r.Status == http.StatusBadGateway })
				}
				for (!tc.fromTheOpen && len(f.srv.Pulls()) == 0) || (tc.fromTheOpen && !refusedYet()) {
					time.Sleep(5 * time.Millisecond)
				}
				down.Store(true)
				time.Sleep(700 * time.Millisecond)
				down.Store(false)
			}()
			stop := f.reviewer(t, func(pr scriptedgh.Pull, seen int) {
				<-outage
				time.Sleep(50 * time.Millisecond)
				f.merge(t, pr)
			})
			sum, err := f.pool.Run(context.Background())
			stop()
			is.NoErr(err)
			is.Equal(sum.Integrated, []string{id}) // settled once the forge was back
			is.Equal(len(sum.Failed[id]), 0)       // the outage was no attempt
			kinds := log.kinds(id)
			is.Equal(count(kinds, "forge-down"), 1) // reported once
			is.Equal(count(kinds, "forge-up"), 1)
			is.True(slices.Index(kinds, "forge-down") < slices.Index(kinds, "forge-up"))
			is.True(!slices.Contains(kinds, "failed"))
			is.True(strings.Contains(sh(t, f.p.repo, f.p.bd, "show", id, "--json"), `"status": "closed"`))
			refused := 0
			for _, r := range f.srv.Requests() {
				if r.Status == http.StatusBadGateway || r.Status == 0 {
					refused++
				}
			}
			is.True(refused > 0) // the forge was asked during the outage
		})
	}
}

func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}

// TestPullRequestClosedWithoutMerge: a person closes the pull request
// without merging: the issue goes back to PLANNING, reopened with a note
// and the stuck label, not counted as an attempt, and no worker takes it
// again; the pull request is not reopened, nothing is merged.
func TestPullRequestClosedWithoutMerge(t *testing.T) {
	is := is.New(t)
	runs := 0
	f := newPRFixture(t, func(ctx context.Context, a Assignment) (bool, error) {
		runs++
		if err := os.WriteFile(filepath.Join(a.Dir, "a.txt"), []byte("fixed\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	var log eventLog
	f.pool.Log = log.add
	id := f.p.create("fix a")
	stop := f.reviewer(t, func(pr scriptedgh.Pull, seen int) {
		time.Sleep(50 * time.Millisecond)
		f.srv.ClosePull(pr.Number)
	})
	sum, err := f.pool.Run(context.Background())
	stop()
	is.NoErr(err)
	is.Equal(runs, 1)                // not taken again
	is.Equal(len(sum.Failed[id]), 0) // not an attempt
	is.True(!slices.Contains(sum.Integrated, id))
	show := sh(t, f.p.repo, f.p.bd, "show", id, "--json")
	is.True(strings.Contains(show, `"status": "open"`))
	is.True(strings.Contains(show, "ralph:stuck"))
	is.True(strings.Contains(show, "was closed without a merge; the issue goes back to PLANNING"))
	is.True(slices.Contains(log.kinds(id), "released"))
	is.Equal(sum.Reviews[0].State, ReviewClosed)
	pulls := f.srv.Pulls()
	is.Equal(len(pulls), 1)
	is.True(!pulls[0].Merged)
	_, statErr := os.Stat(filepath.Join(f.pool.Trees.Root, ".review-"+id))
	is.True(os.IsNotExist(statErr)) // settled: out of the journal
}

// TestPullRequestMergeNotedForOtherClones: when a pull request is merged,
// its issue gets the note ff leaves ("integrated into origin/main at
// <commit>"), naming a commit of the remote's target that holds the work,
// even when the forge squashed it; another clone's worker, whose
// dependent waits on the blocker, goes on at that note.
func TestPullRequestMergeNotedForOtherClones(t *testing.T) {
	is := is.New(t)
	f := newPRFixture(t, func(ctx context.Context, a Assignment) (bool, error) {
		if err := os.WriteFile(filepath.Join(a.Dir, "a.txt"), []byte("fixed\n"), 0o644); err != nil {
			return false, err
		}
		return commitAndClose(ctx, a)
	})
	blocker := f.p.create("fix a")
	dependent := f.p.create("build on a", "--deps", blocker)
	sh(t, f.p.repo, f.p.bd, "update", dependent, "--status", "blocked") // worked in the other clone, not here
	stop := f.reviewer(t, func(pr scriptedgh.Pull, seen int) {
		// A squash merge: a new commit on main, not the pull request's head.
		tmp := t.TempDir()
		sh(t, tmp, "git", "clone", "-q", f.remote, "c")
		c := filepath.Join(tmp, "c")
		sh(t, c, "git", "merge", "-q", "--squash", "origin/"+pr.Head.Ref)
		sh(t, c, "git", "commit", "-q", "-m", "squashed")
		sh(t, c, "git", "push", "-q", "origin", "HEAD:main")
		f.srv.Merge(pr.Number)
	})
	sum, err := f.pool.Run(context.Background())
	stop()
	is.NoErr(err)
	is.Equal(sum.Integrated, []string{blocker})
	notes := sh(t, f.p.repo, f.p.bd, "show", blocker, "--json")
	var b []struct{ Notes string }
	is.NoErr(json.Unmarshal([]byte(notes), &b))
	commits := integratedCommits(b[0].Notes)
	is.Equal(len(commits), 1) // the note ff leaves
	tip := strings.TrimSpace(sh(t, f.remote, "git", "rev-parse", "refs/heads/main"))
	is.Equal(commits[0], tip)                                                                   // the remote's main, with the squash
	is.Equal(sh(t, f.remote, "git", "show", commits[0]+":a.txt"), "fixed")                      // which holds the work
	is.True(strings.Contains(b[0].Notes, "ralphd: integrated into origin/main at "+commits[0])) // in ff's words

	// The other clone's worker, waiting on the blocker, goes on.
	other := f.p.pool(1, nil)
	other.Actor = func(w string) string { return "ralphd/other/" + w }
	other.Queue = &mergeq.Queue{Repo: f.p.repo, Target: "main", Remote: "origin"}
	other.RemoteWait = 3 * time.Second
	why, err := other.awaitRemoteBlocker(context.Background(), "w1", "ralphd/other/w1", dependent, beads.Dependency{DependsOnID: blocker, Type: beads.DepBlocks})
	is.NoErr(err)
	is.Equal(why, "") // the work is on the remote's target: go on
}

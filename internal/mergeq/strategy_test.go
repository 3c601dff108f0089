package mergeq

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// recorder is a strategy that lives in this one file: it records what
// the queue hands it and answers from a script, one answer per Land (the
// last repeats). It proves a strategy needs nothing but its own file.
type recorder struct {
	t       *testing.T
	answers []answer
	// verified counts the queue's verify calls, to check that Land comes
	// after verify.
	verified *int
	lands    []landCall
}

type answer struct {
	l   Landing
	err error
}

// landCall is one Land call as the strategy saw it.
type landCall struct {
	w        Work
	head     string // HEAD of w.Dir when Land was called
	onBase   bool   // w.Base is an ancestor of w.Commit
	verified int    // verify calls before this Land
}

func (r *recorder) Land(ctx context.Context, q *Queue, w Work) (Landing, error) {
	r.t.Helper()
	c := landCall{w: w, head: sh(r.t, w.Dir, "git", "rev-parse", "HEAD"), verified: *r.verified}
	c.onBase = exec.Command("git", "-C", q.Repo, "merge-base", "--is-ancestor", w.Base, w.Commit).Run() == nil
	r.lands = append(r.lands, c)
	a := r.answers[min(len(r.lands), len(r.answers))-1]
	if a.l.Commit == "" && (a.l.Outcome == Integrated || a.l.Outcome == Waiting) {
		a.l.Commit = w.Commit
	}
	return a.l, a.err
}

func (r *recorder) Landed(_ context.Context, _ *Queue, commit string) bool {
	for _, c := range r.lands {
		if c.w.Commit == commit {
			return true
		}
	}
	return false
}

// TestStrategyIsHandedVerifiedWork: the queue calls its strategy with the
// work rebased onto the target's tip and verified, in the queue's
// worktree, and ends the integration as the strategy's Landing says. The
// target is the strategy's to move: this one moves nothing.
func TestStrategyIsHandedVerifiedWork(t *testing.T) {
	errForge := errors.New("the forge is down")
	for _, tc := range []struct {
		name    string
		answers []answer
		verify  error
		tries   int

		outcome Outcome
		lands   int // Land calls
		rounds  int
		kept    bool
		why     string // in Reason
		err     error
	}{
		{name: "integrated", answers: []answer{{l: Landing{Outcome: Integrated}}},
			outcome: Integrated, lands: 1, rounds: 1},
		{name: "waiting", answers: []answer{{l: Landing{Outcome: Waiting, Why: "pull request 7 awaits review"}}},
			outcome: Waiting, lands: 1, rounds: 1, why: "pull request 7 awaits review"},
		{name: "refused", answers: []answer{{l: Landing{Outcome: Failed, Why: "the forge refused the branch"}}},
			outcome: Failed, lands: 1, rounds: 1, kept: true, why: "the forge refused the branch"},
		{name: "again, then integrated", answers: []answer{{l: Landing{Again: true}}, {l: Landing{Outcome: Integrated}}},
			outcome: Integrated, lands: 2, rounds: 2},
		{name: "again every round", answers: []answer{{l: Landing{Again: true}}}, tries: 3,
			outcome: Failed, lands: 3, rounds: 3, kept: true, why: "rejected (3 rounds)"},
		{name: "error", answers: []answer{{err: errForge}},
			outcome: Failed, lands: 1, rounds: 1, err: errForge},
		{name: "red verify never lands", answers: []answer{{l: Landing{Outcome: Integrated}}}, verify: errors.New("tests failed"),
			outcome: Failed, lands: 0, rounds: 1, kept: true, why: "tests failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := newRepo(t)
			ctx := context.Background()
			verified, verifiedIn := 0, ""
			s := &recorder{t: t, answers: tc.answers, verified: &verified}
			q := &Queue{Repo: f.repo, Target: "main", Strategy: s, MaxPushTries: tc.tries,
				Verify: func(_ context.Context, dir string) error { verified, verifiedIn = verified+1, dir; return tc.verify }}
			req := f.work("w1", map[string]string{"a.txt": "a\n"})
			handed, err := q.Hand(ctx, req)
			is.NoErr(err)
			// The target moves on after the work started: the rebase is real.
			write(t, filepath.Join(f.repo, "b.txt"), "b\n")
			sh(t, f.repo, "git", "add", "b.txt")
			sh(t, f.repo, "git", "commit", "-q", "-m", "meanwhile")
			target := sh(t, f.repo, "git", "rev-parse", "main")
			var rebased []string
			req.Commit = handed
			req.Rebased = func(c string) error { rebased = append(rebased, c); return nil }

			res, err := q.Integrate(ctx, req)
			is.True(errors.Is(err, tc.err)) // the strategy's error, as it is
			is.Equal(res.Outcome(), tc.outcome)
			is.Equal(len(s.lands), tc.lands)
			is.Equal(res.Rounds, tc.rounds)
			is.Equal(len(rebased), tc.lands) // every landing was recorded first
			for i, c := range s.lands {
				is.Equal(c.w.Issue, req.Issue)
				is.Equal(c.w.Base, target)       // rebased onto the target's tip
				is.True(c.onBase)                // ... which the work holds
				is.True(c.w.Commit != handed)    // the rebased work, not the handed one
				is.Equal(c.head, c.w.Commit)     // checked out in Dir
				is.True(c.w.Dir != req.Dir)      // the queue's worktree, not the worker's
				is.Equal(c.w.Dir, verifiedIn)    // ... where verify ran
				is.Equal(c.verified, i+1)        // verified before each landing
				is.Equal(rebased[i], c.w.Commit) // what Rebased recorded is what landed
			}
			is.Equal(sh(t, f.repo, "git", "rev-parse", "main"), target) // the strategy moves the target, not the queue
			is.Equal(res.Kept != "", tc.kept)
			if tc.kept && tc.lands > 0 {
				is.Equal(sh(t, f.repo, "git", "rev-parse", res.Kept), s.lands[tc.lands-1].w.Commit) // the rebased work is kept
			}
			if tc.why != "" {
				is.True(strings.Contains(res.Reason(), tc.why)) // the note says why
			}
			if tc.outcome == Integrated || tc.outcome == Waiting {
				last := s.lands[len(s.lands)-1].w.Commit
				is.Equal(res.Commit, last)
				is.True(q.Landed(ctx, last)) // the next start asks the strategy too
			}
			is.True(!q.Landed(ctx, handed))
			f.clean()
		})
	}
}

// TestLookupStrategy: the configuration's names map to strategies; an
// unknown name is an error that lists the valid ones.
func TestLookupStrategy(t *testing.T) {
	is := is.New(t)
	is.Equal(StrategyNames()[0], DefaultStrategy) // the default first
	for _, name := range append(StrategyNames(), "") {
		s, err := LookupStrategy(name)
		is.NoErr(err)
		is.True(s != nil)
	}
	_, err := LookupStrategy("rebase-and-pray")
	is.True(err != nil)
	for _, name := range StrategyNames() {
		is.True(strings.Contains(err.Error(), name)) // the error lists every valid name
	}
}

package modes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/mergeq"
)

// With integrate = pr, the merge queue puts an issue's work on
// ralph/<issue> and opens a pull request; the issue counts as integrated
// only once a person (or the forge's auto-merge) merges it. Until then
// the issue stays held (a dependent here waits for it, as for work in the
// queue) but the worker is free: its next work goes through the queue
// meanwhile. The pool reads the pull request every ReviewPoll
// (awaitReview), with conditional requests, and acts on what it finds:
//
//   - merged: the issue is integrated; a dependent starts from the
//     target, fetched, which has the merge;
//   - a failing CI check, or a review of the head commit that requests
//     changes: a failed attempt, the issue reopened with the check's log
//     tail or the review's comments verbatim in its note and in the next
//     prompt; the next attempt's work replaces the branch, and so updates
//     the same pull request. A hopeless issue still ends STUCK;
//   - closed without a merge: the issue is reopened with a note and
//     labelled StuckLabel, for PLANNING to look at; not an attempt;
//   - a forge that does not answer: waited out, reported once, and never
//     an attempt.

// The states of a pull request the pool waits on, as status, the
// dashboard and the run report show them.
const (
	ReviewOpening          = "opening"            // pushed; the pull request not opened yet (the forge did not answer)
	ReviewWaiting          = "waiting for review" // open: CI running, a review pending
	ReviewChecksFailing    = "checks failing"     // a CI check failed: the issue reopened
	ReviewChangesRequested = "changes requested"  // a review requested changes: the issue reopened
	ReviewMerged           = "merged"             // merged: the issue integrated
	ReviewClosed           = "closed"             // closed without a merge: the issue back to PLANNING
)

// reviewState is how status shows a pull request the forge judged v.
func reviewState(v mergeq.PRVerdict) string {
	switch v {
	case mergeq.PRMerged:
		return ReviewMerged
	case mergeq.PRClosed:
		return ReviewClosed
	case mergeq.PRChecksFailed:
		return ReviewChecksFailing
	case mergeq.PRChangesRequested:
		return ReviewChangesRequested
	}
	return ReviewWaiting
}

// DefaultReviewPoll is how long the pool waits between reads of a pull
// request.
const DefaultReviewPoll = 60 * time.Second

// prTitle and prBody describe an issue's work for its pull request: the
// issue's id, title and acceptance criteria, the close reason the agent
// gave as evidence, ralphd's checks and their results, the run and the
// attempt.
func (p *Pool) prTitle(is beads.Issue) string {
	return fmt.Sprintf("%s: %s", is.ID, is.Title)
}

func (p *Pool) prBody(is beads.Issue, attempt int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Issue **%s**: %s\n\n", is.ID, is.Title)
	if s := strings.TrimSpace(is.AcceptanceCriteria); s != "" {
		fmt.Fprintf(&b, "## Acceptance\n\n%s\n\n", s)
	}
	if s := strings.TrimSpace(is.CloseReason); s != "" {
		fmt.Fprintf(&b, "## Evidence (the agent's close reason)\n\n%s\n\n", s)
	}
	b.WriteString("## ralphd's checks\n\n")
	checks := p.Checks
	if checks == "" {
		checks = "verify (none configured)"
	}
	fmt.Fprintf(&b, "- the iteration's judgement: passed (%s, and the issue's acceptance commands)\n", checks)
	fmt.Fprintf(&b, "- after rebasing onto `%s`: passed (%s)\n\n", p.Target, checks)
	run := "-"
	if p.res != nil {
		run = p.res.RunID
	}
	fmt.Fprintf(&b, "ralphd run `%s`, attempt %d. ralphd never merges: review, then merge.\n", run, attempt)
	return b.String()
}

// awaitReview waits until the pull request of j's work (res) is merged,
// closed, or fails review or CI, and settles its issue accordingly. A
// stop (ctx) leaves the issue as it is.
func (p *Pool) awaitReview(ctx context.Context, j *job, res mergeq.Result) error {
	a, id := j.a, j.issue.ID
	forge := p.Queue.Forge
	pr := res.PR
	poll := p.ReviewPoll
	if poll <= 0 {
		poll = DefaultReviewPoll
	}
	since := j.reviewSince
	if since.IsZero() {
		since = time.Now()
	}
	rs := ReviewStatus{Issue: id, Branch: res.Branch, Commit: res.Commit, PR: pr.Number, URL: pr.URL, State: ReviewOpening, Since: since}
	if pr.Number != 0 {
		rs.State = ReviewWaiting
	}
	p.setReview(a.Worker, id, rs)
	mark := reviewMark{Issue: id, Worker: a.Worker, Attempt: a.Attempt, Branch: res.Branch, Commit: res.Commit, PR: pr.Number, URL: pr.URL, Since: since}
	p.writeReviewMark(mark)
	settled := func(err error) error {
		if err == nil {
			p.clearReviewMark(id)
		}
		return err
	}
	down := time.Time{} // when the forge stopped answering
	for {
		var st mergeq.PRState
		var err error
		if pr.Number == 0 {
			pr, err = forge.Open(ctx, res.Branch, res.Commit, p.Target, p.prTitle(j.issue), p.prBody(j.issue, a.Attempt))
			if err == nil {
				p.log(Event{Worker: a.Worker, Issue: id, Kind: "waiting", Detail: fmt.Sprintf("pull request #%d (%s) awaits review and merge", pr.Number, pr.URL)})
				rs.PR, rs.URL, rs.State = pr.Number, pr.URL, ReviewWaiting
				p.setReview(a.Worker, id, rs)
				mark.PR, mark.URL = pr.Number, pr.URL
				p.writeReviewMark(mark)
			}
		}
		if err == nil {
			st, err = forge.Read(ctx, pr.Number, res.Commit)
			p.countForge(st)
		}
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil && down.IsZero():
			down = time.Now()
			p.log(Event{Worker: a.Worker, Issue: id, Kind: "forge-down", Detail: fmt.Sprintf("waiting it out (not an attempt): %v", err)})
		case err != nil:
		case !down.IsZero():
			p.log(Event{Worker: a.Worker, Issue: id, Kind: "forge-up", Detail: fmt.Sprintf("the forge answers again after %s", time.Since(down).Round(time.Second))})
			down = time.Time{}
		}
		if err == nil && reviewState(st.Verdict) != rs.State {
			rs.State = reviewState(st.Verdict)
			p.setReview(a.Worker, id, rs) // kept with its last state once settled, for status and the report
		}
		if err == nil {
			switch st.Verdict {
			case mergeq.PRMerged:
				return settled(p.reviewMerged(ctx, j, pr))
			case mergeq.PRClosed:
				return settled(p.reviewClosed(ctx, j, pr))
			case mergeq.PRChecksFailed, mergeq.PRChangesRequested:
				why := fmt.Sprintf("pull request #%d: %s; the next attempt's work updates it\n\n%s", pr.Number, st.Verdict, st.Evidence)
				return settled(p.fail(ctx, a, Failure{Why: why, Integration: true}))
			}
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// reviewMerged settles an issue whose pull request was merged: integrated.
func (p *Pool) reviewMerged(ctx context.Context, j *job, pr mergeq.PullRequest) error {
	a, id := j.a, j.issue.ID
	if j.win != nil { // nil when watched again after a restart
		p.ledger.integrated(j.win)
	}
	if _, err := p.Client(a.Actor, p.Queue.Repo).AppendNotes(ctx, id, fmt.Sprintf("ralphd: pull request #%d (%s) was merged into %s", pr.Number, pr.URL, p.Target)); err != nil {
		p.log(Event{Worker: a.Worker, Issue: id, Kind: "note-failed", Detail: err.Error()})
	}
	if p.Queue.Remote != "" {
		// Another clone's dependent waits for the note ff leaves too
		// (remote.go). The remote's target, fetched now that the forge
		// says merged, holds the work, however it was merged (a merge
		// commit, a squash, a rebase).
		if tip, err := p.Queue.Base(ctx); err != nil {
			p.log(Event{Worker: a.Worker, Issue: id, Kind: "note-failed", Detail: fmt.Sprintf("could not fetch %s/%s to note the merge: %v", p.Queue.Remote, p.Target, err)})
		} else {
			p.noteIntegrated(ctx, a.Worker, a.Actor, id, tip)
		}
	}
	if err := p.tally.Integrated(id); err != nil {
		return fmt.Errorf("worker %s: %w", a.Worker, err)
	}
	j.h.integrated = true
	p.mu.Lock()
	p.sum.Integrated = append(p.sum.Integrated, id)
	p.mu.Unlock()
	p.log(Event{Worker: a.Worker, Issue: id, Kind: "integrated", Detail: fmt.Sprintf("pull request #%d merged", pr.Number)})
	return nil
}

// reviewClosed releases an issue whose pull request was closed without a
// merge to PLANNING: reopened, noted and labelled StuckLabel, so that no
// worker takes it up again before a planner (or a person) looked at it.
// Not an attempt: nobody judged the work wanting.
func (p *Pool) reviewClosed(ctx context.Context, j *job, pr mergeq.PullRequest) error {
	a, id := j.a, j.issue.ID
	c := p.Client(a.Actor, p.Queue.Repo)
	note := fmt.Sprintf("ralphd: pull request #%d (%s) was closed without a merge; the issue goes back to PLANNING (label %s): decide what it needs, then clear the label", pr.Number, pr.URL, p.StuckLabel)
	if _, err := c.AppendNotes(ctx, id, note); err != nil {
		return p.giveUp(ctx, a.Actor, id, fmt.Errorf("worker %s: note on %s: %w", a.Worker, id, err))
	}
	if p.StuckLabel != "" {
		p.ownStuck.Store(id, true)
		if err := c.LabelAdd(ctx, id, p.StuckLabel); err != nil {
			return p.giveUp(ctx, a.Actor, id, fmt.Errorf("worker %s: label %s: %w", a.Worker, id, err))
		}
	}
	p.log(Event{Worker: a.Worker, Issue: id, Kind: "released", Detail: fmt.Sprintf("pull request #%d closed without a merge: back to PLANNING", pr.Number)})
	return p.giveUp(ctx, a.Actor, id, nil)
}

// A pull request the pool waits on outlives the pool: a stop (or a
// crash) leaves its issue closed, its work on ralph/<issue>, and the pull
// request open on the forge. So each one the pool waits on is journaled
// in the worktrees' root (.review-<issue>, written atomically), and the
// next start watches it again (rewatch), holding its issue so that
// dependents wait, as before the stop; one merged meanwhile settles at
// the first read. The journal lives in ralphd's state dir, which a
// sandboxed agent cannot write.

// reviewMark is the journal entry of a pull request the pool waits on.
type reviewMark struct {
	Issue   string    `json:"issue"`
	Worker  string    `json:"worker"`
	Attempt int       `json:"attempt"`
	Branch  string    `json:"branch"`
	Commit  string    `json:"commit"`
	PR      int       `json:"pr,omitempty"`
	URL     string    `json:"url,omitempty"`
	Since   time.Time `json:"since"`
}

// reviewMarkPrefix starts the name of a journal entry.
const reviewMarkPrefix = ".review-"

// reviewPath is the journal entry of issue id.
func (p *Pool) reviewPath(id string) string {
	return filepath.Join(p.Trees.Root, reviewMarkPrefix+id)
}

// writeReviewMark journals m; the watch goes on without it when it
// cannot be written (a restart then does not watch the pull request).
func (p *Pool) writeReviewMark(m reviewMark) {
	if !validMarkIssue(m.Issue) {
		return
	}
	b, err := json.Marshal(m)
	if err == nil {
		err = os.MkdirAll(p.Trees.Root, 0o755)
	}
	if err == nil {
		err = atomicfile.Write(p.reviewPath(m.Issue), append(b, '\n'), 0o600)
	}
	if err != nil {
		p.log(Event{Worker: m.Worker, Issue: m.Issue, Kind: "waiting", Detail: "could not journal the pull request (a restart will not watch it again): " + err.Error()})
	}
}

func (p *Pool) clearReviewMark(id string) {
	if validMarkIssue(id) {
		_ = os.Remove(p.reviewPath(id))
	}
}

// validMarkIssue reports whether id can name a journal entry: a bd issue
// id, no path, no option, no blanks or control characters.
func validMarkIssue(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.HasPrefix(id, "-") && !strings.ContainsAny(id, "/ \t\r\n\x00") && !hasControl(id)
}

// parseReviewMark reads a journal entry; ok is false for anything that
// is not one (it is then dropped: a restart cannot act on it).
func parseReviewMark(b []byte) (m reviewMark, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || dec.More() {
		return reviewMark{}, false
	}
	switch {
	case !validMarkIssue(m.Issue), git.CheckWorker(m.Worker) != nil, m.Attempt < 1, m.PR < 0,
		!git.IsHash(m.Commit), m.Branch == "", strings.HasPrefix(m.Branch, "-"), hasControl(m.Branch), hasControl(m.URL), m.Since.IsZero():
		return reviewMark{}, false
	}
	return m, true
}

// recoverReviews reads the journal a stopped pool left and returns the
// pull requests to watch again: each whose issue is still closed and
// still its worker's (bd keeps the assignee of a closed issue). An entry
// whose issue a person reopened or gave to someone else is dropped: the
// issue is no longer waiting on its pull request.
func (p *Pool) recoverReviews(ctx context.Context, c *beads.Client) ([]reviewMark, error) {
	paths, _ := filepath.Glob(filepath.Join(p.Trees.Root, reviewMarkPrefix+"*"))
	var out []reviewMark
	for _, path := range paths {
		b, ok := p.readMarker(path, "")
		if !ok {
			continue
		}
		m, ok := parseReviewMark(b)
		if !ok || filepath.Base(path) != reviewMarkPrefix+m.Issue {
			p.log(Event{Kind: "recovered", Detail: "dropped " + filepath.Base(path) + ": not a pull request ralphd waits on"})
			_ = os.Remove(path)
			continue
		}
		is, err := c.Show(ctx, m.Issue)
		if err != nil {
			return nil, fmt.Errorf("workers: recover the pull request of %s: %w", m.Issue, err)
		}
		if is.Status != beads.StatusClosed || is.Assignee != p.actor(m.Worker) {
			p.log(Event{Worker: m.Worker, Issue: m.Issue, Kind: "recovered", Detail: fmt.Sprintf("no longer waits on pull request #%d: the issue is %s, assigned to %q", m.PR, is.Status, is.Assignee)})
			_ = os.Remove(path)
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// rewatch watches the pull requests of ms again, each holding its issue
// until it settles, as awaitReview does after the merge queue.
func (p *Pool) rewatch(ctx context.Context, ms []reviewMark) {
	for _, m := range ms {
		actor := p.actor(m.Worker)
		is, err := p.Client(actor, p.Queue.Repo).Show(ctx, m.Issue)
		if err != nil {
			is = beads.Issue{ID: m.Issue, Status: beads.StatusClosed}
		}
		h, other := p.hold(m.Issue, actor)
		if other != nil {
			continue
		}
		j := &job{a: Assignment{Worker: m.Worker, Actor: actor, Issue: is, Attempt: m.Attempt}, issue: is, h: h,
			done: make(chan struct{}), free: make(chan struct{}), reviewSince: m.Since}
		p.mu.Lock()
		p.busy++
		p.mu.Unlock()
		p.log(Event{Worker: m.Worker, Issue: m.Issue, Kind: "recovered", Detail: fmt.Sprintf("watching pull request #%d again", m.PR)})
		p.jobs.Add(1)
		go func() {
			defer p.jobs.Done()
			err := p.awaitReview(ctx, j, mergeq.Result{Branch: m.Branch, Commit: m.Commit, PR: mergeq.PullRequest{Number: m.PR, URL: m.URL}})
			p.release(m.Issue, h)
			p.mu.Lock()
			p.endedLocked(is, err == nil && h.integrated)
			p.mu.Unlock()
			close(j.done)
			if err != nil && p.abort != nil {
				p.abort(err)
			}
		}()
	}
}

// forge is the Forge integrate = pr opens pull requests on (config forge):
// GitHub through the user's gh, or a Gitea server through its API with
// the token in ralphd's own environment (mergeq.GiteaTokenEnv), which no
// agent's environment has (agent.ForgeTokenEnv).
func (l *Loop) forge() (mergeq.Forge, error) {
	c := l.Config
	if c.ForgeRepo == "" {
		return nil, fmt.Errorf("integrate = pr needs forge_repo, the repository (owner/name) to open pull requests in")
	}
	if c.Forge != "gitea" {
		gh := &mergeq.GitHub{Repo: c.ForgeRepo}
		if c.ForgeHost != "" {
			gh.Env = []string{"GH_HOST=" + c.ForgeHost}
		}
		return gh, nil
	}
	base, err := mergeq.GiteaBaseURL(c.ForgeHost)
	if err != nil {
		return nil, err
	}
	token := ""
	for _, kv := range l.Env {
		if v, ok := strings.CutPrefix(kv, mergeq.GiteaTokenEnv+"="); ok {
			token = v
		}
	}
	if token == "" {
		return nil, fmt.Errorf("forge = gitea needs an API token in ralphd's environment: create one on %s (Settings, Applications; scopes write:repository) and export %s", base, mergeq.GiteaTokenEnv)
	}
	return &mergeq.Gitea{URL: base, Repo: c.ForgeRepo, Token: token}, nil
}

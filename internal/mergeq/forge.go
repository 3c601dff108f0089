package mergeq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/proc"
)

// A Forge is where the strategy pr opens pull requests and reads what
// people and CI made of them. ralphd only opens and reads: no method
// merges or approves.
type Forge interface {
	// Open returns the open pull request from head into base, or the
	// one already merged or closed at sha (head's tip), opening one with
	// title and body when there is neither.
	Open(ctx context.Context, head, sha, base, title, body string) (PullRequest, error)
	// Read reads pull request n as it is now, with the verdicts on its
	// head commit sha: CI's checks and people's reviews.
	Read(ctx context.Context, n int, sha string) (PRState, error)
}

// PullRequest is an open pull request.
type PullRequest struct {
	Number int
	URL    string
}

// PRVerdict is what became of a pull request, as far as ralphd acts on it.
type PRVerdict int

const (
	// PROpen: open, nothing to act on yet (CI running, review pending).
	PROpen PRVerdict = iota
	// PRMerged: merged, by a person or the forge's auto-merge.
	PRMerged
	// PRClosed: closed without a merge.
	PRClosed
	// PRChecksFailed: a CI check on the head commit failed.
	PRChecksFailed
	// PRChangesRequested: a review of the head commit requests changes.
	PRChangesRequested
)

// String names the verdict, for status and logs.
func (v PRVerdict) String() string {
	return [...]string{"open", "merged", "closed", "checks failed", "changes requested"}[v]
}

// PRState is a pull request as Forge.Read found it.
type PRState struct {
	Verdict PRVerdict
	// Evidence is, for failed checks, each failing check's name and the
	// tail of its log; for requested changes, the review's body and its
	// line comments: verbatim, for the issue's note and the next prompt.
	Evidence string
	// Calls counts the API requests the read made, NotModified those
	// answered 304 (which GitHub does not count against the rate limit).
	Calls, NotModified int
}

// LogTail bounds the log kept of a failing check: its last bytes.
const LogTail = 4 << 10

// GitHub is a Forge on GitHub (or GitHub Enterprise) through the user's
// gh CLI and its login: `gh api`, REST only. Reads are conditional (the
// ETag of each URL's last answer), so an unchanged pull request costs
// requests GitHub answers 304 without counting them.
// DefaultForgeTimeout bounds one gh call when GitHub.Timeout is zero.
const DefaultForgeTimeout = 2 * time.Minute

type GitHub struct {
	// Bin is the gh executable; "" means "gh".
	Bin string
	// Repo is owner/name.
	Repo string
	// Env is added to gh's environment (GH_HOST for an Enterprise host).
	Env []string
	// Timeout bounds one gh call: a forge that does not answer in time is
	// down for the pool (waited out). Zero means DefaultForgeTimeout.
	Timeout time.Duration

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	etag string
	body []byte
}

// ghResponse is `gh api -i` output: the status, headers and body.
type ghResponse struct {
	status int
	etag   string
	body   []byte
}

// parseGHResponse reads `gh api -i` output: an HTTP status line, headers,
// a blank line, the body.
func parseGHResponse(out []byte) (ghResponse, error) {
	head, body, ok := bytes.Cut(out, []byte("\r\n\r\n"))
	if !ok {
		if head, body, ok = bytes.Cut(out, []byte("\n\n")); !ok {
			return ghResponse{}, fmt.Errorf("gh api: no HTTP response in its output (%.80q)", out)
		}
	}
	lines := strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n")
	f := strings.Fields(lines[0])
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return ghResponse{}, fmt.Errorf("gh api: no HTTP status line in its output (%.80q)", lines[0])
	}
	status, err := strconv.Atoi(f[1])
	if err != nil || status < 100 || status > 599 {
		return ghResponse{}, fmt.Errorf("gh api: bad HTTP status %q", f[1])
	}
	r := ghResponse{status: status, body: body}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "etag") {
			r.etag = strings.TrimSpace(v)
		}
	}
	return r, nil
}

// api runs `gh api -i` for method and path, with the JSON body in (nil:
// none); a GET is conditional on the path's last ETag, and a 304 answered
// from the cache. It returns the body of a 2xx answer.
func (g *GitHub) api(ctx context.Context, method, path string, in any, st *PRState) ([]byte, error) {
	bin := g.Bin
	if bin == "" {
		bin = "gh"
	}
	args := []string{"api", "-i", "-X", method, "-H", "Accept: application/vnd.github+json"}
	g.mu.Lock()
	c, have := g.cache[path]
	g.mu.Unlock()
	if method == "GET" && have {
		args = append(args, "-H", "If-None-Match: "+c.etag)
	}
	var stdin []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		stdin, args = b, append(args, "--input", "-")
	}
	args = append(args, path)
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = DefaultForgeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := proc.Command(ctx, 5*time.Second, bin, args...)
	cmd.Env = append(os.Environ(), g.Env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if st != nil {
		st.Calls++
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("gh api %s %s: %w", method, path, ctx.Err())
	}
	r, err := parseGHResponse(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gh api %s %s: %w (%v: %s)", method, path, err, runErr, bytes.TrimSpace(stderr.Bytes()))
	}
	switch {
	case r.status == 304 && have:
		if st != nil {
			st.NotModified++
		}
		return c.body, nil
	case r.status < 200 || r.status > 299:
		return nil, &forgeError{status: r.status, msg: fmt.Sprintf("gh api %s %s: HTTP %d: %.300s", method, path, r.status, bytes.TrimSpace(r.body))}
	}
	if method == "GET" && r.etag != "" {
		g.mu.Lock()
		if g.cache == nil {
			g.cache = map[string]cached{}
		}
		g.cache[path] = cached{etag: r.etag, body: r.body}
		g.mu.Unlock()
	}
	return r.body, nil
}

// forgeError is an answer of the forge that is not a success.
type forgeError struct {
	status int
	msg    string
}

func (e *forgeError) Error() string { return e.msg }

// Open implements Forge.
func (g *GitHub) Open(ctx context.Context, head, sha, base, title, body string) (PullRequest, error) {
	owner, _, _ := strings.Cut(g.Repo, "/")
	var pulls []ghPull
	if err := g.get(ctx, "repos/"+g.Repo+"/pulls?state=all&head="+owner+":"+head, &pulls, nil); err != nil {
		return PullRequest{}, err
	}
	for _, p := range pulls {
		// Open, or settled (merged, closed) at this very work: a
		// reviewer may merge a branch before its pull request is
		// looked up.
		if p.State == "open" || p.Head.SHA == sha {
			return PullRequest{Number: p.Number, URL: p.HTMLURL}, nil
		}
	}
	b, err := g.api(ctx, "POST", "repos/"+g.Repo+"/pulls", map[string]string{"title": title, "head": head, "base": base, "body": body}, nil)
	if err != nil {
		return PullRequest{}, err
	}
	var p ghPull
	if err := json.Unmarshal(b, &p); err != nil || p.Number == 0 {
		return PullRequest{}, fmt.Errorf("open a pull request from %s: the forge's answer has no number", head)
	}
	return PullRequest{Number: p.Number, URL: p.HTMLURL}, nil
}

// ghPull is the part of a GitHub pull request ralphd reads.
type ghPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	Merged  bool   `json:"merged"`
	Head    struct {
		SHA string `json:"sha"`
	} `json:"head"`
}

// Read implements Forge (readPR): the pull request, then the check runs
// on sha, then the reviews. Each is one conditional GET; a failing
// GitHub Actions check adds its job's log, requested changes the pull
// request's review comments.
func (g *GitHub) Read(ctx context.Context, n int, sha string) (PRState, error) {
	return readPR(ctx, g, n, sha)
}

func (g *GitHub) pull(ctx context.Context, n int, st *PRState) (pullState, error) {
	var p ghPull
	err := g.get(ctx, fmt.Sprintf("repos/%s/pulls/%d", g.Repo, n), &p, st)
	return pullState{Merged: p.Merged, Closed: p.State == "closed"}, err
}

func (g *GitHub) failedChecks(ctx context.Context, sha string, st *PRState) ([]string, error) {
	var checks struct {
		Runs []struct {
			ID         int    `json:"id"`
			Name       string `json:"name"`
			Conclusion string `json:"conclusion"`
			DetailsURL string `json:"details_url"`
			Output     struct {
				Title, Summary, Text string
			} `json:"output"`
		} `json:"check_runs"`
	}
	if err := g.get(ctx, fmt.Sprintf("repos/%s/commits/%s/check-runs", g.Repo, sha), &checks, st); err != nil {
		return nil, err
	}
	var failed []string
	for _, c := range checks.Runs {
		switch c.Conclusion {
		case "failure", "timed_out", "cancelled", "action_required":
		default:
			continue
		}
		log := strings.TrimSpace(strings.Join(nonEmpty(c.Output.Title, c.Output.Summary, c.Output.Text), "\n"))
		if strings.Contains(c.DetailsURL, "/actions/runs/") {
			// A GitHub Actions job: its check run's id is the job's.
			if b, err := g.api(ctx, "GET", fmt.Sprintf("repos/%s/actions/jobs/%d/logs", g.Repo, c.ID), nil, st); err == nil {
				log = string(b)
			}
		}
		failed = append(failed, failedCheck(c.Name, c.Conclusion, log))
	}
	return failed, nil
}

func (g *GitHub) reviews(ctx context.Context, n int, st *PRState) ([]review, error) {
	var rs []struct {
		ID       int64 `json:"id"`
		User     struct{ Login string }
		Body     string `json:"body"`
		State    string `json:"state"`
		CommitID string `json:"commit_id"`
	}
	if err := g.get(ctx, fmt.Sprintf("repos/%s/pulls/%d/reviews", g.Repo, n), &rs, st); err != nil {
		return nil, err
	}
	out := make([]review, 0, len(rs))
	for _, r := range rs {
		out = append(out, review{ID: r.ID, Login: r.User.Login, Body: r.Body, CommitID: r.CommitID, RequestsChanges: r.State == "CHANGES_REQUESTED"})
	}
	return out, nil
}

func (g *GitHub) comments(ctx context.Context, n int, r review, st *PRState) ([]lineComment, error) {
	var cs []struct {
		ReviewID int64  `json:"pull_request_review_id"`
		Path     string `json:"path"`
		Line     int    `json:"line"`
		Body     string `json:"body"`
	}
	if err := g.get(ctx, fmt.Sprintf("repos/%s/pulls/%d/comments", g.Repo, n), &cs, st); err != nil {
		return nil, err
	}
	var out []lineComment
	for _, c := range cs {
		if c.ReviewID == r.ID {
			out = append(out, lineComment{Path: c.Path, Line: c.Line, Body: c.Body})
		}
	}
	return out, nil
}

// prReads is one forge's reads of a pull request, each in its own API's
// shapes; readPR puts them together the same way for every forge.
type prReads interface {
	// pull reads pull request n itself.
	pull(ctx context.Context, n int, st *PRState) (pullState, error)
	// failedChecks reads CI on commit sha: for each failing check, its
	// name, its result and the tail of its log (failedCheck).
	failedChecks(ctx context.Context, sha string, st *PRState) ([]string, error)
	// reviews lists pull request n's reviews, oldest first.
	reviews(ctx context.Context, n int, st *PRState) ([]review, error)
	// comments reads review r's line comments.
	comments(ctx context.Context, n int, r review, st *PRState) ([]lineComment, error)
}

// pullState is what decides first: merged, or closed without a merge.
type pullState struct{ Merged, Closed bool }

// review is a review of a pull request, in no forge's shape.
type review struct {
	ID                    int64
	Login, Body, CommitID string
	// RequestsChanges: GitHub's CHANGES_REQUESTED, Gitea's
	// REQUEST_CHANGES not dismissed.
	RequestsChanges bool
}

// lineComment is a review's comment on a line.
type lineComment struct {
	Path string
	Line int
	Body string
}

// readPR reads pull request n with the verdicts on its head commit sha:
// merged or closed settle it; else a failing check, then the latest
// review of sha that requests changes, each with its evidence verbatim.
func readPR(ctx context.Context, f prReads, n int, sha string) (PRState, error) {
	var st PRState
	p, err := f.pull(ctx, n, &st)
	switch {
	case err != nil:
		return st, err
	case p.Merged:
		st.Verdict = PRMerged
		return st, nil
	case p.Closed:
		st.Verdict = PRClosed
		return st, nil
	}
	failed, err := f.failedChecks(ctx, sha, &st)
	if err != nil {
		return st, err
	}
	if len(failed) > 0 {
		st.Verdict, st.Evidence = PRChecksFailed, strings.Join(failed, "\n\n")
		return st, nil
	}
	reviews, err := f.reviews(ctx, n, &st)
	if err != nil {
		return st, err
	}
	for i := len(reviews) - 1; i >= 0; i-- {
		r := reviews[i]
		if r.CommitID != sha || !r.RequestsChanges {
			continue
		}
		comments, err := f.comments(ctx, n, r, &st)
		if err != nil {
			return st, err
		}
		ev := fmt.Sprintf("review by %s requests changes:\n%s", r.Login, r.Body)
		for _, c := range comments {
			ev += fmt.Sprintf("\n\n%s:%d:\n%s", c.Path, c.Line, c.Body)
		}
		st.Verdict, st.Evidence = PRChangesRequested, ev
		return st, nil
	}
	return st, nil
}

// failedCheck is a failing check's evidence: its name and result, and
// the tail of its log (LogTail).
func failedCheck(name, result, log string) string {
	return fmt.Sprintf("CI check %q: %s\n%s", name, result, tail(log, LogTail))
}

// get is a conditional GET of path into v.
func (g *GitHub) get(ctx context.Context, path string, v any, st *PRState) error {
	b, err := g.api(ctx, "GET", path, nil, st)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("gh api GET %s: %w", path, err)
	}
	return nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// tail is the last n bytes of s, cut at a line start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return "…\n" + s
}

package mergeq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GiteaTokenEnv is the variable of ralphd's own environment that holds
// the token of the Gitea (or Forgejo) account ralphd opens pull requests
// as. agent.ForgeTokenEnv removes it from every agent's environment.
const GiteaTokenEnv = "GITEA_TOKEN"

// Gitea is a Forge on a Gitea (or Forgejo) server, through its REST API
// (/api/v1) with the user's token. As for GitHub, ralphd only opens and
// reads pull requests. Every GET is conditional when the server sent an
// ETag for the URL before; Gitea 1.27 sends none on these endpoints, so
// there each read is three plain requests, and forge_poll bounds them.
type Gitea struct {
	// URL is the server's base URL (https://git.example.com; a bare host
	// means https).
	URL string
	// Repo is owner/name.
	Repo string
	// Token is the API token (Authorization: token ...).
	Token string
	// Client makes the requests; nil means a plain http.Client.
	Client *http.Client
	// Timeout bounds one request: a forge that does not answer in time
	// is down for the pool (waited out). Zero means DefaultForgeTimeout.
	Timeout time.Duration

	mu    sync.Mutex
	cache map[string]cached
}

// GiteaBaseURL is forge_host as a base URL: a bare host means https, and
// a trailing slash is dropped.
func GiteaBaseURL(host string) (string, error) {
	h := strings.TrimSpace(host)
	if h == "" {
		return "", errors.New("forge = gitea needs forge_host, the server's URL (https://git.example.com)")
	}
	if !strings.Contains(h, "://") {
		h = "https://" + h
	}
	u, err := url.Parse(h)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || strings.HasSuffix(u.Host, ":") ||
		strings.ContainsAny(h, "?#@\"<>\\ \t\r\n") {
		return "", fmt.Errorf("forge_host %q is not a Gitea server's URL: give http(s)://host[:port][/path]", host)
	}
	return strings.TrimRight(h, "/"), nil
}

// api makes one request to the API path (below /api/v1/), with the JSON
// body in (nil: none); a GET is conditional on the path's last ETag, and
// a 304 answered from the cache. It returns the body of a 2xx answer (up
// to 32 MiB).
func (g *Gitea) api(ctx context.Context, method, path string, in any, st *PRState) ([]byte, error) {
	return g.do(ctx, method, path, in, st, 0)
}

// do is api, keeping of a 2xx answer only its last keepTail bytes when
// keepTail > 0 (a job's log of any length).
func (g *Gitea) do(ctx context.Context, method, path string, in any, st *PRState, keepTail int) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = DefaultForgeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, g.URL+"/api/v1/"+path, body)
	if err != nil {
		return nil, fmt.Errorf("gitea %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if g.Token != "" {
		req.Header.Set("Authorization", "token "+g.Token)
	}
	g.mu.Lock()
	c, have := g.cache[path]
	g.mu.Unlock()
	if method == http.MethodGet && have {
		req.Header.Set("If-None-Match", c.etag)
	}
	client := g.Client
	if client == nil {
		client = http.DefaultClient
	}
	if st != nil {
		st.Calls++
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gitea %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	var b []byte
	if keepTail > 0 && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		b, err = readTail(resp.Body, keepTail)
	} else {
		b, err = io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	}
	if err != nil {
		return nil, fmt.Errorf("gitea %s %s: reading the answer: %w", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && have:
		if st != nil {
			st.NotModified++
		}
		return c.body, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, &forgeError{status: resp.StatusCode, msg: fmt.Sprintf("gitea %s %s: HTTP %d: %.300s", method, path, resp.StatusCode, bytes.TrimSpace(b))}
	}
	if etag := resp.Header.Get("ETag"); method == http.MethodGet && etag != "" {
		g.mu.Lock()
		if g.cache == nil {
			g.cache = map[string]cached{}
		}
		g.cache[path] = cached{etag: etag, body: b}
		g.mu.Unlock()
	}
	return b, nil
}

// readTail reads r to its end, keeping its last n bytes.
func readTail(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, 2*n)
	chunk := make([]byte, 32<<10)
	for {
		k, err := r.Read(chunk)
		buf = append(buf, chunk[:k]...)
		if len(buf) > n {
			buf = append(buf[:0], buf[len(buf)-n:]...)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// get is a conditional GET of path into v.
func (g *Gitea) get(ctx context.Context, path string, v any, st *PRState) error {
	b, err := g.api(ctx, http.MethodGet, path, nil, st)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("gitea GET %s: %w", path, err)
	}
	return nil
}

// giteaPull is the part of a Gitea pull request ralphd reads.
type giteaPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	Merged  bool   `json:"merged"`
	Head    struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
}

// Open implements Forge: the pull request from head into base (Gitea's
// lookup by base and head), if open or settled at sha; else a new one. A
// create Gitea refuses as a duplicate (409) finds the open one among
// the open pull requests.
//
// Whether a settled pull request was at sha is its refs/pull/<n>/head:
// Gitea's head.sha is the branch's tip whatever became of the pull
// request, so a merged one would pass for the next attempt's work.
func (g *Gitea) Open(ctx context.Context, head, sha, base, title, body string) (PullRequest, error) {
	var p giteaPull
	err := g.get(ctx, fmt.Sprintf("repos/%s/pulls/%s/%s", g.Repo, url.PathEscape(base), head), &p, nil)
	var fe *forgeError
	switch {
	case err == nil && p.State == "open":
		return PullRequest{Number: p.Number, URL: p.HTMLURL}, nil
	case err == nil:
		at, err := g.pullHead(ctx, p.Number)
		if err != nil {
			return PullRequest{}, err
		}
		if at == sha {
			return PullRequest{Number: p.Number, URL: p.HTMLURL}, nil
		}
	case !(errors.As(err, &fe) && fe.status == http.StatusNotFound):
		return PullRequest{}, err
	}
	b, err := g.api(ctx, http.MethodPost, "repos/"+g.Repo+"/pulls", map[string]string{"title": title, "head": head, "base": base, "body": body}, nil)
	if errors.As(err, &fe) && fe.status == http.StatusConflict {
		var open []giteaPull
		if err := g.get(ctx, "repos/"+g.Repo+"/pulls?state=open&limit=50", &open, nil); err != nil {
			return PullRequest{}, err
		}
		for _, p := range open {
			if p.Head.Ref == head {
				return PullRequest{Number: p.Number, URL: p.HTMLURL}, nil
			}
		}
	}
	if err != nil {
		return PullRequest{}, err
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Number == 0 {
		return PullRequest{}, fmt.Errorf("open a pull request from %s: the forge's answer has no number", head)
	}
	return PullRequest{Number: p.Number, URL: p.HTMLURL}, nil
}

// pullHead is the commit pull request n was last at: its
// refs/pull/<n>/head.
func (g *Gitea) pullHead(ctx context.Context, n int) (string, error) {
	path := fmt.Sprintf("repos/%s/git/refs/pull/%d/head", g.Repo, n)
	b, err := g.api(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return "", err
	}
	type ref struct {
		Ref    string `json:"ref"`
		Object struct {
			SHA string `json:"sha"`
		} `json:"object"`
	}
	var one ref
	if json.Unmarshal(b, &one) == nil && one.Object.SHA != "" {
		return one.Object.SHA, nil
	}
	var many []ref
	if err := json.Unmarshal(b, &many); err != nil {
		return "", fmt.Errorf("gitea GET %s: %w", path, err)
	}
	for _, r := range many {
		if r.Ref == fmt.Sprintf("refs/pull/%d/head", n) {
			return r.Object.SHA, nil
		}
	}
	return "", fmt.Errorf("gitea GET %s: no such ref", path)
}

// Read implements Forge (readPR): the pull request, then the combined
// commit status of sha (CI), then the reviews. Each is one GET; a failing
// status of a Gitea Actions job adds one for the job's log, requested
// changes one for the review's comments. A failing status of another CI
// carries its description and its link: Gitea keeps no log of its own
// for it.
func (g *Gitea) Read(ctx context.Context, n int, sha string) (PRState, error) {
	return readPR(ctx, g, n, sha)
}

func (g *Gitea) pull(ctx context.Context, n int, st *PRState) (pullState, error) {
	var p giteaPull
	err := g.get(ctx, fmt.Sprintf("repos/%s/pulls/%d", g.Repo, n), &p, st)
	return pullState{Merged: p.Merged, Closed: p.State == "closed"}, err
}

func (g *Gitea) failedChecks(ctx context.Context, sha string, st *PRState) ([]string, error) {
	var status struct {
		Statuses []struct {
			Context     string `json:"context"`
			State       string `json:"status"`
			Description string `json:"description"`
			TargetURL   string `json:"target_url"`
		} `json:"statuses"`
	}
	if err := g.get(ctx, fmt.Sprintf("repos/%s/commits/%s/status", g.Repo, url.PathEscape(sha)), &status, st); err != nil {
		return nil, err
	}
	var failed []string
	for _, s := range status.Statuses {
		if s.State != "failure" && s.State != "error" {
			continue
		}
		log := strings.TrimSpace(strings.Join(nonEmpty(s.Description, s.TargetURL), "\n"))
		if job, ok := g.actionsJob(s.TargetURL); ok {
			if b, err := g.do(ctx, http.MethodGet, fmt.Sprintf("repos/%s/actions/jobs/%d/logs", g.Repo, job), nil, st, LogTail*16); err == nil {
				log = string(b)
			}
		}
		failed = append(failed, failedCheck(s.Context, s.State, log))
	}
	return failed, nil
}

// actionsJob is the id of the Gitea Actions job behind a commit status's
// link, <repo's link>/actions/runs/<run>/jobs/<job> (Gitea's own, as it
// sets it: a path on this server, or a full URL of it), if it is one of
// this repository's.
func (g *Gitea) actionsJob(target string) (int64, bool) {
	u, err := url.Parse(target)
	if err != nil || (u.Host != "" && !strings.HasPrefix(target, g.URL+"/")) {
		return 0, false
	}
	repoPath, rest, ok := strings.Cut(u.Path, "/actions/runs/")
	if !ok || !strings.EqualFold(strings.TrimSuffix(repoPath, "/"), strings.TrimSuffix(basePath(g.URL), "/")+"/"+g.Repo) {
		return 0, false
	}
	run, job, ok := strings.Cut(rest, "/jobs/")
	if !ok || !allDigits(run) || !allDigits(job) || len(job) > 18 {
		return 0, false
	}
	id, err := strconv.ParseInt(job, 10, 64)
	return id, err == nil && id > 0
}

// basePath is the path of a base URL (a Gitea served below /gitea has
// its repositories' links below it too).
func basePath(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Path
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (g *Gitea) reviews(ctx context.Context, n int, st *PRState) ([]review, error) {
	var rs []struct {
		ID        int64 `json:"id"`
		User      struct{ Login string }
		Body      string `json:"body"`
		State     string `json:"state"`
		CommitID  string `json:"commit_id"`
		Dismissed bool   `json:"dismissed"`
	}
	if err := g.get(ctx, fmt.Sprintf("repos/%s/pulls/%d/reviews", g.Repo, n), &rs, st); err != nil {
		return nil, err
	}
	out := make([]review, 0, len(rs))
	for _, r := range rs {
		out = append(out, review{ID: r.ID, Login: r.User.Login, Body: r.Body, CommitID: r.CommitID, RequestsChanges: r.State == "REQUEST_CHANGES" && !r.Dismissed})
	}
	return out, nil
}

func (g *Gitea) comments(ctx context.Context, n int, r review, st *PRState) ([]lineComment, error) {
	var cs []struct {
		Path string `json:"path"`
		Line int    `json:"position"`
		Body string `json:"body"`
	}
	if err := g.get(ctx, fmt.Sprintf("repos/%s/pulls/%d/reviews/%d/comments", g.Repo, n, r.ID), &cs, st); err != nil {
		return nil, err
	}
	out := make([]lineComment, 0, len(cs))
	for _, c := range cs {
		out = append(out, lineComment(c))
	}
	return out, nil
}

// Package scriptedgh is a scripted stand-in for GitHub's REST API, so
// tests run the real `gh` CLI (Debian's 2.23.0) against it with only the
// forge's server faked, as scriptedapi does for the model APIs.
//
// Pointing gh at it: gh 2.23 talks plain http to one host only,
// github.localhost (its API at http://api.github.localhost/), and Go's
// proxy rules send that through HTTP_PROXY; so Env sets GH_HOST to
// github.localhost, HTTP_PROXY to the server, GH_TOKEN, and a private
// GH_CONFIG_DIR. The server answers requests in proxy form
// (GET http://api.github.localhost/repos/...) and in origin form alike.
//
// It keeps one repository's pull requests, reviews, review comments,
// check runs and job logs. A test plays the people and the CI: Merge,
// Close, RequestChanges, Approve, FailCheck, PassCheck. Every request is
// recorded (Requests), and every pull request carries an ETag: a request
// with a matching If-None-Match gets 304, as GitHub's conditional
// requests do. Only tokens in Tokens are let in (401 otherwise); a merge
// or an approval through the API needs a token in Reviewers (403
// otherwise), as a token without write access gets from GitHub.
package scriptedgh

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Host is the GitHub host gh is pointed at (GH_HOST).
const Host = "github.localhost"

// Request is one request the server answered.
type Request struct {
	Method, Path, Query, IfNoneMatch, Token string
	Status                                  int
}

// CheckRun is a CI check on a commit.
type CheckRun struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion,omitempty"`
	DetailsURL string `json:"details_url"`
	Output     struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
		Text    string `json:"text"`
	} `json:"output"`
}

// Review is a pull request review.
type Review struct {
	ID       int    `json:"id"`
	User     user   `json:"user"`
	Body     string `json:"body"`
	State    string `json:"state"`
	CommitID string `json:"commit_id"`
}

type user struct {
	Login string `json:"login"`
}

// Comment is a review comment on a line.
type Comment struct {
	ID       int    `json:"id"`
	ReviewID int    `json:"pull_request_review_id"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	Body     string `json:"body"`
	User     user   `json:"user"`
}

// Pull is a pull request.
type Pull struct {
	Number   int    `json:"number"`
	Title    string `json:"title"`
	Body     string `json:"body"`
	State    string `json:"state"`
	Merged   bool   `json:"merged"`
	HTMLURL  string `json:"html_url"`
	Head     ref    `json:"head"`
	Base     ref    `json:"base"`
	MergedBy *user  `json:"merged_by"`
}

type ref struct {
	Ref string `json:"ref"`
	SHA string `json:"sha"`
}

// Server is the scripted API.
type Server struct {
	// Owner and Repo name the one repository served.
	Owner, Repo string
	// Tokens may use the API; Reviewers' tokens may also merge and
	// approve.
	Tokens, Reviewers []string
	// HeadSHA, when set, says where a branch is now (the test's bare
	// remote): a pull request's head follows pushes, as on GitHub.
	HeadSHA func(branch string) string
	// Down, when set, makes every request a 503 (an outage), or the
	// status DownStatus names (502 for a gateway's error).
	Down       func() bool
	DownStatus int
	// Stall, when set, makes every request hang until the client gives
	// up (a forge that does not answer: a timeout).
	Stall func() bool

	srv      *httptest.Server
	mu       sync.Mutex
	pulls    []*Pull
	reviews  map[int][]Review
	comments map[int][]Comment
	checks   []CheckRun
	logs     map[int]string
	nextID   int
	reqs     []Request
}

// Start starts s on loopback; Close stops it.
func (s *Server) Start() {
	s.reviews, s.comments, s.logs = map[int][]Review{}, map[int][]Comment{}, map[int]string{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// URL is the server's address, for HTTP_PROXY.
func (s *Server) URL() string { return s.srv.URL }

// Env is what gh needs to talk to the server with token, in a config
// directory of its own under dir.
func (s *Server) Env(token, dir string) []string {
	return []string{"GH_HOST=" + Host, "HTTP_PROXY=" + s.srv.URL, "http_proxy=" + s.srv.URL, "NO_PROXY=", "no_proxy=",
		"GH_TOKEN=" + token, "GH_CONFIG_DIR=" + filepath.Join(dir, "gh-config"), "GH_NO_UPDATE_NOTIFIER=1", "GH_PROMPT_DISABLED=1"}
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Pulls returns copies of the pull requests.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pull
	for _, p := range s.pulls {
		out = append(out, s.fresh(p))
	}
	return out
}

// Open opens a pull request from head into base, as its author would.
func (s *Server) Open(head, base, title string) Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.pulls) + 1
	p := &Pull{Number: n, Title: title, State: "open", Head: ref{Ref: head}, Base: ref{Ref: base},
		HTMLURL: fmt.Sprintf("https://%s/%s/%s/pull/%d", Host, s.Owner, s.Repo, n)}
	s.pulls = append(s.pulls, p)
	return s.fresh(p)
}

// Merge marks pull request n merged, by a person (the test moves the
// remote's target itself).
func (s *Server) Merge(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pull(n); p != nil {
		p.Head.SHA = s.fresh(p).Head.SHA // frozen at the merge
		p.State, p.Merged, p.MergedBy = "closed", true, &user{Login: "reviewer"}
	}
}

// ClosePull closes pull request n without merging it.
func (s *Server) ClosePull(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pull(n); p != nil {
		p.Head.SHA = s.fresh(p).Head.SHA
		p.State = "closed"
	}
}

// RequestChanges adds a review requesting changes on pull request n's
// head, with line comments (path:line → body).
func (s *Server) RequestChanges(n int, body string, comments map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pull(n)
	if p == nil {
		return
	}
	s.nextID++
	r := Review{ID: s.nextID, User: user{"reviewer"}, Body: body, State: "CHANGES_REQUESTED", CommitID: s.fresh(p).Head.SHA}
	s.reviews[n] = append(s.reviews[n], r)
	for where, text := range comments {
		path, line, _ := strings.Cut(where, ":")
		l, _ := strconv.Atoi(line)
		s.nextID++
		s.comments[n] = append(s.comments[n], Comment{ID: s.nextID, ReviewID: r.ID, Path: path, Line: l, Body: text, User: user{"reviewer"}})
	}
}

// SetCheck records a completed check named name on commit sha with the
// conclusion ("success", "failure") and, for a job, its log.
func (s *Server) SetCheck(sha, name, conclusion, log string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	c := CheckRun{ID: s.nextID, Name: name, HeadSHA: sha, Status: "completed", Conclusion: conclusion,
		DetailsURL: fmt.Sprintf("https://%s/%s/%s/actions/runs/1/job/%d", Host, s.Owner, s.Repo, s.nextID)}
	c.Output.Title = name + ": " + conclusion
	s.checks = append(s.checks, c)
	s.logs[c.ID] = log
}

func (s *Server) pull(n int) *Pull {
	for _, p := range s.pulls {
		if p.Number == n {
			return p
		}
	}
	return nil
}

// fresh is p with its head where the branch is now.
func (s *Server) fresh(p *Pull) Pull {
	c := *p
	if s.HeadSHA != nil && !c.Merged {
		if sha := s.HeadSHA(c.Head.Ref); sha != "" {
			c.Head.SHA = sha
		}
	}
	return c
}

var (
	rePulls    = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls$`)
	rePull     = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)(/reviews|/merge|/comments)?$`)
	reChecks   = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/commits/([0-9a-f]{40})/check-runs$`)
	reJobLogs  = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/actions/jobs/(\d+)/logs$`)
	reAnything = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(strings.TrimPrefix(r.Header.Get("Authorization"), "token "), "Bearer ")
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, IfNoneMatch: r.Header.Get("If-None-Match"), Token: token}
	status := s.route(w, r, token)
	rec.Status = status
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
}

// route answers r and returns the status it wrote.
func (s *Server) route(w http.ResponseWriter, r *http.Request, token string) int {
	if s.Stall != nil && s.Stall() {
		<-r.Context().Done()
		return 0 // nobody hears an answer
	}
	if s.Down != nil && s.Down() {
		status := s.DownStatus
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		return s.errorf(w, status, "the forge is down")
	}
	if !contains(s.Tokens, token) && !contains(s.Reviewers, token) {
		return s.errorf(w, http.StatusUnauthorized, "Bad credentials")
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v3")
	if m := reAnything.FindStringSubmatch(path); m == nil || m[1] != s.Owner || m[2] != s.Repo {
		return s.errorf(w, http.StatusNotFound, "Not Found")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := rePull.FindStringSubmatch(path); {
	case rePulls.MatchString(path) && r.Method == http.MethodGet:
		out := []Pull{}
		head, state := r.URL.Query().Get("head"), r.URL.Query().Get("state")
		for _, p := range s.pulls {
			if (head == "" || head == s.Owner+":"+p.Head.Ref) && (state == "" || state == "all" || state == p.State) {
				out = append(out, s.fresh(p))
			}
		}
		return s.json(w, r, http.StatusOK, out)
	case rePulls.MatchString(path) && r.Method == http.MethodPost:
		var in struct{ Title, Head, Base, Body string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil || in.Head == "" || in.Base == "" {
			return s.errorf(w, http.StatusUnprocessableEntity, "Validation Failed")
		}
		for _, p := range s.pulls {
			if p.Head.Ref == in.Head && p.State == "open" {
				return s.errorf(w, http.StatusUnprocessableEntity, "A pull request already exists for "+s.Owner+":"+in.Head+".")
			}
		}
		n := len(s.pulls) + 1
		p := &Pull{Number: n, Title: in.Title, Body: in.Body, State: "open", Head: ref{Ref: in.Head}, Base: ref{Ref: in.Base},
			HTMLURL: fmt.Sprintf("https://%s/%s/%s/pull/%d", Host, s.Owner, s.Repo, n)}
		s.pulls = append(s.pulls, p)
		return s.json(w, r, http.StatusCreated, s.fresh(p))
	case m != nil:
		n, _ := strconv.Atoi(m[3])
		p := s.pull(n)
		if p == nil {
			return s.errorf(w, http.StatusNotFound, "Not Found")
		}
		switch {
		case m[4] == "" && r.Method == http.MethodGet:
			return s.json(w, r, http.StatusOK, s.fresh(p))
		case m[4] == "/reviews" && r.Method == http.MethodGet:
			return s.json(w, r, http.StatusOK, append([]Review{}, s.reviews[n]...))
		case m[4] == "/comments" && r.Method == http.MethodGet:
			return s.json(w, r, http.StatusOK, append([]Comment{}, s.comments[n]...))
		case m[4] == "/merge" && r.Method == http.MethodPut:
			if !contains(s.Reviewers, token) {
				return s.errorf(w, http.StatusForbidden, "Resource not accessible by integration")
			}
			p.Head.SHA = s.fresh(p).Head.SHA
			p.State, p.Merged = "closed", true
			return s.json(w, r, http.StatusOK, map[string]any{"merged": true})
		case m[4] == "/reviews" && r.Method == http.MethodPost:
			if !contains(s.Reviewers, token) {
				return s.errorf(w, http.StatusForbidden, "Resource not accessible by integration")
			}
			s.nextID++
			s.reviews[n] = append(s.reviews[n], Review{ID: s.nextID, User: user{"reviewer"}, State: "APPROVED", CommitID: s.fresh(p).Head.SHA})
			return s.json(w, r, http.StatusOK, s.reviews[n][len(s.reviews[n])-1])
		}
	case reChecks.MatchString(path) && r.Method == http.MethodGet:
		sha := reChecks.FindStringSubmatch(path)[3]
		runs := []CheckRun{}
		for _, c := range s.checks {
			if c.HeadSHA == sha {
				runs = append(runs, c)
			}
		}
		return s.json(w, r, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": runs})
	case reJobLogs.MatchString(path) && r.Method == http.MethodGet:
		id, _ := strconv.Atoi(reJobLogs.FindStringSubmatch(path)[3])
		log, ok := s.logs[id]
		if !ok {
			return s.errorf(w, http.StatusNotFound, "Not Found")
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, log)
		return http.StatusOK
	}
	return s.errorf(w, http.StatusNotFound, "Not Found")
}

// json writes v with an ETag, or 304 when the request's If-None-Match
// names it.
func (s *Server) json(w http.ResponseWriter, r *http.Request, status int, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return s.errorf(w, http.StatusInternalServerError, err.Error())
	}
	etag := fmt.Sprintf(`"%x"`, sha256.Sum256(b))
	w.Header().Set("ETag", etag)
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if r.Method == http.MethodGet && r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return status
}

func (s *Server) errorf(w http.ResponseWriter, status int, msg string) int {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": msg})
	_, _ = w.Write(b)
	return status
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x != "" && x == s {
			return true
		}
	}
	return false
}

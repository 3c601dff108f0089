// Package scriptedapi is a scripted stand-in for the model APIs of the
// agent CLIs, so end-to-end tests and `ralphd demo` can run the real CLIs
// with only the model faked: the Anthropic Messages API (Claude Code), the
// OpenAI Responses API (Codex, POST /v1/responses), OpenAI Chat
// Completions (opencode, POST /v1/chat/completions) and the Gemini API
// (Gemini CLI, POST /v1beta/models/M:streamGenerateContent). One Script
// plays through any of them: a Bash turn becomes the CLI's own shell tool,
// tool results come back in each format's shape and are checked the same
// way, and a Fault is written as each API writes that error.
//
// Pointing each CLI at the server (see cmd/ralphd e2e_backends_test.go):
// Codex through a [model_providers.<id>] entry in $CODEX_HOME/config.toml
// (base_url URL()+"/v1", env_key, wire_api "responses",
// request_max_retries and stream_max_retries 0); opencode through a custom
// provider ("npm": "@ai-sdk/openai-compatible", options.baseURL) in the
// file OPENCODE_CONFIG names; Gemini CLI through GOOGLE_GEMINI_BASE_URL
// (honoured by 0.61.0), GEMINI_API_KEY, and security.auth.selectedType
// "gemini-api-key" in ~/.gemini/settings.json. A CLI that sends no session
// id (Gemini CLI) is told apart by its prompt: see Server.play.
//
// The rest of this comment is about Claude Code.
//
// Point Claude Code at a started Server with ANTHROPIC_BASE_URL=URL() and
// any ANTHROPIC_API_KEY (see Env). The server then plays Scripts: one
// Script per conversation (one claude process), each a sequence of Turns
// (text, Bash tool calls, or an HTTP Fault such as 429, 529, 401, 500 or a
// hanging connection). It records every request so a test can check what
// the agent sent back, for example that a refusal reached the model in a
// tool_result.
//
// Request routing, as observed with Claude Code 2.1.197 in
// `claude -p --output-format stream-json --verbose`:
//
//   - POST /v1/messages (with ?beta=true) whose tools include "Bash" and
//     whose max_tokens is not 1 is an agent request (KindAgent): it
//     consumes the next turn of its conversation's script.
//   - Any other POST /v1/messages is a side request (KindSide): it gets a
//     canned reply and consumes no turn. Claude Code 2.1.197 sends one per
//     session to generate a title (no tools, a json_schema output format
//     asking for {"title": string}; answered with such an object) unless
//     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1; subscribers also get a
//     max_tokens:1 "quota" probe. Other side requests get the text "OK".
//   - POST /v1/messages/count_tokens answers {"input_tokens": N}.
//   - Anything else (Claude Code sends HEAD / as a connectivity probe) gets
//     200 with an empty body for / and a 404 not_found_error otherwise.
//
// How Claude Code 2.1.197 reacts to faults (exit code 1 and a result line
// with is_error true in every failing case; see the package tests):
//
//   - It retries 401, 429, 5xx, 529 and timeouts itself, up to
//     CLAUDE_CODE_MAX_RETRIES times (default 10, at most 15), with backoff
//     0.5s doubling to 32s plus up to 25% jitter (a retry-after header is
//     honoured as a lower bound), printing a system/api_retry line per
//     retry. Each retry after a fault is a new request and consumes a
//     turn. A request whose body is the one a turn that was not a fault
//     answered last (the client gave up on reading the answer, and sent
//     it again) gets that turn again and consumes none (Request.Replayed).
//   - A response header `x-should-retry: false` (Fault.NoRetry) stops the
//     retries at once; so does a retry-after over 60 seconds.
//   - Three 529s in a row end the run ("Repeated 529 Overloaded errors").
//   - A request that gets no answer times out after API_TIMEOUT_MS
//     (default 600000) and is retried like the others.
//
// A conversation is identified by Claude Code's session id (header
// X-Claude-Code-Session-Id, or the session_id in metadata.user_id), or by
// its prompt when there is none. A new conversation takes the first
// unstarted Script whose Match accepts its prompt, so scripts are consumed
// in order unless they match on the prompt.
package scriptedapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DummyKey is the API key Env hands to the agent; the server accepts any.
const DummyKey = "sk-ant-scripted-dummy-key"

// DummyOAuthToken is the OAuth token SubscriptionEnv hands to the agent.
const DummyOAuthToken = "sk-ant-oat01-scripted-dummy-token"

// maxBody caps the request body the server reads.
const maxBody = 64 << 20

// Server is a scripted Messages API server on 127.0.0.1. Its methods are
// safe for concurrent use.
type Server struct {
	// Logf, when set before Start, receives one line per request.
	Logf func(format string, args ...any)

	mu       sync.Mutex
	scripts  []*scriptState
	convs    map[string]*scriptState // conversation key → script; nil value: unscripted
	requests []Request
	results  []ToolResult
	seenTool map[string]bool
	errs     []error
	seq      int // last request number
	ids      int // last id number
	started  bool
	closed   bool
	active   sync.WaitGroup // running handlers

	srv     *http.Server
	url     string
	closing chan struct{}
	served  chan struct{}
}

// scriptState is a script and how far it has been played.
type scriptState struct {
	Script
	name    string
	started bool
	next    int
	// faultsOnly: every turn served so far was a Fault.
	faultsOnly bool
	// answered is the body of the last request a turn other than a Fault
	// answered, and last that turn's index: a request with the same body
	// is the agent sending it again (its client gave up on the answer, on
	// a loaded machine), and gets the same turn.
	answered []byte
	last     int
}

// New returns an unstarted server that plays scripts, one per
// conversation, in order (see Script.Match).
func New(scripts ...Script) *Server {
	s := &Server{
		convs:    map[string]*scriptState{},
		seenTool: map[string]bool{},
		closing:  make(chan struct{}),
		served:   make(chan struct{}),
	}
	s.Add(scripts...)
	return s
}

// Add appends scripts for later conversations.
func (s *Server) Add(scripts ...Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range scripts {
		name := sc.Name
		if name == "" {
			name = "script " + strconv.Itoa(len(s.scripts))
		}
		sc.Turns = slices.Clone(sc.Turns)
		s.scripts = append(s.scripts, &scriptState{Script: sc, name: name})
	}
}

// Start listens on a free port of 127.0.0.1 and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("start scripted api: already started")
	}
	if s.closed {
		return errors.New("start scripted api: server is closed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("start scripted api: %w", err)
	}
	s.started = true
	s.url = "http://" + ln.Addr().String()
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return nil
}

// URL returns the base URL ("http://127.0.0.1:PORT"), for
// ANTHROPIC_BASE_URL. It is empty before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Env returns the environment entries that point Claude Code at the
// server: ANTHROPIC_BASE_URL and a dummy ANTHROPIC_API_KEY.
func (s *Server) Env() []string {
	return []string{"ANTHROPIC_BASE_URL=" + s.URL(), "ANTHROPIC_API_KEY=" + DummyKey}
}

// SubscriptionEnv is like Env but logs Claude Code in with a dummy
// CLAUDE_CODE_OAUTH_TOKEN instead of an API key, so it behaves as for a
// claude.ai subscriber: a UsageLimit fault then surfaces as a
// rate_limit_event line with resetsAt and a "You've hit your … limit ·
// resets …" result. The caller must not also set ANTHROPIC_API_KEY, which
// would take precedence.
func (s *Server) SubscriptionEnv() []string {
	return []string{"ANTHROPIC_BASE_URL=" + s.URL(), "CLAUDE_CODE_OAUTH_TOKEN=" + DummyOAuthToken}
}

// Close releases hanging requests, closes every connection and waits for
// the running handlers. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	srv, started := s.srv, s.started
	s.mu.Unlock()
	if started {
		// Connections first, so that a released hanging handler cannot
		// send a late empty answer.
		_ = srv.Close() // errors are not actionable here
		<-s.served
	}
	close(s.closing)
	s.active.Wait()
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ToolResults returns every tool_result the agent sent back, once each
// (the agent resends the whole history with every request), in order.
func (s *Server) ToolResults() []ToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.results)
}

// Errors returns the script failures recorded so far: failed checks,
// conversations with no script, requests after a script's last turn.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}

// Verify returns Errors joined with one error per script that was not
// played to its end, or nil when every script ran exactly as written.
func (s *Server) Verify() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := slices.Clone(s.errs)
	for _, st := range s.scripts {
		switch {
		case !st.started:
			errs = append(errs, fmt.Errorf("%s: never started (no conversation matched it)", st.name))
		case st.next < len(st.Turns):
			errs = append(errs, fmt.Errorf("%s: stopped after %d of %d turns", st.name, st.next, len(st.Turns)))
		}
	}
	return errors.Join(errs...)
}

// enter registers a running handler; it reports false once the server is
// closing, so that no handler starts after Close waits for them.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.active.Add(1)
	return true
}

// failf records a script failure.
func (s *Server) failf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Errorf(format, args...))
}

// logf logs through Logf when it is set.
func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// serveHTTP answers one request.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		http.Error(w, "scripted api is closing", http.StatusServiceUnavailable)
		return
	}
	defer s.active.Done()

	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	req := Request{
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Raw:      raw,
		Kind:     KindOther,
		Turn:     -1,
		At:       time.Now(),
	}
	req.InputTokens = InputTokens(raw)
	if err != nil {
		s.record(&req)
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", "read body: "+err.Error(), nil)
		return
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		req.Body = obj
	}

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		req.Kind = KindCountTokens
		s.record(&req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, "{\"input_tokens\": %d}\n", req.InputTokens)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, r, &req)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		s.responses(w, r, &req)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		s.chatCompletions(w, r, &req)
	case r.Method == http.MethodPost && isGeminiPath(r.URL.Path):
		s.gemini(w, r, &req)
	default:
		s.record(&req)
		if r.URL.Path == "/" {
			w.WriteHeader(http.StatusOK)
			return
		}
		s.writeError(w, http.StatusNotFound, "not_found_error", "scripted api: no route for "+r.Method+" "+r.URL.Path, nil)
	}
}

// messages answers POST /v1/messages.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, req *Request) {
	body, err := parseMessagesBody(req.Raw)
	if err != nil {
		req.Kind = KindSide
		s.record(req)
		s.writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), nil)
		return
	}
	req.Prompt = body.prompt()
	req.ToolResults = body.toolResults()
	if !body.isAgentRequest() {
		req.Kind = KindSide
		s.record(req)
		s.answer(w, req, body, body.sideText(), nil)
		return
	}
	fail := func(w http.ResponseWriter, f *Fault) { s.writeError(w, f.Status, f.Type, f.Message, f.Header) }
	text, calls, ok := s.agentTurn(w, r, req, conversationKey(r.Header, body), !body.hasAssistantTurn(), fail)
	if ok {
		s.answer(w, req, body, text, calls)
	}
}

// noTurn is the text that ends an agent's turn when its script has no
// turn left to play.
const noTurn = "scriptedapi: there is no scripted turn for this request."

// agentTurn plays the conversation's next turn for an agent request and
// returns its text and tool calls. For a fault it writes the error with
// fail (or holds the request, for Hang) and returns ok false: the answer
// is given. With no turn to play, play has recorded the failure and the
// text (noTurn) ends the agent's turn.
func (s *Server) agentTurn(w http.ResponseWriter, r *http.Request, req *Request, key string, fresh bool,
	fail func(http.ResponseWriter, *Fault)) (text string, calls []ToolCall, ok bool) {
	req.Kind = KindAgent
	turn, played := s.play(req, key, fresh)
	if !played {
		return noTurn, nil, true
	}
	s.runChecks(req, turn)
	if f := turn.Fault; f != nil {
		if !s.hang(r, f) {
			fail(w, f)
		}
		return "", nil, false
	}
	return turn.Text, turn.Calls, true
}

// hang holds a Hang fault's request open until the client goes away or
// the server closes, and reports whether f was one.
func (s *Server) hang(r *http.Request, f *Fault) bool {
	if !f.Hang {
		return false
	}
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
	return true
}

// play picks the conversation's script and its next turn, and records
// req. When there is no turn to play it records an error and returns false.
//
// key identifies the conversation. A key made from the prompt (for agents
// that send no session id) is shared by every run on the same prompt, so
// a request whose history has no model turn yet (fresh) starts a new
// conversation there, unless the conversation so far served only faults
// and has turns left: that request is the agent retrying.
func (s *Server) play(req *Request, key string, fresh bool) (Turn, bool) {
	s.mu.Lock()
	st, known := s.convs[key]
	if known && fresh && st != nil && strings.HasPrefix(key, "prompt:") &&
		(!st.faultsOnly || (st.next >= len(st.Turns) && !st.RepeatLast)) {
		known = false
	}
	if !known {
		for _, cand := range s.scripts {
			if !cand.started && (cand.Match == nil || cand.Match(req.Prompt)) {
				st = cand
				st.started, st.faultsOnly = true, true
				break
			}
		}
		s.convs[key] = st
		if st == nil {
			s.errs = append(s.errs, fmt.Errorf("no script for a new conversation with prompt %q", clip(req.Prompt)))
		}
	}
	var (
		turn Turn
		ok   bool
	)
	if st != nil {
		req.Script = st.name
		switch {
		case st.answered != nil && bytes.Equal(st.answered, req.Raw):
			turn, ok = st.Turns[st.last], true
			req.Turn, req.Replayed = st.last, true
		case st.next < len(st.Turns):
			turn, ok = st.Turns[st.next], true
			req.Turn = st.next
			st.next++
		case st.RepeatLast && len(st.Turns) > 0:
			turn, ok = st.Turns[len(st.Turns)-1], true
			req.Turn = len(st.Turns) - 1
		default:
			s.errs = append(s.errs, fmt.Errorf("%s: request after the last of its %d turns", st.name, len(st.Turns)))
		}
		if ok && turn.Fault == nil {
			st.faultsOnly = false
			st.answered, st.last = req.Raw, req.Turn
		} else if ok {
			st.answered = nil
		}
	}
	s.recordLocked(req)
	s.mu.Unlock()
	return turn, ok
}

// runChecks runs the turn's checks on the tool results req carries.
func (s *Server) runChecks(req *Request, turn Turn) {
	if len(turn.Checks) == 0 {
		return
	}
	if len(req.ToolResults) == 0 {
		s.failf("%s turn %d: expected a tool_result to check, the request has none", req.Script, req.Turn)
		return
	}
	for _, tr := range req.ToolResults {
		for _, c := range turn.Checks {
			if c == nil {
				continue
			}
			if err := c(tr.Content, tr.IsError); err != nil {
				s.failf("%s turn %d: tool_result %s: %w", req.Script, req.Turn, tr.ToolUseID, err)
			}
		}
	}
}

// record stores req.
func (s *Server) record(req *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(req)
}

// recordLocked stores req; s.mu must be held.
func (s *Server) recordLocked(req *Request) {
	s.seq++
	req.Seq = s.seq
	if req.Kind == KindAgent {
		for i := range req.ToolResults {
			req.ToolResults[i].Script = req.Script
			tr := req.ToolResults[i]
			if s.seenTool[tr.ToolUseID] {
				continue
			}
			s.seenTool[tr.ToolUseID] = true
			s.results = append(s.results, tr)
		}
	}
	s.requests = append(s.requests, *req)
	s.logf("scriptedapi: #%d %s %s kind=%s script=%q turn=%d tool_results=%d", req.Seq, req.Method, req.Path, req.Kind, req.Script, req.Turn, len(req.ToolResults))
}

// nextID returns a fresh id with the given prefix.
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_scripted_%04d", prefix, s.ids)
}

// answer writes a message reply to req, streamed or not as the request
// asked, with req's input token count.
func (s *Server) answer(w http.ResponseWriter, req *Request, body messagesBody, text string, calls []ToolCall) {
	rep := reply{
		ID:          s.nextID("msg"),
		Model:       body.Model,
		Text:        text,
		InputTokens: req.InputTokens,
	}
	if rep.Model == "" {
		rep.Model = "claude-scripted"
	}
	for _, c := range calls {
		input, err := json.Marshal(c.Input)
		if err != nil || c.Input == nil {
			if err != nil {
				s.failf("tool call %s: encode input: %w", c.Name, err)
			}
			input = []byte(`{}`)
		}
		rep.Calls = append(rep.Calls, toolUse{ID: s.nextID("toolu"), Name: c.Name, Input: input})
	}
	rep.OutputTokens = 1 + len(text)/4
	for _, c := range rep.Calls {
		rep.OutputTokens += 10 + len(c.Input)/4
	}

	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", s.nextID("req"))
		var buf bytes.Buffer
		if err := rep.writeJSON(&buf); err != nil {
			s.failf("answer: %w", err)
			return
		}
		_, _ = w.Write(buf.Bytes()) // a client that went away is not a script failure
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Request-Id", s.nextID("req"))
	_ = rep.writeSSE(openSSE(w)) // write errors mean the client went away
}

// writeError writes an Anthropic error response.
func (s *Server) writeError(w http.ResponseWriter, status int, typ, msg string, extra http.Header) {
	id := s.nextID("req")
	for k, vs := range extra {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", id)
	if status < 100 || status > 999 {
		status = http.StatusInternalServerError
	}
	if typ == "" {
		typ = "api_error"
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Type: "error", Error: errorDetail{Type: typ, Message: msg}, RequestID: id})
}

package scriptedapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The OpenAI wire formats: the Responses API (POST /v1/responses, Codex)
// and Chat Completions (POST /v1/chat/completions, opencode's
// OpenAI-compatible providers). A script's Bash call becomes the agent's
// own shell tool: Codex's exec_command {"cmd": ...}, opencode's bash
// {"command": ..., "description": ...}.

// reExitCode finds a shell tool's exit code in its output: Codex writes
// "Process exited with code N", Gemini CLI "Exit Code: N", opencode
// "exit code N" in its metadata.
var reExitCode = regexp.MustCompile(`(?i)(?:exited with code|exit code:?)\s*(-?\d+)`)

// reRefused finds a refused tool call in a tool result that carries no
// error flag: a permission layer's or the bd guard's refusal.
var reRefused = regexp.MustCompile(`(?i)rejected|forbidden|not allowed|denied|refus|prevents you from using`)

// outputIsError decides whether a shell tool's output reports a failure,
// for wire formats with no is_error flag: a non-zero exit code, or, with
// no exit code at all, a refusal.
func outputIsError(out string) bool {
	if m := reExitCode.FindStringSubmatch(out); m != nil {
		return m[1] != "0"
	}
	return reRefused.MatchString(out)
}

// seen reports whether a tool result with this id came in before.
func (s *Server) seen(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seenTool[id]
}

// promptKey is the conversation key of an agent that sends no session id.
func promptKey(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return "prompt:" + hex.EncodeToString(sum[:])
}

// sessionKey is the conversation key of an agent that sends the session
// id id, or of its prompt when id is empty.
func sessionKey(id, prompt string) string {
	if id == "" {
		return promptKey(prompt)
	}
	return "session:" + id
}

// toolArgs renders a script's tool call as the agent's own tool: the
// Bash tool becomes the shell tool named shell, with its command under
// the key cmdKey; other tools pass through.
func toolArgs(c ToolCall, shell, cmdKey string, extra map[string]any) (name string, args map[string]any) {
	if c.Name != "Bash" {
		return c.Name, c.Input
	}
	args = map[string]any{}
	for k, v := range extra {
		args[k] = v
	}
	args[cmdKey] = c.Input["command"]
	return shell, args
}

// encodeArgs encodes tool arguments, recording a failure.
func (s *Server) encodeArgs(name string, args map[string]any) string {
	if args == nil {
		return "{}"
	}
	b, err := json.Marshal(args)
	if err != nil {
		s.failf("tool call %s: encode input: %w", name, err)
		return "{}"
	}
	return string(b)
}

// openAIError writes an OpenAI-style error body for a fault. A 429 with
// a reset (UsageLimit) is written as Codex's usage_limit_reached error,
// which carries resets_at and resets_in_seconds.
func (s *Server) openAIError(w http.ResponseWriter, f *Fault) {
	for k, vs := range f.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := f.Status
	if status < 100 || status > 999 {
		status = http.StatusInternalServerError
	}
	detail := map[string]any{"message": f.Message, "type": openAIErrorType(status), "param": nil, "code": nil}
	if status == http.StatusUnauthorized {
		detail["code"] = "invalid_api_key"
	}
	if reset, ok := faultReset(f); ok && status == http.StatusTooManyRequests {
		detail["type"] = "usage_limit_reached"
		detail["resets_at"] = reset.Unix()
		detail["resets_in_seconds"] = max(int64(time.Until(reset).Seconds()), 0)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", s.nextID("req"))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": detail})
}

// openAIErrorType is OpenAI's error type for a status.
func openAIErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// faultReset is the reset time a UsageLimit fault announces.
func faultReset(f *Fault) (time.Time, bool) {
	n, err := strconv.ParseInt(f.Header.Get("Anthropic-Ratelimit-Unified-Reset"), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// --- Responses API (Codex) ---

// responsesBody is the part of a Responses API request the server reads.
type responsesBody struct {
	Model  string           `json:"model"`
	Stream bool             `json:"stream"`
	Input  []responsesInput `json:"input"`
	Tools  []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

type responsesInput struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

// codexShell is Codex's shell tool.
const codexShell = "exec_command"

// responses answers POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request, req *Request) {
	var body responsesBody
	if err := json.Unmarshal(req.Raw, &body); err != nil {
		req.Kind = KindSide
		s.record(req)
		s.openAIError(w, &Fault{Status: http.StatusBadRequest, Message: "decode responses request: " + err.Error()})
		return
	}
	var prompts []string
	fresh := true
	last := -1 // index of the last message item
	for i, in := range body.Input {
		if in.Type == "message" || (in.Type == "" && in.Role != "") {
			last = i
			if in.Role == "user" {
				prompts = append(prompts, responsesText(in.Content))
			}
			if in.Role == "assistant" {
				fresh = false
			}
		}
		if in.Type == "function_call" {
			fresh = false
		}
	}
	req.Prompt = strings.Join(prompts, "\n")
	// Codex sends no message item for a reply without text, so the
	// outputs after the last message can span several turns: the ones
	// already seen belong to earlier turns.
	for _, in := range body.Input[last+1:] {
		if in.Type != "function_call_output" || s.seen(in.CallID) {
			continue
		}
		out := responsesText(in.Output)
		req.ToolResults = append(req.ToolResults, ToolResult{ToolUseID: in.CallID, Content: out, IsError: outputIsError(out)})
	}
	agentReq := false
	for _, t := range body.Tools {
		agentReq = agentReq || t.Name == codexShell
	}
	text, calls := "OK", []ToolCall(nil)
	if agentReq {
		key := r.Header.Get("Session-Id")
		if key == "" {
			key = r.Header.Get("Thread-Id")
		}
		var ok bool
		if text, calls, ok = s.agentTurn(w, r, req, sessionKey(key, req.Prompt), fresh, s.openAIError); !ok {
			return
		}
	} else {
		req.Kind = KindSide
		s.record(req)
	}
	s.writeResponses(w, req, body.Model, text, calls)
}

// responsesText joins the text of a Responses content or output value:
// a string, or an array of parts with text.
func responsesText(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// writeResponses streams a Responses API reply: response.created, per
// output item output_item.added (text deltas for a message) and
// output_item.done, then response.completed with the usage.
func (s *Server) writeResponses(w http.ResponseWriter, req *Request, model, text string, calls []ToolCall) {
	if model == "" {
		model = "gpt-scripted"
	}
	id := s.nextID("resp")
	w.Header().Set("Cache-Control", "no-cache")
	sw := openSSE(w)
	resp := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "model": model, "status": "in_progress", "output": []any{}}
	sw.event("response.created", map[string]any{"type": "response.created", "response": resp})
	idx := 0
	outTokens := 1
	if text != "" || len(calls) == 0 {
		mid := s.nextID("msg")
		item := map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{}}
		sw.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		for _, piece := range chunks(text, chunkSize) {
			sw.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": mid, "output_index": idx, "content_index": 0, "delta": piece})
		}
		item = map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
		sw.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		idx++
		outTokens += len(text) / 4
	}
	for _, c := range calls {
		name, args := toolArgs(c, codexShell, "cmd", map[string]any{"login": false})
		enc := s.encodeArgs(name, args)
		item := map[string]any{"type": "function_call", "id": s.nextID("fc"), "call_id": s.nextID("call"), "name": name, "arguments": enc, "status": "completed"}
		sw.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		sw.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		idx++
		outTokens += 10 + len(enc)/4
	}
	resp["status"] = "completed"
	resp["usage"] = map[string]any{
		"input_tokens": req.InputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": outTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": req.InputTokens + outTokens,
	}
	sw.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
}

// --- Chat Completions (opencode) ---

// chatBody is the part of a Chat Completions request the server reads.
type chatBody struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// opencodeShell is opencode's shell tool.
const opencodeShell = "bash"

// chatCompletions answers POST /v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, req *Request) {
	var body chatBody
	if err := json.Unmarshal(req.Raw, &body); err != nil {
		req.Kind = KindSide
		s.record(req)
		s.openAIError(w, &Fault{Status: http.StatusBadRequest, Message: "decode chat request: " + err.Error()})
		return
	}
	var prompts []string
	fresh := true
	lastAssistant := -1
	for i, m := range body.Messages {
		switch m.Role {
		case "user":
			prompts = append(prompts, responsesText(m.Content))
		case "assistant":
			fresh, lastAssistant = false, i
		}
	}
	req.Prompt = strings.Join(prompts, "\n")
	for _, m := range body.Messages[lastAssistant+1:] {
		if m.Role != "tool" {
			continue
		}
		out := responsesText(m.Content)
		req.ToolResults = append(req.ToolResults, ToolResult{ToolUseID: m.ToolCallID, Content: out, IsError: outputIsError(out)})
	}
	agentReq := false
	for _, t := range body.Tools {
		agentReq = agentReq || t.Function.Name == opencodeShell
	}
	text, calls := "Scripted session", []ToolCall(nil)
	if agentReq {
		var ok bool
		if text, calls, ok = s.agentTurn(w, r, req, sessionKey(r.Header.Get("X-Session-Id"), req.Prompt), fresh, s.openAIError); !ok {
			return
		}
	} else {
		req.Kind = KindSide
		s.record(req)
	}
	s.writeChat(w, req, body.Model, body.Stream, text, calls)
}

// writeChat writes a Chat Completions reply, streamed as chunks (role and
// text deltas, one chunk per tool call, a finish chunk, a usage chunk,
// [DONE]) or whole.
func (s *Server) writeChat(w http.ResponseWriter, req *Request, model string, stream bool, text string, calls []ToolCall) {
	if model == "" {
		model = "gpt-scripted"
	}
	id := s.nextID("chatcmpl")
	created := time.Now().Unix()
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var tcs []call
	outTokens := 1 + len(text)/4
	for i, c := range calls {
		name, args := toolArgs(c, opencodeShell, "command", map[string]any{"description": "scripted command"})
		enc := s.encodeArgs(name, args)
		tcs = append(tcs, call{Index: i, ID: s.nextID("call"), Type: "function", Function: fn{Name: name, Arguments: enc}})
		outTokens += 10 + len(enc)/4
	}
	finish := "stop"
	if len(tcs) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": req.InputTokens, "completion_tokens": outTokens, "total_tokens": req.InputTokens + outTokens}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": text}
		if len(tcs) > 0 {
			msg["tool_calls"] = tcs
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	sw := openSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["choices"] = []any{}
			c["usage"] = usage
		}
		sw.data(c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if text != "" {
		for _, piece := range chunks(text, chunkSize) {
			chunk(map[string]any{"content": piece}, nil, nil)
		}
	}
	for _, tc := range tcs {
		chunk(map[string]any{"tool_calls": []call{tc}}, nil, nil)
	}
	chunk(map[string]any{}, finish, nil)
	chunk(nil, nil, usage)
	sw.done()
}

package scriptedapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Gemini API wire format (POST /v1beta/models/MODEL:streamGenerateContent
// ?alt=sse, and :generateContent), as Gemini CLI speaks it through the
// genai SDK when GOOGLE_GEMINI_BASE_URL points at the server. A script's
// Bash call becomes Gemini CLI's run_shell_command {"command": ...}.

// geminiShell is Gemini CLI's shell tool.
const geminiShell = "run_shell_command"

// isGeminiPath reports whether path is a Gemini model method.
func isGeminiPath(path string) bool {
	return strings.HasPrefix(path, "/v1beta/models/") || strings.HasPrefix(path, "/v1/models/")
}

// geminiPart is one part of a Gemini content.
type geminiPart struct {
	Text             string `json:"text"`
	FunctionCall     any    `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// geminiBody is the part of a generateContent request the server reads.
type geminiBody struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	// GenerationConfig asks for JSON output with a schema in Gemini CLI's
	// side requests (the model router's classifier, ...).
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

// sideText is the canned reply to a side request: "OK", or, when it asks
// for JSON, an object with the schema's required properties. Gemini CLI
// retries a side request whose JSON does not parse, with backoff, for
// over a minute.
func (b geminiBody) sideText() string {
	gc := b.GenerationConfig
	if gc.ResponseMimeType != "application/json" {
		return "OK"
	}
	if len(gc.ResponseJSONSchema) > 0 {
		return schemaPlaceholder(gc.ResponseJSONSchema)
	}
	return schemaPlaceholder(gc.ResponseSchema)
}

// gemini answers a Gemini model method.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, req *Request) {
	model, method, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), "/v1/models/"), ":")
	if method == "countTokens" {
		req.Kind = KindCountTokens
		s.record(req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, "{\"totalTokens\": %d}\n", req.InputTokens)
		return
	}
	var body geminiBody
	if err := json.Unmarshal(req.Raw, &body); err != nil {
		req.Kind = KindSide
		s.record(req)
		s.geminiError(w, &Fault{Status: http.StatusBadRequest, Message: "decode generateContent request: " + err.Error()})
		return
	}
	var prompts []string
	fresh := true
	lastModel := -1
	for i, c := range body.Contents {
		switch c.Role {
		case "model":
			fresh, lastModel = false, i
		case "user", "":
			for _, p := range c.Parts {
				if p.Text != "" {
					prompts = append(prompts, p.Text)
				}
			}
		}
	}
	req.Prompt = strings.Join(prompts, "\n")
	for _, c := range body.Contents[lastModel+1:] {
		for _, p := range c.Parts {
			if p.FunctionResponse == nil {
				continue
			}
			out, isErr := geminiResult(p.FunctionResponse.Response)
			req.ToolResults = append(req.ToolResults, ToolResult{ToolUseID: p.FunctionResponse.ID, Content: out, IsError: isErr})
		}
	}
	agentReq := false
	for _, t := range body.Tools {
		for _, f := range t.FunctionDeclarations {
			agentReq = agentReq || f.Name == geminiShell
		}
	}
	text, calls := body.sideText(), []ToolCall(nil)
	if agentReq && method == "streamGenerateContent" {
		var ok bool
		if text, calls, ok = s.agentTurn(w, r, req, promptKey(req.Prompt), fresh, s.geminiError); !ok {
			return
		}
	} else {
		req.Kind = KindSide
		s.record(req)
	}
	s.writeGemini(w, req, model, method == "streamGenerateContent", text, calls)
}

// geminiResult reads a functionResponse.response: its output (or the
// whole object), and whether it reports an error.
func geminiResult(raw json.RawMessage) (string, bool) {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return string(raw), false
	}
	if e, ok := m["error"]; ok {
		return fmt.Sprint(e), true
	}
	if o, ok := m["output"].(string); ok {
		return o, outputIsError(o)
	}
	return string(raw), outputIsError(string(raw))
}

// writeGemini writes a generateContent reply: as server-sent events (a
// text chunk per piece, then the function calls and the finish reason with
// the usage) or as one JSON object.
func (s *Server) writeGemini(w http.ResponseWriter, req *Request, model string, stream bool, text string, calls []ToolCall) {
	id := s.nextID("resp")
	outTokens := 1 + len(text)/4
	var callParts []any
	for _, c := range calls {
		name, args := toolArgs(c, geminiShell, "command", map[string]any{"description": "scripted command"})
		outTokens += 10 + len(s.encodeArgs(name, args))/4
		callParts = append(callParts, map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
	}
	usage := map[string]any{"promptTokenCount": req.InputTokens, "candidatesTokenCount": outTokens, "totalTokenCount": req.InputTokens + outTokens}
	chunk := func(parts []any, finish string, withUsage bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": id}
		if withUsage {
			c["usageMetadata"] = usage
		}
		return c
	}
	if !stream {
		parts := callParts
		if text != "" || len(calls) == 0 {
			parts = append([]any{map[string]any{"text": text}}, parts...)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(chunk(parts, "STOP", true))
		return
	}
	sw := openSSE(w)
	if text != "" {
		for _, piece := range chunks(text, chunkSize) {
			sw.data(chunk([]any{map[string]any{"text": piece}}, "", false))
		}
	}
	last := callParts
	if len(last) == 0 {
		last = []any{map[string]any{"text": ""}}
	}
	sw.data(chunk(last, "STOP", true))
}

// geminiError writes a Google API error body for a fault. A 401 says what
// the Gemini API says of a bad key. A 429 carries a RetryInfo delay: the
// time to the reset of a UsageLimit, else retry-after. Gemini CLI 0.61.0
// retries a delay up to 300 s itself and reports a longer one as a
// TerminalQuotaError ending "Suggested retry after 3600s."; a QuotaFailure
// with a PerDay quota id it would report as "You have exhausted your daily
// quota on this model." with no time at all.
func (s *Server) geminiError(w http.ResponseWriter, f *Fault) {
	status := f.Status
	if status < 100 || status > 999 {
		status = http.StatusInternalServerError
	}
	code := map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED",
		500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}[status]
	if code == "" {
		code = "UNKNOWN"
	}
	msg := f.Message
	if status == http.StatusUnauthorized {
		msg = "API key not valid. Please pass a valid API key."
	}
	var details []any
	if status == http.StatusTooManyRequests {
		delay := f.Header.Get("Retry-After")
		if reset, ok := faultReset(f); ok {
			delay = strconv.FormatInt(int64(max(time.Until(reset), time.Second).Round(time.Second)/time.Second), 10)
		}
		if delay != "" {
			details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay + "s"})
		}
	}
	e := map[string]any{"code": status, "message": msg, "status": code}
	if details != nil {
		e["details"] = details
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

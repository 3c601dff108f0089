package scriptedapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// reply is one assistant message to send.
type reply struct {
	ID           string
	Model        string
	Text         string
	Calls        []toolUse
	InputTokens  int
	OutputTokens int
}

// toolUse is a ToolCall with its assigned id and encoded input.
type toolUse struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// stopReason is "tool_use" when the reply calls tools, else "end_turn".
func (r reply) stopReason() string {
	if len(r.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// outBlock is a content block of a reply.
type outBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type outUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type outMessage struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Model        string     `json:"model"`
	Content      []outBlock `json:"content"`
	StopReason   *string    `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        outUsage   `json:"usage"`
}

// blocks returns the reply's content blocks: the text first, then the
// tool calls. An empty reply gets one empty text block.
func (r reply) blocks() []outBlock {
	var out []outBlock
	if r.Text != "" || len(r.Calls) == 0 {
		t := r.Text
		out = append(out, outBlock{Type: "text", Text: &t})
	}
	for _, c := range r.Calls {
		out = append(out, outBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: c.Input})
	}
	return out
}

// message returns the complete (non-streaming) response body.
func (r reply) message() outMessage {
	stop := r.stopReason()
	return outMessage{
		ID:         r.ID,
		Type:       "message",
		Role:       "assistant",
		Model:      r.Model,
		Content:    r.blocks(),
		StopReason: &stop,
		Usage:      outUsage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens},
	}
}

// writeJSON writes the non-streaming answer.
func (r reply) writeJSON(w io.Writer) error {
	if err := json.NewEncoder(w).Encode(r.message()); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	return nil
}

// sseWriter writes server-sent events, flushing after each.
type sseWriter struct {
	w     io.Writer
	flush func()
	err   error
}

// openSSE answers 200 with an event stream and returns its writer, which
// flushes after each event. Callers set any other header first.
func openSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return &sseWriter{w: w, flush: func() { _ = rc.Flush() }}
}

// event writes one named event; after the first error it does nothing.
func (s *sseWriter) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		s.fail(fmt.Errorf("encode %s event: %w", name, err))
		return
	}
	s.write(name, fmt.Sprintf("event: %s\ndata: %s\n\n", name, b))
}

// data writes one data-only event, as the OpenAI and Gemini APIs stream.
func (s *sseWriter) data(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.fail(fmt.Errorf("encode data event: %w", err))
		return
	}
	s.write("data", fmt.Sprintf("data: %s\n\n", b))
}

// done writes the Chat Completions stream's last event, data: [DONE].
func (s *sseWriter) done() { s.write("[DONE]", "data: [DONE]\n\n") }

func (s *sseWriter) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *sseWriter) write(name, frame string) {
	if s.err != nil {
		return
	}
	if _, err := io.WriteString(s.w, frame); err != nil {
		s.err = fmt.Errorf("write %s event: %w", name, err)
		return
	}
	if s.flush != nil {
		s.flush()
	}
}

// chunkSize is the size of the pieces text and tool input are streamed in.
const chunkSize = 24

// chunks splits s into pieces of about n bytes, on rune boundaries, so
// every piece is valid UTF-8 when s is. It returns at least one piece.
func chunks(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// writeSSE streams the reply as the Messages API does: message_start,
// ping, then per block content_block_start, content_block_delta pieces and
// content_block_stop, then message_delta with the stop reason and usage,
// then message_stop.
func (r reply) writeSSE(s *sseWriter) error {
	start := r.message()
	start.Content = []outBlock{}
	start.StopReason = nil
	start.Usage.OutputTokens = 1
	s.event("message_start", map[string]any{"type": "message_start", "message": start})
	s.event("ping", map[string]any{"type": "ping"})
	for i, b := range r.blocks() {
		switch b.Type {
		case "text":
			empty := ""
			s.event("content_block_start", map[string]any{
				"type": "content_block_start", "index": i,
				"content_block": outBlock{Type: "text", Text: &empty},
			})
			for _, piece := range chunks(*b.Text, chunkSize) {
				s.event("content_block_delta", map[string]any{
					"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": piece},
				})
			}
		case "tool_use":
			s.event("content_block_start", map[string]any{
				"type": "content_block_start", "index": i,
				"content_block": outBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage(`{}`)},
			})
			for _, piece := range chunks(string(b.Input), chunkSize) {
				s.event("content_block_delta", map[string]any{
					"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": piece},
				})
			}
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	s.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": r.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.OutputTokens},
	})
	s.event("message_stop", map[string]any{"type": "message_stop"})
	return s.err
}

// errorBody is the Anthropic error JSON.
type errorBody struct {
	Type      string      `json:"type"`
	Error     errorDetail `json:"error"`
	RequestID string      `json:"request_id,omitempty"`
}

type errorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

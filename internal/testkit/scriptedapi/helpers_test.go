package scriptedapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// startServer starts a server playing scripts and closes it at cleanup.
func startServer(t *testing.T, scripts ...Script) *Server {
	t.Helper()
	srv := New(scripts...)
	if err := srv.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// agentBody builds a request body shaped like Claude Code's main-loop
// requests: the Bash tool, the prompt (after a system-reminder block) and
// optionally an assistant tool_use and the user's tool_results.
type agentBody struct {
	Prompt  string
	Stream  bool
	Results []ToolResult // tool results in a last user message
	Session string       // metadata.user_id session_id
	NoBash  bool
	MaxTok  int
}

func (b agentBody) JSON(t *testing.T) []byte {
	t.Helper()
	msgs := []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "<system-reminder>\nctx\n</system-reminder>\n"},
		map[string]any{"type": "text", "text": b.Prompt},
	}}}
	if len(b.Results) > 0 {
		var uses, results []any
		for _, r := range b.Results {
			uses = append(uses, map[string]any{"type": "tool_use", "id": r.ToolUseID, "name": "Bash", "input": map[string]any{"command": "x"}})
			results = append(results, map[string]any{"type": "tool_result", "tool_use_id": r.ToolUseID, "content": r.Content, "is_error": r.IsError})
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": uses},
			map[string]any{"role": "user", "content": results})
	}
	tools := []any{map[string]any{"name": "Read"}}
	if !b.NoBash {
		tools = append(tools, map[string]any{"name": "Bash"})
	}
	maxTok := b.MaxTok
	if maxTok == 0 {
		maxTok = 64000
	}
	body := map[string]any{"model": "claude-test-model", "max_tokens": maxTok, "stream": b.Stream, "messages": msgs, "tools": tools}
	if b.Session != "" {
		uid, _ := json.Marshal(map[string]string{"device_id": "d", "session_id": b.Session})
		body["metadata"] = map[string]any{"user_id": string(uid)}
	}
	out, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("encode body: %v", err)
	}
	return out
}

// post sends body to path with the given session header ("" for none).
func post(ctx context.Context, t *testing.T, srv *Server, path, session string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if session != "" {
		req.Header.Set("X-Claude-Code-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post %s: %v", path, err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Name string
	Data json.RawMessage
}

// parseSSE reads a complete event stream.
func parseSSE(r io.Reader) ([]sseEvent, error) {
	var (
		out []sseEvent
		cur sseEvent
		sc  = bufio.NewScanner(r)
	)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Name == "" && cur.Data == nil {
				continue
			}
			if cur.Name == "" || cur.Data == nil {
				return nil, fmt.Errorf("incomplete event %+v", cur)
			}
			out = append(out, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if !json.Valid([]byte(strings.TrimPrefix(line, "data: "))) {
				return nil, fmt.Errorf("data is not JSON: %q", line)
			}
			cur.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		default:
			return nil, fmt.Errorf("unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur.Name != "" || cur.Data != nil {
		return nil, errors.New("stream ends inside an event")
	}
	return out, nil
}

// gotBlock is a reassembled content block.
type gotBlock struct {
	Type  string
	Text  string
	ID    string
	Name  string
	Input map[string]any
}

// gotMessage is a message reassembled from a stream or decoded from JSON.
type gotMessage struct {
	ID           string
	Model        string
	Blocks       []gotBlock
	StopReason   string
	OutputTokens int
}

// assemble rebuilds the message from events the way a client does, and
// checks the event grammar on the way.
func assemble(events []sseEvent) (gotMessage, error) {
	var (
		m       gotMessage
		open    = -1
		partial = map[int]*strings.Builder{}
		state   = "start"
	)
	for i, ev := range events {
		var head struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}
		if err := json.Unmarshal(ev.Data, &head); err != nil {
			return m, fmt.Errorf("event %d: %w", i, err)
		}
		if head.Type != ev.Name {
			return m, fmt.Errorf("event %d: name %q but data type %q", i, ev.Name, head.Type)
		}
		switch ev.Name {
		case "message_start":
			if state != "start" {
				return m, fmt.Errorf("event %d: message_start in state %s", i, state)
			}
			var d struct {
				Message struct {
					ID         string  `json:"id"`
					Model      string  `json:"model"`
					Role       string  `json:"role"`
					StopReason *string `json:"stop_reason"`
					Content    []any   `json:"content"`
				} `json:"message"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return m, err
			}
			if d.Message.Role != "assistant" || d.Message.StopReason != nil || len(d.Message.Content) != 0 {
				return m, fmt.Errorf("bad message_start %s", ev.Data)
			}
			m.ID, m.Model = d.Message.ID, d.Message.Model
			state = "blocks"
		case "ping":
		case "content_block_start":
			if state != "blocks" || open != -1 || head.Index != len(m.Blocks) {
				return m, fmt.Errorf("event %d: content_block_start index %d in state %s (open %d, have %d)", i, head.Index, state, open, len(m.Blocks))
			}
			var d struct {
				Block struct {
					Type string `json:"type"`
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"content_block"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return m, err
			}
			m.Blocks = append(m.Blocks, gotBlock{Type: d.Block.Type, ID: d.Block.ID, Name: d.Block.Name})
			partial[head.Index] = &strings.Builder{}
			open = head.Index
		case "content_block_delta":
			if open != head.Index {
				return m, fmt.Errorf("event %d: delta for block %d while %d is open", i, head.Index, open)
			}
			var d struct {
				Delta struct {
					Type        string `json:"type"`
					Text        string `json:"text"`
					PartialJSON string `json:"partial_json"`
				} `json:"delta"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return m, err
			}
			b := &m.Blocks[open]
			switch {
			case d.Delta.Type == "text_delta" && b.Type == "text":
				b.Text += d.Delta.Text
			case d.Delta.Type == "input_json_delta" && b.Type == "tool_use":
				partial[open].WriteString(d.Delta.PartialJSON)
			default:
				return m, fmt.Errorf("event %d: %s delta in a %s block", i, d.Delta.Type, b.Type)
			}
		case "content_block_stop":
			if open != head.Index {
				return m, fmt.Errorf("event %d: stop for block %d while %d is open", i, head.Index, open)
			}
			if b := &m.Blocks[open]; b.Type == "tool_use" {
				if err := json.Unmarshal([]byte(partial[open].String()), &b.Input); err != nil {
					return m, fmt.Errorf("tool input %q: %w", partial[open].String(), err)
				}
			}
			open = -1
		case "message_delta":
			if state != "blocks" || open != -1 {
				return m, fmt.Errorf("event %d: message_delta in state %s", i, state)
			}
			var d struct {
				Delta struct {
					StopReason string `json:"stop_reason"`
				} `json:"delta"`
				Usage struct {
					OutputTokens int `json:"output_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return m, err
			}
			m.StopReason, m.OutputTokens = d.Delta.StopReason, d.Usage.OutputTokens
			state = "delta"
		case "message_stop":
			if state != "delta" {
				return m, fmt.Errorf("event %d: message_stop in state %s", i, state)
			}
			state = "stopped"
		default:
			return m, fmt.Errorf("event %d: unknown event %q", i, ev.Name)
		}
	}
	if state != "stopped" {
		return m, fmt.Errorf("stream ended in state %s", state)
	}
	return m, nil
}

// decodeMessage decodes a non-streaming response into a gotMessage.
func decodeMessage(r io.Reader) (gotMessage, error) {
	var d struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string         `json:"type"`
			Text  string         `json:"text"`
			ID    string         `json:"id"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return gotMessage{}, err
	}
	if d.Type != "message" {
		return gotMessage{}, fmt.Errorf("type %q, want message", d.Type)
	}
	m := gotMessage{ID: d.ID, Model: d.Model, StopReason: d.StopReason, OutputTokens: d.Usage.OutputTokens}
	for _, c := range d.Content {
		m.Blocks = append(m.Blocks, gotBlock{Type: c.Type, Text: c.Text, ID: c.ID, Name: c.Name, Input: c.Input})
	}
	return m, nil
}

// readReply reads a 200 answer, streamed or not.
func readReply(t *testing.T, resp *http.Response) gotMessage {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		evs, err := parseSSE(resp.Body)
		if err != nil {
			t.Fatalf("parse sse: %v", err)
		}
		m, err := assemble(evs)
		if err != nil {
			t.Fatalf("assemble: %v", err)
		}
		return m
	}
	m, err := decodeMessage(resp.Body)
	if err != nil {
		t.Fatalf("decode message: %v", err)
	}
	return m
}

// commands lists the Bash commands of a message's tool_use blocks.
func commands(m gotMessage) []string {
	var out []string
	for _, b := range m.Blocks {
		if b.Type == "tool_use" {
			c, _ := b.Input["command"].(string)
			out = append(out, c)
		}
	}
	return out
}

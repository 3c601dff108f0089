package scriptedapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// RequestKind classifies a recorded request.
type RequestKind string

// Request kinds.
const (
	// KindAgent is a Messages API request of the agent's main loop; it
	// consumes a script turn.
	KindAgent RequestKind = "agent"
	// KindSide is any other Messages API request (title generation,
	// quota probes, ...); it gets a canned text reply.
	KindSide RequestKind = "side"
	// KindCountTokens is a POST /v1/messages/count_tokens request.
	KindCountTokens RequestKind = "count_tokens"
	// KindOther is a request to any other path (Claude Code's HEAD /
	// connectivity probe, ...).
	KindOther RequestKind = "other"
)

// Request is one recorded HTTP request.
type Request struct {
	// Seq numbers the requests from 1 in arrival order.
	Seq int
	// At is when the request arrived.
	At       time.Time
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	// Raw is the request body as sent.
	Raw []byte
	// InputTokens is the server's input token count for Raw (see
	// InputTokens), the figure its answer reports as the input usage.
	InputTokens int
	// Body is Raw decoded as a JSON object; nil when it is not one. It
	// is shared between callers of Server.Requests: treat it as read-only.
	Body map[string]any
	Kind RequestKind
	// Script and Turn name the script and the turn index that answered a
	// KindAgent request; Script is empty and Turn -1 when none did.
	Script string
	Turn   int
	// Replayed: the request was the agent's last answered request sent
	// again, and got the same turn (see Server).
	Replayed bool
	// Prompt is the text of the first user message, without Claude
	// Code's <system-reminder> blocks.
	Prompt string
	// ToolResults are the tool_result blocks of the last user message:
	// what the agent reports back about the previous turn's tool calls.
	ToolResults []ToolResult
}

// ToolResult is one tool_result block the agent sent.
type ToolResult struct {
	// Script is the name of the script of the conversation it came in.
	Script    string
	ToolUseID string
	// Content is the result's text (text blocks joined by newlines).
	Content string
	IsError bool
}

// messagesBody is the part of a Messages API request body the server reads.
type messagesBody struct {
	Model     string          `json:"model"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	Messages  []inMessage     `json:"messages"`
	Tools     []inTool        `json:"tools"`
	Metadata  json.RawMessage `json:"metadata"`
	// OutputConfig carries structured-output requests; Claude Code's title
	// generation asks for a JSON object with a "title" string this way.
	OutputConfig struct {
		Format struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

type inMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type inTool struct {
	Name string `json:"name"`
}

type inBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// parseMessagesBody decodes a Messages API request body.
func parseMessagesBody(raw []byte) (messagesBody, error) {
	var b messagesBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return messagesBody{}, fmt.Errorf("decode messages request: %w", err)
	}
	return b, nil
}

// blocks decodes a message content, which is either a string or an array
// of content blocks. Anything else yields no blocks.
func blocks(content json.RawMessage) []inBlock {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []inBlock{{Type: "text", Text: s}}
	}
	var bs []inBlock
	if json.Unmarshal(content, &bs) == nil {
		return bs
	}
	return nil
}

// textOf joins the text of a content value (string or blocks).
func textOf(content json.RawMessage, skipReminders bool) string {
	var parts []string
	for _, b := range blocks(content) {
		if b.Type != "text" {
			continue
		}
		if skipReminders && strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
			continue
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// prompt returns the text of the first user message, without
// <system-reminder> blocks unless that leaves nothing.
func (b messagesBody) prompt() string {
	for _, m := range b.Messages {
		if m.Role != "user" {
			continue
		}
		if p := textOf(m.Content, true); p != "" {
			return p
		}
		return textOf(m.Content, false)
	}
	return ""
}

// toolResults returns the tool_result blocks of the last user message.
func (b messagesBody) toolResults() []ToolResult {
	for i := len(b.Messages) - 1; i >= 0; i-- {
		m := b.Messages[i]
		if m.Role != "user" {
			continue
		}
		var out []ToolResult
		for _, blk := range blocks(m.Content) {
			if blk.Type != "tool_result" {
				continue
			}
			out = append(out, ToolResult{
				ToolUseID: blk.ToolUseID,
				Content:   textOf(blk.Content, false),
				IsError:   blk.IsError,
			})
		}
		return out
	}
	return nil
}

// hasAssistantTurn reports whether the history holds a model reply.
func (b messagesBody) hasAssistantTurn() bool {
	for _, m := range b.Messages {
		if m.Role == "assistant" {
			return true
		}
	}
	return false
}

// hasTool reports whether the request offers a tool called name.
func (b messagesBody) hasTool(name string) bool {
	for _, t := range b.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// isAgentRequest tells the agent's main-loop requests from Claude Code's
// side requests: the main loop offers the Bash tool and asks for more
// than a token; title generation, quota probes and the like offer no
// Bash tool or ask for a single token.
func (b messagesBody) isAgentRequest() bool {
	return b.hasTool("Bash") && b.MaxTokens != 1
}

// conversationKey identifies the conversation a request belongs to:
// Claude Code's session id (header X-Claude-Code-Session-Id, or the
// session_id inside metadata.user_id), else a hash of the prompt.
func conversationKey(h http.Header, b messagesBody) string {
	if id := h.Get("X-Claude-Code-Session-Id"); id != "" {
		return "session:" + id
	}
	if id := metadataSession(b.Metadata); id != "" {
		return "session:" + id
	}
	sum := sha256.Sum256([]byte(b.prompt()))
	return "prompt:" + hex.EncodeToString(sum[:])
}

// metadataSession digs the session id out of metadata.user_id, which
// Claude Code fills with a JSON object encoded as a string.
func metadataSession(meta json.RawMessage) string {
	var m struct {
		UserID string `json:"user_id"`
	}
	if json.Unmarshal(meta, &m) != nil || m.UserID == "" {
		return ""
	}
	var u struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(m.UserID), &u) != nil {
		return ""
	}
	return u.SessionID
}

// sideText is the canned reply to a side request: "OK", or, when the
// request asks for JSON output with a schema, an object with every
// required property set to a placeholder of its type.
func (b messagesBody) sideText() string {
	if b.OutputConfig.Format.Type != "json_schema" {
		return "OK"
	}
	return schemaPlaceholder(b.OutputConfig.Format.Schema)
}

// schemaPlaceholder returns a JSON object with every required property of
// the JSON schema set to a placeholder of its type ("{}" when the schema
// does not decode). Type names are matched case-insensitively, as the
// Gemini API writes them in upper case.
func schemaPlaceholder(raw json.RawMessage) string {
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(raw, &schema) != nil {
		return "{}"
	}
	obj := map[string]any{}
	for _, name := range schema.Required {
		typ, _ := schema.Properties[name].Type.(string)
		switch strings.ToLower(typ) {
		case "number", "integer":
			obj[name] = 1 // the least of most ranges (Gemini CLI's router wants 1 to 100)
		case "boolean":
			obj[name] = false
		case "array":
			obj[name] = []any{}
		case "object":
			obj[name] = map[string]any{}
		case "null":
			obj[name] = nil
		default:
			obj[name] = "Scripted session"
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return "{}"
	}
	return string(out)
}

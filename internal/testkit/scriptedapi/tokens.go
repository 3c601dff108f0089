package scriptedapi

import "encoding/json"

// conversationFields are the request fields that hold the conversation,
// in each API shape: "messages" (Messages API, Chat Completions), "input"
// (Responses API) and "contents" (Gemini API).
var conversationFields = []string{"messages", "input", "contents"}

// InputTokens is the server's input token count for a request body, the
// one rule every API shape reports in its own usage fields (input_tokens,
// prompt_tokens, promptTokenCount) and count-tokens endpoints answer: the
// bytes of the request's conversation, its first field of "messages",
// "input" and "contents" as sent (JSON included), divided by 4, at least
// 1. A body with none of them (or not a JSON object) counts whole. The
// system prompt and the tool definitions are left out: they are the same
// in every request of a run (and a real API serves them from its prompt
// cache), so the count follows what changes, the conversation. It is
// deterministic, so a benchmark can compare two runs' counts.
func InputTokens(body []byte) int {
	n := len(body)
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil {
		for _, f := range conversationFields {
			if v, ok := obj[f]; ok {
				n = len(v)
				break
			}
		}
	}
	return max(1, n/4)
}

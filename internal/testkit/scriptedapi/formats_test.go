package scriptedapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// postTo sends body to path on srv and returns the status and the body.
func postTo(srv *Server, path, body string, header ...string) (int, string) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader([]byte(body)))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	srv.serveHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestOtherFormats plays one script through each wire format: the Bash
// turn becomes the CLI's own shell tool, the result that comes back is
// checked, and a fault is written in the format's error shape.
func TestOtherFormats(t *testing.T) {
	tests := []struct {
		name, path string
		header     []string
		first      string // the request that gets the tool call
		call       string // in the streamed answer
		second     string // the request carrying the tool's failed result
		fault      string // in the 429's body
	}{
		{
			name: "responses (Codex)", path: "/v1/responses", header: []string{"Session-Id", "s1"},
			first: `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"**ID:** x-1"}]}],"tools":[{"type":"function","name":"exec_command"}]}`,
			call:  `"arguments":"{\"cmd\":\"bd show x-1\",\"login\":false}","call_id"`,
			second: `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"**ID:** x-1"}]},` +
				`{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"Process exited with code 1\nOutput:\nno such issue"}],"tools":[{"type":"function","name":"exec_command"}]}`,
			fault: `"type":"usage_limit_reached"`,
		},
		{
			name: "chat completions (opencode)", path: "/v1/chat/completions", header: []string{"X-Session-Id", "s1"},
			first: `{"model":"m","stream":true,"messages":[{"role":"system","content":"sys"},{"role":"user","content":"**ID:** x-1"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`,
			call:  `"function":{"name":"bash","arguments":"{\"command\":\"bd show x-1\",\"description\":\"scripted command\"}"}`,
			second: `{"model":"m","stream":true,"messages":[{"role":"user","content":"**ID:** x-1"},{"role":"assistant","content":"","tool_calls":[{"id":"c1"}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"The user has specified a rule which prevents you from using this specific tool call."}],"tools":[{"type":"function","function":{"name":"bash"}}]}`,
			fault: `"type":"usage_limit_reached"`,
		},
		{
			name: "gemini (Gemini CLI)", path: "/v1beta/models/g:streamGenerateContent",
			first: `{"contents":[{"role":"user","parts":[{"text":"**ID:** x-1"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`,
			call:  `"functionCall":{"args":{"command":"bd show x-1","description":"scripted command"},"name":"run_shell_command"}`,
			second: `{"contents":[{"role":"user","parts":[{"text":"**ID:** x-1"}]},{"role":"model","parts":[{"functionCall":{"name":"run_shell_command"}}]},` +
				`{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"error":"Tool execution denied by policy."}}}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`,
			fault: `"retryDelay":"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := New(
				Script{Name: "work", Match: PromptContains("**ID:** x-1"), Turns: []Turn{
					Bash("bd show x-1"),
					Say("refused").Expect(Failed()),
				}},
				Script{Name: "limited", Turns: []Turn{Fail(UsageLimit("five_hour", time.Now().Add(time.Hour), time.Hour))}},
			)
			defer srv.Close()
			code, body := postTo(srv, tt.path, tt.first, tt.header...)
			is.Equal(code, http.StatusOK)
			is.True(strings.Contains(body, tt.call)) // the Bash turn as the CLI's own tool
			code, body = postTo(srv, tt.path, tt.second, tt.header...)
			is.Equal(code, http.StatusOK)
			is.True(strings.Contains(body, "refused"))
			results := srv.ToolResults()
			is.Equal(len(results), 1)
			is.True(results[0].IsError) // a failure or refusal reads as one

			// A new conversation gets the next script: a 429 in the
			// format's own error shape.
			other := strings.ReplaceAll(tt.first, "**ID:** x-1", "another prompt")
			code, body = postTo(srv, tt.path, other, "Session-Id", "s2", "X-Session-Id", "s2")
			is.Equal(code, http.StatusTooManyRequests)
			is.True(strings.Contains(body, tt.fault))
			is.NoErr(srv.Verify()) // every script ran to its end, every check held
		})
	}
}

// TestFreshConversationByPrompt: a CLI that sends no session id (Gemini
// CLI) is told apart by its prompt. A fresh request on a prompt whose
// conversation ran a non-fault turn starts the next script; one whose
// conversation only failed so far is the CLI retrying.
func TestFreshConversationByPrompt(t *testing.T) {
	is := is.New(t)
	const first = `{"contents":[{"role":"user","parts":[{"text":"same prompt"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`
	srv := New(
		Script{Name: "a", Turns: []Turn{Fail(ServerError()), Say("one")}},
		Script{Name: "b", Turns: []Turn{Say("two")}},
	)
	defer srv.Close()
	path := "/v1beta/models/g:streamGenerateContent"
	code, _ := postTo(srv, path, first)
	is.Equal(code, http.StatusInternalServerError)
	_, body := postTo(srv, path, first) // the retry: still script a
	is.True(strings.Contains(body, "one"))
	_, body = postTo(srv, path, first) // a new run on the same prompt: script b
	is.True(strings.Contains(body, "two"))
	is.NoErr(srv.Verify())
}

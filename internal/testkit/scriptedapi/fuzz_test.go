package scriptedapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// requestSeeds returns the real request bodies in testdata.
func requestSeeds(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, name := range []string{"request-agent-tool-result.json", "request-side-title.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "claude-2.1.197", name))
		if err != nil {
			f.Fatalf("read seed: %v", err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzServeMessages posts arbitrary bodies to /v1/messages: the server
// must never panic, must answer every request, and must record it.
func FuzzServeMessages(f *testing.F) {
	for _, s := range requestSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":1}]}]}],"tools":[{"name":"Bash"}]}`))
	f.Add([]byte(`{"output_config":{"format":{"type":"json_schema","schema":{"required":["a","b"],"properties":{"a":{"type":["x"]},"b":{"type":"integer"}}}}}}`))
	f.Add([]byte(`{"metadata":{"user_id":"{\"session_id\":7}"},"tools":[{"name":"Bash"}],"stream":true}`))
	f.Add([]byte(`null`))
	f.Add([]byte{0xff, 0xfe})
	f.Fuzz(func(t *testing.T, body []byte) {
		srv := New(Script{Turns: []Turn{Bash("echo ✓").Expect(Contains("x"), Matches("(")), Say("end")}})
		defer srv.Close()
		for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			srv.serveHTTP(rec, req)
			if rec.Code == 0 {
				t.Fatal("no status written")
			}
			if rec.Code == http.StatusOK && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
				evs, err := parseSSE(rec.Body)
				if err != nil {
					t.Fatalf("own SSE does not parse: %v", err)
				}
				if _, err := assemble(evs); err != nil {
					t.Fatalf("own SSE does not assemble: %v", err)
				}
			}
		}
		if got := len(srv.Requests()); got != 2 {
			t.Fatalf("recorded %d requests, want 2", got)
		}
	})
}

// FuzzSSERoundTrip checks that any text and command survive the SSE
// encoding: parsing the stream back gives the same message.
func FuzzSSERoundTrip(f *testing.F) {
	f.Add("All done. <promise>COMPLETE</promise>", "bd close rd-1 --reason 'ok'")
	f.Add("", "")
	f.Add("héllo ✓ 𝄞 "+strings.Repeat("x", 50), "echo \"quoted\" \\ back\nslash")
	f.Add("line\nbreaks\r\n\"and\" <html>&amp;", "data: fake\n\nevent: x")
	f.Fuzz(func(t *testing.T, text, command string) {
		if !utf8.ValidString(text) || !utf8.ValidString(command) {
			t.Skip("JSON strings carry valid UTF-8 only")
		}
		input, err := json.Marshal(map[string]any{"command": command})
		if err != nil {
			t.Fatal(err)
		}
		rep := reply{ID: "msg_1", Model: "m", Text: text, Calls: []toolUse{{ID: "toolu_1", Name: "Bash", Input: input}}, OutputTokens: 1}
		var buf bytes.Buffer
		if err := rep.writeSSE(&sseWriter{w: &buf}); err != nil {
			t.Fatal(err)
		}
		evs, err := parseSSE(&buf)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		m, err := assemble(evs)
		if err != nil {
			t.Fatalf("assemble: %v", err)
		}
		gotText := ""
		if m.Blocks[0].Type == "text" {
			gotText = m.Blocks[0].Text
		}
		if gotText != text {
			t.Fatalf("text %q, want %q", gotText, text)
		}
		if cmds := commands(m); len(cmds) != 1 || cmds[0] != command {
			t.Fatalf("commands %q, want [%q]", cmds, command)
		}
		if m.StopReason != "tool_use" {
			t.Fatalf("stop reason %q", m.StopReason)
		}
	})
}

// FuzzServeOtherFormats posts arbitrary bodies to the Responses, Chat
// Completions and Gemini endpoints: the server must never panic, must
// answer every request, and must record it.
func FuzzServeOtherFormats(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"function_call_output","call_id":"c1","output":"Process exited with code 1"}],"tools":[{"type":"function","name":"exec_command"}]}`))
	f.Add([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":null},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x"}]}],"tools":[{"function":{"name":"bash"}}]}`))
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"run_shell_command"}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"error":"denied"}}}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`))
	f.Add([]byte(`{"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"required":["s"],"properties":{"s":{"type":"NUMBER"}}}}}`))
	f.Add([]byte(`{"input":7,"messages":"x","contents":null}`))
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		srv := New(Script{Turns: []Turn{Bash("echo ✓").Expect(Contains("x")), Fail(RateLimited(0)), Say("end")}, RepeatLast: true})
		defer srv.Close()
		paths := []string{"/v1/responses", "/v1/chat/completions", "/v1beta/models/m:streamGenerateContent",
			"/v1beta/models/m:generateContent", "/v1beta/models/m:countTokens"}
		for _, path := range paths {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			srv.serveHTTP(rec, req)
			if rec.Code == 0 {
				t.Fatalf("%s: no status written", path)
			}
		}
		if got := len(srv.Requests()); got != len(paths) {
			t.Fatalf("recorded %d requests, want %d", got, len(paths))
		}
	})
}

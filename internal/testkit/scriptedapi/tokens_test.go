package scriptedapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestInputTokens(t *testing.T) {
	conv := `[{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]`
	tests := []struct {
		name, body string
		want       int
	}{
		{"messages", `{"system":"` + strings.Repeat("s", 4000) + `","messages":` + conv + `}`, len(conv) / 4},
		{"responses input", `{"instructions":"long","input":` + conv + `,"tools":[{"name":"exec_command"}]}`, len(conv) / 4},
		{"gemini contents", `{"contents":` + conv + `,"tools":[]}`, len(conv) / 4},
		{"messages before input", `{"input":[1,2,3,4,5,6,7,8,9,10,11,12],"messages":[]}`, 1},
		{"no conversation: the whole body", `{"model":"` + strings.Repeat("m", 40) + `"}`, len(`{"model":"`+strings.Repeat("m", 40)+`"}`) / 4},
		{"not JSON", strings.Repeat("z", 81), 20},
		{"empty", ``, 1},
		{"tiny", `{"messages":[]}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(InputTokens([]byte(tt.body)), tt.want)
		})
	}
}

// Every API shape reports the server's count of the request it answered
// in its own usage field, and a longer conversation counts more.
func TestInputTokensReported(t *testing.T) {
	long := strings.Repeat("history ", 500)
	tests := []struct {
		name, path, body string
		header           []string
		usage            string // the field carrying the count, in the answer
	}{
		{"messages (Claude Code)", "/v1/messages",
			`{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"go %s"}],"tools":[{"name":"Bash"}]}`,
			[]string{"X-Claude-Code-Session-Id", "s"}, `"input_tokens":%d`},
		{"responses (Codex)", "/v1/responses",
			`{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":"go %s"}],"tools":[{"type":"function","name":"exec_command"}]}`,
			[]string{"Session-Id", "s"}, `"input_tokens":%d`},
		{"chat completions (opencode)", "/v1/chat/completions",
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"go %s"}],"tools":[{"function":{"name":"bash"}}]}`,
			[]string{"X-Session-Id", "s"}, `"prompt_tokens":%d`},
		{"gemini (Gemini CLI)", "/v1beta/models/g:streamGenerateContent",
			`{"contents":[{"role":"user","parts":[{"text":"go %s"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`,
			nil, `"promptTokenCount":%d`},
		{"count_tokens", "/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"go %s"}]}`,
			nil, `"input_tokens": %d`},
		{"gemini countTokens", "/v1beta/models/g:countTokens", `{"contents":[{"role":"user","parts":[{"text":"go %s"}]}]}`,
			nil, `"totalTokens": %d`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := New(Script{Turns: []Turn{Say("a"), Say("b")}}, Script{Turns: []Turn{Say("a"), Say("b")}})
			defer srv.Close()
			var counts []int
			for _, fill := range []string{"", long} {
				body := fmt.Sprintf(tt.body, fill)
				header := append([]string(nil), tt.header...)
				if len(header) == 2 {
					header[1] += fmt.Sprint(len(fill)) // a conversation per body
				}
				code, out := postTo(srv, tt.path, body, header...)
				is.Equal(code, 200)
				want := InputTokens([]byte(body))
				is.True(strings.Contains(out, fmt.Sprintf(tt.usage, want))) // the answer reports the count
				reqs := srv.Requests()
				is.Equal(reqs[len(reqs)-1].InputTokens, want) // and the record keeps it
				counts = append(counts, want)
			}
			is.True(counts[1] >= counts[0]+len(long)/4) // the history counts
		})
	}
}

func FuzzInputTokens(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}]}`))
	f.Add([]byte(`{"input":"x","contents":7}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n := InputTokens(body)
		if n < 1 || n > max(1, len(body)/4) {
			t.Fatalf("InputTokens(%d bytes) = %d, want 1..%d", len(body), n, max(1, len(body)/4))
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) != nil && n != max(1, len(body)/4) {
			t.Fatalf("a body that is not an object counts whole: got %d", n)
		}
	})
}

package scriptedapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"
)

func TestRepliesStreamedAndNot(t *testing.T) {
	long := strings.Repeat("héllo wörld ✓ ", 9) // multibyte runes across chunk boundaries
	tests := []struct {
		name     string
		turn     Turn
		wantStop string
		wantText string
		wantCmds []string
	}{
		{name: "text", turn: Say("All done. <promise>COMPLETE</promise>"), wantStop: "end_turn", wantText: "All done. <promise>COMPLETE</promise>"},
		{name: "long unicode text", turn: Say(long), wantStop: "end_turn", wantText: long},
		{name: "one bash call", turn: Bash("bd show rd-1 --json"), wantStop: "tool_use", wantCmds: []string{"bd show rd-1 --json"}},
		{
			name:     "text then two calls",
			turn:     Bash(`go test ./... && echo "ok ✓"`, "bd close rd-1 --reason 'tests pass'").Saying("Checking first."),
			wantStop: "tool_use", wantText: "Checking first.",
			wantCmds: []string{`go test ./... && echo "ok ✓"`, "bd close rd-1 --reason 'tests pass'"},
		},
		{name: "empty", turn: Turn{}, wantStop: "end_turn"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				is := is.New(t)
				srv := startServer(t, Script{Turns: []Turn{tt.turn}})
				resp := post(t.Context(), t, srv, "/v1/messages?beta=true", "s1", agentBody{Prompt: "p", Stream: stream}.JSON(t))
				m := readReply(t, resp)

				is.Equal(m.StopReason, tt.wantStop)
				is.Equal(m.Model, "claude-test-model") // the reply echoes the requested model
				is.True(strings.HasPrefix(m.ID, "msg_"))
				is.True(m.OutputTokens > 0)
				is.Equal(commands(m), tt.wantCmds)
				var text string
				ids := map[string]bool{}
				for i, b := range m.Blocks {
					switch b.Type {
					case "text":
						is.Equal(i, 0) // text comes before tool calls
						text = b.Text
					case "tool_use":
						is.Equal(b.Name, "Bash")
						is.True(strings.HasPrefix(b.ID, "toolu_"))
						is.True(!ids[b.ID]) // tool_use ids are unique
						ids[b.ID] = true
					default:
						t.Fatalf("unexpected block type %q", b.Type)
					}
				}
				is.Equal(text, tt.wantText)
				is.NoErr(srv.Verify())
			})
		}
	}
}

func TestSSEEventSequence(t *testing.T) {
	is := is.New(t)
	rep := reply{
		ID: "msg_1", Model: "m", Text: "hi",
		Calls:       []toolUse{{ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"command":"echo 1"}`)}},
		InputTokens: 3, OutputTokens: 7,
	}
	var buf strings.Builder
	flushes := 0
	is.NoErr(rep.writeSSE(&sseWriter{w: &buf, flush: func() { flushes++ }}))
	evs, err := parseSSE(strings.NewReader(buf.String()))
	is.NoErr(err)
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	is.Equal(names, []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	})
	is.Equal(flushes, len(evs)) // every event is flushed as it is written
	m, err := assemble(evs)
	is.NoErr(err)
	is.Equal(m.StopReason, "tool_use")
	is.Equal(m.OutputTokens, 7)
	is.Equal(commands(m), []string{"echo 1"})
}

func TestChunks(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 4, []string{""}},
		{"abc", 4, []string{"abc"}},
		{"abcdefgh", 4, []string{"abcd", "efgh"}},
		{"abcdefghi", 4, []string{"abcd", "efgh", "i"}},
		{"ab✓cd", 3, []string{"ab✓", "cd"}}, // ✓ is 3 bytes; the cut moves past it
		{"✓✓", 1, []string{"✓", "✓"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			is.Equal(chunks(tt.in, tt.n), tt.want)
		})
	}
}

func TestFaults(t *testing.T) {
	reset := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name       string
		fault      Fault
		wantStatus int
		wantType   string
		wantHeader map[string]string
	}{
		{"rate limited", RateLimited(2 * time.Second), 429, "rate_limit_error", map[string]string{"Retry-After": "2"}},
		{"rate limited rounds up", RateLimited(1500 * time.Millisecond), 429, "rate_limit_error", map[string]string{"Retry-After": "2"}},
		{"rate limited zero", RateLimited(0), 429, "rate_limit_error", map[string]string{"Retry-After": "0"}},
		{"rate limited no retry", RateLimited(time.Minute).NoRetry(), 429, "rate_limit_error", map[string]string{"Retry-After": "60", "X-Should-Retry": "false"}},
		{"usage limit", UsageLimit("five_hour", reset, time.Hour), 429, "rate_limit_error", map[string]string{
			"Retry-After":                                      "3600",
			"Anthropic-Ratelimit-Unified-Status":               "rejected",
			"Anthropic-Ratelimit-Unified-Reset":                "1893553445",
			"Anthropic-Ratelimit-Unified-Representative-Claim": "five_hour",
		}},
		{"overloaded", Overloaded(), 529, "overloaded_error", nil},
		{"invalid key", InvalidKey(), 401, "authentication_error", nil},
		{"server error", ServerError(), 500, "api_error", nil},
		{"custom without type", Fault{Status: 418}, 418, "api_error", nil},
		{"out of range status", Fault{Status: 7, Type: "x"}, 500, "x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			srv := startServer(t, Script{Turns: []Turn{Fail(tt.fault), Say("recovered")}})
			resp := post(t.Context(), t, srv, "/v1/messages?beta=true", "s1", agentBody{Prompt: "p", Stream: true}.JSON(t))
			is.Equal(resp.StatusCode, tt.wantStatus)
			for k, v := range tt.wantHeader {
				is.Equal(resp.Header.Get(k), v)
			}
			is.True(strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
				RequestID string `json:"request_id"`
			}
			is.NoErr(json.NewDecoder(resp.Body).Decode(&body))
			is.Equal(body.Type, "error")
			is.Equal(body.Error.Type, tt.wantType)
			is.Equal(body.RequestID, resp.Header.Get("Request-Id"))

			// The retry consumes the next turn.
			m := readReply(t, post(t.Context(), t, srv, "/v1/messages?beta=true", "s1", agentBody{Prompt: "p", Stream: true}.JSON(t)))
			is.Equal(m.Blocks[0].Text, "recovered")
			is.NoErr(srv.Verify())
		})
	}
}

func TestNoRetryDoesNotShareHeaders(t *testing.T) {
	is := is.New(t)
	base := RateLimited(time.Second)
	_ = base.NoRetry()
	is.Equal(base.Header.Get("X-Should-Retry"), "") // NoRetry copies the header map
}

// awaitRequests returns a Logf that signals on ch for every request.
func awaitRequests(ch chan<- struct{}) func(string, ...any) {
	return func(string, ...any) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func TestHangReleasedWhenClientGoesAway(t *testing.T) {
	is := is.New(t)
	srv := New(Script{Turns: []Turn{Fail(Hang()), Say("after the hang")}})
	seen := make(chan struct{}, 1)
	srv.Logf = awaitRequests(seen)
	is.NoErr(srv.Start())
	defer srv.Close()

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(string(agentBody{Prompt: "p", Stream: true}.JSON(t))))
		if err != nil {
			errc <- err
			return
		}
		req.Header.Set("X-Claude-Code-Session-Id", "s1")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	<-seen // the hanging request has arrived
	cancel()
	err := <-errc
	is.True(errors.Is(err, context.Canceled))

	// The conversation goes on with the next turn.
	m := readReply(t, post(t.Context(), t, srv, "/v1/messages", "s1", agentBody{Prompt: "p", Stream: true}.JSON(t)))
	is.Equal(m.Blocks[0].Text, "after the hang")
	srv.Close() // returns only once the hanging handler has ended
	is.Equal(len(srv.Requests()), 2)
}

func TestHangReleasedByClose(t *testing.T) {
	is := is.New(t)
	srv := New(Script{Turns: []Turn{Fail(Hang())}})
	seen := make(chan struct{}, 1)
	srv.Logf = awaitRequests(seen)
	is.NoErr(srv.Start())

	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(string(agentBody{Prompt: "p"}.JSON(t))))
		if err == nil {
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	<-seen
	srv.Close()
	is.True(<-errc != nil) // the client sees the connection closed, no answer
	srv.Close()            // a second Close is harmless
}

func TestConversationFlowAndChecks(t *testing.T) {
	is := is.New(t)
	srv := startServer(t, Script{Name: "rd-1", Turns: []Turn{
		Bash("bd show rd-1 --json"),
		Bash("bd close rd-1 --reason 'done'").Expect(Contains(`"id":"rd-1"`), Succeeded()),
		Say("DONE").Expect(Matches(`^closed rd-\d+$`), Failed()),
	}})
	ctx := t.Context()

	m1 := readReply(t, post(ctx, t, srv, "/v1/messages?beta=true", "sess", agentBody{Prompt: "work on rd-1", Stream: true}.JSON(t)))
	is.Equal(commands(m1), []string{"bd show rd-1 --json"})
	id1 := m1.Blocks[0].ID

	m2 := readReply(t, post(ctx, t, srv, "/v1/messages?beta=true", "sess", agentBody{Prompt: "work on rd-1", Stream: true,
		Results: []ToolResult{{ToolUseID: id1, Content: `{"id":"rd-1"}`}}}.JSON(t)))
	is.Equal(commands(m2), []string{"bd close rd-1 --reason 'done'"})
	id2 := m2.Blocks[0].ID

	// The last check expects an error result matching the pattern; this one
	// is not an error, so exactly one check fails.
	m3 := readReply(t, post(ctx, t, srv, "/v1/messages?beta=true", "sess", agentBody{Prompt: "work on rd-1", Stream: true,
		Results: []ToolResult{{ToolUseID: id2, Content: "closed rd-1"}}}.JSON(t)))
	is.Equal(m3.Blocks[0].Text, "DONE")

	errs := srv.Errors()
	is.Equal(len(errs), 1)
	is.True(strings.Contains(errs[0].Error(), "rd-1 turn 2"))
	is.True(strings.Contains(errs[0].Error(), "not an error"))
	is.Equal(srv.ToolResults(), []ToolResult{
		{Script: "rd-1", ToolUseID: id1, Content: `{"id":"rd-1"}`},
		{Script: "rd-1", ToolUseID: id2, Content: "closed rd-1"},
	})
	reqs := srv.Requests()
	is.Equal(len(reqs), 3)
	for i, r := range reqs {
		is.Equal(r.Seq, i+1)
		is.Equal(r.Kind, KindAgent)
		is.Equal(r.Script, "rd-1")
		is.Equal(r.Turn, i)
		is.Equal(r.Prompt, "work on rd-1") // system-reminder blocks are left out
		is.Equal(r.RawQuery, "beta=true")
		is.Equal(r.Header.Get("X-Claude-Code-Session-Id"), "sess")
		is.Equal(r.Body["model"], "claude-test-model")
	}
	is.True(srv.Verify() != nil) // the failed check
}

func TestChecksReportMissingToolResult(t *testing.T) {
	is := is.New(t)
	srv := startServer(t, Script{Turns: []Turn{Say("x").Expect(Contains("y"))}})
	readReply(t, post(t.Context(), t, srv, "/v1/messages", "s", agentBody{Prompt: "p"}.JSON(t)))
	errs := srv.Errors()
	is.Equal(len(errs), 1)
	is.True(strings.Contains(errs[0].Error(), "none"))
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name    string
		check   Check
		content string
		isErr   bool
		ok      bool
	}{
		{"contains yes", Contains("bd"), "ran bd", false, true},
		{"contains no", Contains("bd"), "ran git", false, false},
		{"matches yes", Matches(`closed \w+-\d+`), "closed rd-12", false, true},
		{"matches no", Matches(`^x$`), "y", false, false},
		{"matches bad pattern", Matches(`(`), "(", false, false},
		{"succeeded yes", Succeeded(), "", false, true},
		{"succeeded no", Succeeded(), "", true, false},
		{"failed yes", Failed(), "denied", true, true},
		{"failed no", Failed(), "ok", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := tt.check(tt.content, tt.isErr)
			is.Equal(err == nil, tt.ok)
		})
	}
}

func TestConversationRouting(t *testing.T) {
	t.Run("scripts in order", func(t *testing.T) {
		is := is.New(t)
		srv := startServer(t, Script{Turns: []Turn{Say("first")}}, Script{Turns: []Turn{Say("second")}})
		a := readReply(t, post(t.Context(), t, srv, "/v1/messages", "A", agentBody{Prompt: "same prompt"}.JSON(t)))
		b := readReply(t, post(t.Context(), t, srv, "/v1/messages", "B", agentBody{Prompt: "same prompt"}.JSON(t)))
		is.Equal(a.Blocks[0].Text, "first")
		is.Equal(b.Blocks[0].Text, "second")
		is.NoErr(srv.Verify())
	})
	t.Run("match on prompt", func(t *testing.T) {
		is := is.New(t)
		srv := startServer(t,
			Script{Name: "x", Match: PromptContains("issue X"), Turns: []Turn{Say("for X")}},
			Script{Name: "y", Match: PromptContains("issue Y"), Turns: []Turn{Say("for Y")}},
		)
		y := readReply(t, post(t.Context(), t, srv, "/v1/messages", "1", agentBody{Prompt: "work on issue Y"}.JSON(t)))
		x := readReply(t, post(t.Context(), t, srv, "/v1/messages", "2", agentBody{Prompt: "work on issue X"}.JSON(t)))
		is.Equal(y.Blocks[0].Text, "for Y")
		is.Equal(x.Blocks[0].Text, "for X")
		is.NoErr(srv.Verify())
	})
	t.Run("session from metadata, then from prompt", func(t *testing.T) {
		is := is.New(t)
		srv := startServer(t,
			Script{Turns: []Turn{Say("a1"), Say("a2")}},
			Script{Turns: []Turn{Say("b1"), Say("b2")}},
		)
		ctx := t.Context()
		// Each conversation's second request carries a tool result, as an
		// agent's next request does (the same body again would be the
		// first sent again: TestAnsweredRequestSentAgain).
		say := func(session, prompt string, results ...ToolResult) string {
			body := agentBody{Prompt: prompt, Session: session, Results: results}
			return readReply(t, post(ctx, t, srv, "/v1/messages", "", body.JSON(t))).Blocks[0].Text
		}
		more := ToolResult{ToolUseID: "toolu_1", Content: "ok"}
		// Interleaved conversations keep their own scripts.
		is.Equal(say("meta-1", "p"), "a1")
		is.Equal(say("", "other prompt"), "b1")
		is.Equal(say("meta-1", "p", more), "a2")
		is.Equal(say("", "other prompt", more), "b2")
		is.NoErr(srv.Verify())
	})
	t.Run("no script left", func(t *testing.T) {
		is := is.New(t)
		srv := startServer(t, Script{Match: PromptContains("never"), Turns: []Turn{Say("x")}})
		m := readReply(t, post(t.Context(), t, srv, "/v1/messages", "s", agentBody{Prompt: "p"}.JSON(t)))
		is.Equal(m.StopReason, "end_turn") // the agent is told to stop
		is.Equal(len(srv.Errors()), 1)
		err := srv.Verify()
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "never started"))
	})
	t.Run("exhausted", func(t *testing.T) {
		is := is.New(t)
		srv := startServer(t, Script{Name: "short", Turns: []Turn{Say("only")}})
		readReply(t, post(t.Context(), t, srv, "/v1/messages", "s", agentBody{Prompt: "p"}.JSON(t)))
		more := agentBody{Prompt: "p", Results: []ToolResult{{ToolUseID: "toolu_x", Content: "more"}}}
		m := readReply(t, post(t.Context(), t, srv, "/v1/messages", "s", more.JSON(t)))
		is.Equal(m.StopReason, "end_turn")
		errs := srv.Errors()
		is.Equal(len(errs), 1)
		is.True(strings.Contains(errs[0].Error(), "short: request after the last of its 1 turns"))
		is.Equal(srv.Requests()[1].Turn, -1)
	})
	t.Run("repeat last", func(t *testing.T) {
		is := is.New(t)
		srv := startServer(t, Script{Turns: []Turn{Fail(InvalidKey())}, RepeatLast: true})
		for range 3 {
			resp := post(t.Context(), t, srv, "/v1/messages", "s", agentBody{Prompt: "p"}.JSON(t))
			is.Equal(resp.StatusCode, 401)
		}
		is.NoErr(srv.Verify())
	})
	t.Run("added later", func(t *testing.T) {
		is := is.New(t)
		srv := startServer(t)
		srv.Add(Script{Turns: []Turn{Say("late")}})
		m := readReply(t, post(t.Context(), t, srv, "/v1/messages", "s", agentBody{Prompt: "p"}.JSON(t)))
		is.Equal(m.Blocks[0].Text, "late")
	})
	t.Run("repeat helper", func(t *testing.T) {
		is := is.New(t)
		turns := append(Repeat(2, Fail(Overloaded())), Say("ok"))
		is.Equal(len(Repeat(-1, Say("x"))), 0)
		srv := startServer(t, Script{Turns: turns})
		for _, want := range []int{529, 529, 200} {
			resp := post(t.Context(), t, srv, "/v1/messages", "s", agentBody{Prompt: "p"}.JSON(t))
			is.Equal(resp.StatusCode, want)
		}
		is.NoErr(srv.Verify())
	})
}

// TestAnsweredRequestSentAgain: an agent whose client gave up on reading
// an answer sends the same request again; it gets the same turn, and
// the script goes on from there. After a fault, the same request is a
// retry that consumes the next turn (TestFaults).
func TestAnsweredRequestSentAgain(t *testing.T) {
	is := is.New(t)
	srv := startServer(t, Script{Name: "again", Turns: []Turn{Bash("true"), Say("done")}})
	first := agentBody{Prompt: "p", Session: "s1"}.JSON(t)
	m := readReply(t, post(t.Context(), t, srv, "/v1/messages", "s1", first))
	is.Equal(len(m.Blocks), 1)
	is.Equal(m.Blocks[0].Type, "tool_use")
	m = readReply(t, post(t.Context(), t, srv, "/v1/messages", "s1", first)) // sent again
	is.Equal(m.Blocks[0].Type, "tool_use")
	next := agentBody{Prompt: "p", Session: "s1", Results: []ToolResult{{ToolUseID: m.Blocks[0].ID, Content: "ok"}}}.JSON(t)
	m = readReply(t, post(t.Context(), t, srv, "/v1/messages", "s1", next))
	is.Equal(m.Blocks[0].Text, "done")
	is.NoErr(srv.Verify()) // no request after the last turn
	var turns []int
	var replayed []bool
	for _, r := range srv.Requests() {
		if r.Kind == KindAgent {
			turns, replayed = append(turns, r.Turn), append(replayed, r.Replayed)
		}
	}
	is.Equal(turns, []int{0, 0, 1})
	is.Equal(replayed, []bool{false, true, false})
}

func TestSideRequests(t *testing.T) {
	is := is.New(t)
	srv := startServer(t, Script{Turns: []Turn{Say("scripted")}})
	ctx := t.Context()

	// No Bash tool: a side request, canned reply, no turn used.
	side := readReply(t, post(ctx, t, srv, "/v1/messages?beta=true", "s", agentBody{Prompt: "p", NoBash: true, Stream: true}.JSON(t)))
	is.Equal(side.Blocks[0].Text, "OK")
	// A max_tokens:1 probe is a side request even with tools.
	probe := readReply(t, post(ctx, t, srv, "/v1/messages?beta=true", "s", agentBody{Prompt: "quota", MaxTok: 1}.JSON(t)))
	is.Equal(probe.Blocks[0].Text, "OK")
	// Title generation (real Claude Code 2.1.197 request) gets a JSON title.
	title, err := os.ReadFile(filepath.Join("testdata", "claude-2.1.197", "request-side-title.json"))
	is.NoErr(err)
	tm := readReply(t, post(ctx, t, srv, "/v1/messages?beta=true", "s", title))
	var got struct {
		Title string `json:"title"`
	}
	is.NoErr(json.Unmarshal([]byte(tm.Blocks[0].Text), &got))
	is.True(got.Title != "")

	// count_tokens.
	resp := post(ctx, t, srv, "/v1/messages/count_tokens?beta=true", "s", agentBody{Prompt: "p"}.JSON(t))
	is.Equal(resp.StatusCode, 200)
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&ct))
	is.True(ct.InputTokens > 0)

	// Claude Code's HEAD / probe, and an unknown path.
	head, err := http.NewRequestWithContext(ctx, http.MethodHead, srv.URL()+"/", nil)
	is.NoErr(err)
	hr, err := http.DefaultClient.Do(head)
	is.NoErr(err)
	_ = hr.Body.Close()
	is.Equal(hr.StatusCode, 200)
	gr, err := http.Get(srv.URL() + "/api/unknown")
	is.NoErr(err)
	body, _ := io.ReadAll(gr.Body)
	_ = gr.Body.Close()
	is.Equal(gr.StatusCode, 404)
	is.True(strings.Contains(string(body), "not_found_error"))

	// Invalid JSON to /v1/messages: 400, recorded as a side request.
	bad := post(ctx, t, srv, "/v1/messages", "s", []byte("{not json"))
	is.Equal(bad.StatusCode, 400)

	// The script turn is still there.
	m := readReply(t, post(ctx, t, srv, "/v1/messages", "s", agentBody{Prompt: "p"}.JSON(t)))
	is.Equal(m.Blocks[0].Text, "scripted")
	is.NoErr(srv.Verify())

	var kinds []RequestKind
	for _, r := range srv.Requests() {
		kinds = append(kinds, r.Kind)
	}
	is.Equal(kinds, []RequestKind{KindSide, KindSide, KindSide, KindCountTokens, KindOther, KindOther, KindSide, KindAgent})
}

func TestToolResultsDeduplicated(t *testing.T) {
	is := is.New(t)
	srv := startServer(t, Script{Turns: []Turn{Say("1"), Say("2")}})
	res := []ToolResult{{ToolUseID: "toolu_a", Content: "denied: bd dep remove is not allowed in BUILD mode", IsError: true}}
	for range 2 { // a retry resends the same history
		readReply(t, post(t.Context(), t, srv, "/v1/messages", "s", agentBody{Prompt: "p", Results: res}.JSON(t)))
	}
	is.Equal(srv.ToolResults(), []ToolResult{{Script: "script 0", ToolUseID: "toolu_a", Content: res[0].Content, IsError: true}})
}

func TestToolResultContentForms(t *testing.T) {
	tests := []struct {
		name    string
		content string // JSON
		want    string
	}{
		{"string", `"plain"`, "plain"},
		{"text blocks", `[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]`, "a\nb"},
		{"absent", `null`, ""},
		{"number", `3`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			raw := `{"model":"m","max_tokens":5,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":` + tt.content + `}]}]}`
			b, err := parseMessagesBody([]byte(raw))
			is.NoErr(err)
			is.Equal(b.prompt(), "hi")
			is.Equal(b.toolResults(), []ToolResult{{ToolUseID: "t1", Content: tt.want}})
		})
	}
}

func TestRealRequestFixtures(t *testing.T) {
	is := is.New(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "claude-2.1.197", "request-agent-tool-result.json"))
	is.NoErr(err)
	b, err := parseMessagesBody(raw)
	is.NoErr(err)
	is.True(b.isAgentRequest())
	is.True(b.Stream)
	is.Equal(b.prompt(), "do the thing for issue ab-12")
	is.Equal(len(b.toolResults()), 1)
	is.Equal(b.toolResults()[0].Content, "done")
	is.Equal(conversationKey(http.Header{}, b), "session:b4a5d8fe-6cf1-4dab-adb0-fe693e6d12ac") // from metadata.user_id

	raw, err = os.ReadFile(filepath.Join("testdata", "claude-2.1.197", "request-side-title.json"))
	is.NoErr(err)
	b, err = parseMessagesBody(raw)
	is.NoErr(err)
	is.True(!b.isAgentRequest())
	is.Equal(b.sideText(), `{"title":"Scripted session"}`)
}

func TestLifecycle(t *testing.T) {
	is := is.New(t)
	srv := New()
	is.Equal(srv.URL(), "")
	is.NoErr(srv.Start())
	is.True(strings.HasPrefix(srv.URL(), "http://127.0.0.1:"))
	is.True(srv.Start() != nil) // twice
	is.Equal(srv.Env(), []string{"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=" + DummyKey})
	is.Equal(srv.SubscriptionEnv(), []string{"ANTHROPIC_BASE_URL=" + srv.URL(), "CLAUDE_CODE_OAUTH_TOKEN=" + DummyOAuthToken})
	srv.Close()
	srv.Close()
	is.True(srv.Start() != nil) // after Close

	unstarted := New()
	unstarted.Close() // closing a server that never started is fine
}

func TestConcurrentConversations(t *testing.T) {
	is := is.New(t)
	const n = 8
	var scripts []Script
	for i := range n {
		scripts = append(scripts, Script{
			Name:  fmt.Sprintf("c%d", i),
			Match: PromptContains(fmt.Sprintf("conv-%d.", i)),
			Turns: []Turn{Bash(fmt.Sprintf("echo %d", i)), Say(fmt.Sprintf("done %d", i)).Expect(Contains(fmt.Sprint(i)))},
		})
	}
	srv := startServer(t, scripts...)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			session := fmt.Sprintf("sess-%d", i)
			prompt := fmt.Sprintf("conv-%d.", i)
			resp := post(t.Context(), t, srv, "/v1/messages", session, agentBody{Prompt: prompt, Stream: true}.JSON(t))
			m := readReply(t, resp)
			res := []ToolResult{{ToolUseID: m.Blocks[0].ID, Content: fmt.Sprint(i)}}
			readReply(t, post(t.Context(), t, srv, "/v1/messages", session, agentBody{Prompt: prompt, Stream: true, Results: res}.JSON(t)))
			_ = srv.Requests()
			_ = srv.ToolResults()
		})
	}
	wg.Wait()
	is.NoErr(srv.Verify())
	is.Equal(len(srv.ToolResults()), n)
	is.Equal(len(srv.Requests()), 2*n)
}

func TestFindClaude(t *testing.T) {
	t.Run("local install in a parent", func(t *testing.T) {
		is := is.New(t)
		root := t.TempDir()
		bin := filepath.Join(root, ".tools", "claude", "node_modules", ".bin", "claude")
		is.NoErr(os.MkdirAll(filepath.Dir(bin), 0o755))
		is.NoErr(os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
		sub := filepath.Join(root, "internal", "pkg")
		is.NoErr(os.MkdirAll(sub, 0o755))
		got, err := FindClaude(sub)
		is.NoErr(err)
		is.Equal(got, bin)
	})
	t.Run("on PATH", func(t *testing.T) {
		is := is.New(t)
		binDir := t.TempDir()
		is.NoErr(os.WriteFile(filepath.Join(binDir, "claude"), []byte("#!/bin/sh\n"), 0o755))
		t.Setenv("PATH", binDir)
		got, err := FindClaude(t.TempDir())
		is.NoErr(err)
		is.Equal(got, filepath.Join(binDir, "claude"))
	})
	t.Run("missing", func(t *testing.T) {
		is := is.New(t)
		t.Setenv("PATH", t.TempDir())
		_, err := FindClaude(t.TempDir())
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "scripts/install-agents"))
	})
}

func TestPromptWithoutReminders(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"string", `"hello"`, "hello"},
		{"reminder then prompt", `[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"do it"}]`, "do it"},
		{"only reminder", `[{"type":"text","text":"<system-reminder>x</system-reminder>"}]`, "<system-reminder>x</system-reminder>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			b, err := parseMessagesBody([]byte(`{"messages":[{"role":"system","content":"sys"},{"role":"user","content":` + tt.content + `}]}`))
			is.NoErr(err)
			is.Equal(b.prompt(), tt.want)
		})
	}
}

func TestValidUTF8Chunks(t *testing.T) {
	is := is.New(t)
	s := strings.Repeat("a✓b€c𝄞", 20)
	var joined strings.Builder
	for _, c := range chunks(s, 5) {
		is.True(utf8.ValidString(c))
		joined.WriteString(c)
	}
	is.Equal(joined.String(), s)
}

// TestCapturedStreams keeps the recorded claude streams in testdata
// honest: JSON lines ending in a result whose is_error matches the exit
// code.
func TestCapturedStreams(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "claude-2.1.197", "stream-*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured streams: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			is := is.New(t)
			data, err := os.ReadFile(f)
			is.NoErr(err)
			exit, err := os.ReadFile(strings.TrimSuffix(f, ".jsonl") + ".exit")
			is.NoErr(err)
			var last map[string]any
			for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
				last = nil
				is.NoErr(json.Unmarshal([]byte(line), &last))
			}
			is.Equal(last["type"], "result")
			is.Equal(last["is_error"], strings.TrimSpace(string(exit)) != "0")
		})
	}
}

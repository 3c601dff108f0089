package agent

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestAmpParserFixtures(t *testing.T) {
	checkFixtures(t, Amp{Now: clock}, "amp-*.jsonl", []fixtureCase{
		{
			// The Claude subset: no cost, usage only per message, Bash input key "cmd".
			file: "amp-success.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: promiseText,
				Turns:      2,
				SessionID:  "T-019a7c41-2e3f-7a4b-9c5d-6e7f8a9b0c1d",
				Commands:   []string{closeCmd},
				ToolCalls:  1,
			},
			reason: "finished",
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventText, EventResult},
		},
	})
}

func TestAmpParserClassification(t *testing.T) {
	const initLine = `{"type":"system","subtype":"init","session_id":"T-1"}`
	checkClasses(t, Amp{Now: clock}, []classCase{
		{name: "not logged in speaks of amp", exit: 1, stderr: "Error: Not logged in. Please run amp login\n",
			status: StatusFatal, reason: "Amp cannot authenticate: Error: Not logged in. Please run amp login; log in with `amp login`"},
		{name: "error result message in the error field", exit: 1, lines: []string{initLine,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"error":"tool crashed","num_turns":1,"session_id":"T-1"}`},
			status: StatusAgentError, reason: "error_during_execution: tool crashed"},
		{name: "rate limit text", exit: 1, lines: []string{initLine,
			`{"type":"result","subtype":"error_during_execution","is_error":true,"error":"429 rate limit exceeded"}`},
			status: StatusRateLimited},
		{name: "no result", exit: 1, lines: []string{initLine}, status: StatusCrashed, reason: "exit code 1"},
	})
	is := is.New(t)
	got := feed(Amp{Now: clock}.NewParser(), 1, "Error: Not logged in\n")
	is.True(!strings.Contains(got.Reason, "claude")) // no Claude advice for Amp
}

func TestAmpCommand(t *testing.T) {
	is := is.New(t)
	spec, err := Amp{}.Command(Invocation{Mode: "build", IssueID: "bd-1", Prompt: "go", DenyBash: []string{"bd delete"}, ScratchDir: t.TempDir()})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"amp", "-x", "--stream-json"})
	is.Equal(spec.Stdin, "go")
	is.Equal(spec.Env, []string{"RALPH_MODE=build", "RALPH_ISSUE_ID=bd-1", "RALPH_ITERATION=0", "RALPH_ATTEMPT=0"})

	spec, err = Amp{Bin: "/opt/amp"}.Command(Invocation{Model: "rush"})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"/opt/amp", "-x", "--stream-json", "--mode", "rush"})
}

func FuzzAmpParser(f *testing.F) {
	fuzzParser(f, func() Parser { return Amp{Now: clock}.NewParser() }, false,
		`{"type":"result","subtype":"error_during_execution","is_error":true,"error":{"x":1}}`,
	)
}

package agent_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/logjsonl"
)

// tally is a backend known only to this test, whose CLI speaks a stream
// format of its own: plain words, one event a line.
type tally struct{}

func (tally) Name() string   { return "tally" }
func (tally) Binary() string { return "tally" }
func (tally) Command(agent.Invocation) (agent.Spec, error) {
	return agent.Spec{Argv: []string{"tally"}}, nil
}
func (tally) NewParser() agent.Parser                    { return &tallyParser{} }
func (tally) Verified() agent.Verification               { return agent.Verification{Why: "a test's own"} }
func (tally) Hosts(func(string) string) []string         { return nil }
func (tally) Credentials(agent.Home) agent.Credentials   { return agent.Credentials{} }
func (tally) Writable(agent.Home) (dirs, files []string) { return nil, nil }
func (tally) Guarded(agent.Home) agent.Guarded           { return agent.Guarded{} }
func (tally) ScrubEnv() []string                         { return nil }

// tallyParser reads "SAY <text>", "RUN <command>", "FAIL <output>" and
// "DONE" lines; any other line is not tally's.
type tallyParser struct{}

func (*tallyParser) Line(line []byte) []agent.Event {
	word, rest, _ := strings.Cut(string(line), " ")
	switch word {
	case "SAY":
		return []agent.Event{{Kind: agent.EventText, Text: rest}}
	case "RUN":
		return []agent.Event{{Kind: agent.EventToolCall, Tool: "shell", Command: rest}}
	case "FAIL":
		return []agent.Event{{Kind: agent.EventToolResult, Text: rest, IsError: true}}
	case "DONE":
		return []agent.Event{{Kind: agent.EventResult}}
	}
	return nil
}

func (*tallyParser) Finish(exitCode int, _ string) agent.Outcome {
	return agent.Outcome{Status: agent.StatusOK, Reason: "finished", ExitCode: exitCode}
}

// TestLogsRenderAnyBackend checks that `ralphd logs` shows the stream of
// a backend added to the registry and nowhere else, through its parser:
// the run log's renderer knows no CLI by name.
func TestLogsRenderAnyBackend(t *testing.T) {
	is := is.New(t)
	agent.RegisterForTest(t, tally{})
	var log bytes.Buffer
	start := time.Date(2026, 1, 28, 15, 30, 0, 0, time.UTC)
	w := logjsonl.New(&log, logjsonl.Options{Now: func() time.Time { return start }})
	is.NoErr(w.Meta(logjsonl.EventRunStart, logjsonl.RunStart{SchemaVersion: logjsonl.SchemaVersion, Mode: "build", Agent: "tally"}))
	is.NoErr(w.Meta(logjsonl.EventIterationStart, logjsonl.IterationStart{Iteration: 1, IssueID: "bd-1", Mode: "build"}))
	for _, l := range []string{"SAY looking at the tests", "RUN go test ./...", "FAIL --- FAIL: TestX\nmore", "noise from the CLI", "DONE"} {
		is.NoErr(w.AgentLine(logjsonl.StreamStdout, []byte(l)))
	}
	var out bytes.Buffer
	is.NoErr(logjsonl.Render(&out, &log, logjsonl.RenderOptions{Location: time.UTC}))
	want := "▶ run 2026-01-28 15:30:00 · build · tally\n" +
		"\n" +
		"━━ iteration 1 · bd-1 ━━\n" +
		"  looking at the tests\n" +
		"  $ go test ./...\n" +
		"  ✗ --- FAIL: TestX\n" +
		"  more\n" + // a second line of output is a line the parser does not read
		"  noise from the CLI\n" +
		"└ agent result: ok\n"
	is.Equal(out.String(), want) // tally's events, laid out as every CLI's are
}

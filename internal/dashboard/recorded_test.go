package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
)

func TestParseMeta(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
		want string // describe() of the event
	}{
		{`{"type":"loop_meta","event":"stuck","timestamp":"2026-01-01T00:00:00Z","data":{"issue_id":"t-1","attempts":3,"max_attempts":3}}`, true, "t-1 is STUCK after 3 attempts"},
		{`{"type":"loop_meta","event":"iteration_end","timestamp":"2026-01-01T00:00:00Z","data":{"iteration":2,"exit_code":0,"duration_seconds":5,"outcome":"closed","issue_id":"t-2"}}`, true, "iteration 2 (t-2) done: closed in 5s"},
		{`{"type":"loop_meta","event":"bd_call","timestamp":"2026-01-01T00:00:00Z","data":{"argv":["update","t-1","--priority","0"],"mode":"build","allowed":false,"reason":"BUILD may not change priority"}}`, true, "agent ran bd update t-1 --priority 0 (refused: BUILD may not change priority)"},
		{`{"type":"loop_meta","event":"sweep","timestamp":"2026-01-01T00:00:00Z","data":{"summary":"x"}}`, true, "sweep"},
		{`{"type":"loop_meta","event":"stuck","timestamp":"2026-01-01T00:00:00Z","data":{"issue_id":7}}`, true, "stuck"},
		{`{"type":"agent_output","stream":"stdout","line":"\"loop_meta\""}`, false, ""},
		{`{"type":"assistant","message":"loop_meta"}`, false, ""},
		{`not json "loop_meta"`, false, ""},
		{``, false, ""},
	} {
		ev, ok := parseMeta([]byte(tc.line))
		if ok != tc.ok || (ok && describe(ev) != tc.want) {
			t.Errorf("parseMeta(%s) = %q, %v; want %q, %v", tc.line, describe(ev), ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseMeta(f *testing.F) {
	f.Add([]byte(`{"type":"loop_meta","event":"run_end","timestamp":"2026-01-01T00:00:00Z","data":{"iterations":1,"outcome":"success"}}`))
	f.Add([]byte(`{"type":"loop_meta","event":"decision","data":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if ev, ok := parseMeta(line); ok {
			_ = describe(ev)
		}
	})
}

// `ralphd serve` shows the newest run log's last events.
func TestServeShowsRecordedEvents(t *testing.T) {
	s := newTest(t, Options{Dot: "none"})
	w, err := logjsonl.CreateRun(s.opts.Sources.LogsDir, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Local().Format(logjsonl.FileTimeLayout), 10, logjsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Meta(logjsonl.EventRunStart, logjsonl.RunStart{SchemaVersion: 1, Mode: "build", Agent: "command"})
	w.AgentLine(logjsonl.StreamStdout, []byte(`{"type":"loop_meta","event":"stuck","data":{"issue_id":"fake"}}`))
	w.Meta(logjsonl.EventStuck, logjsonl.Stuck{IssueID: "t-d", Attempts: 3})
	w.Close()
	b := body(t, get(t, s.Handler(true), "/now"))
	if !strings.Contains(b, "t-d is STUCK after 3 attempts") || !strings.Contains(b, "build run started") {
		t.Fatalf("recorded events missing:\n%s", b)
	}
	if strings.Contains(b, "fake") {
		t.Fatal("an agent line posing as loop_meta was shown as an event")
	}
}

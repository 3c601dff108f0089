package logjsonl

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// TestRenderTagsWorkers: the events of concurrent workers, interleaved in
// one run log, are each shown with their worker; events without one are
// not tagged.
func TestRenderTagsWorkers(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var in []byte
	for _, ev := range []struct {
		name string
		data any
	}{
		{EventRunStart, RunStart{Mode: "build", RunID: "r"}},
		{EventWorker, WorkerStep{Worker: "w1", IssueID: "t-1", Kind: "claimed"}},
		{EventIterationStart, map[string]any{"iteration": 1, "issue_id": "t-1", "worker": "w1"}},
		{EventIterationStart, map[string]any{"iteration": 2, "issue_id": "t-2", "worker": "w2"}},
		{EventWorker, WorkerStep{Worker: "w2", IssueID: "t-2", Kind: "failed", Detail: "rebase conflicted in a.txt"}},
		{EventWorker, WorkerStep{Worker: "w1", IssueID: "t-1", Kind: "integrated", Detail: "afebcb584c3e5cfae58008fad2343506834e7973"}},
		{EventWorker, WorkerStep{Worker: "w1", IssueID: "t-3", Kind: "integrated", Detail: "not a commit id"}},
		{EventWorker, WorkerStep{Worker: "w1", Kind: "idle-exit"}},
		{EventWorker, WorkerStep{Worker: "w2", IssueID: "t-4", Kind: "some-new-step", Detail: "as it is"}},
	} {
		line, err := MetaLine(ev.name, ts, ev.data)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, line...)
	}
	out := renderString(t, in, RenderOptions{Location: time.UTC})
	for _, want := range []string{
		"[w1] · claimed t-1",
		"[w1] ━━ iteration 1 · t-1",
		"[w2] ━━ iteration 2 · t-2",
		"[w2] · failed t-2 — rebase conflicted in a.txt",
		"[w1] · integrated t-1 onto the target at afebcb584c3e\n",
		"[w1] · integrated t-3 onto the target at not a commit id\n",
		"[w1] · nothing left to claim: done\n",
		"[w2] · some-new-step t-4 — as it is\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "] ▶ run") {
		t.Errorf("run_start is tagged with a worker:\n%s", out)
	}
}

// TestRenderWorkersAgentLines: two workers' agents interleaved in one log,
// as the Writer tags them. Every line, ralphd's and the agents', shows its
// worker; a tool error is named from the right worker's tool call, and
// each iteration's end shows its own agent's turns and cost, whatever the
// other worker printed meanwhile. Lines without a worker are not tagged.
func TestRenderWorkersAgentLines(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var buf bytes.Buffer
	w := New(&buf, Options{Now: func() time.Time { return ts }})
	meta := func(event string, data any) {
		if err := w.Meta(event, data); err != nil {
			t.Fatal(err)
		}
	}
	agent := map[string][2]io.WriteCloser{}
	for _, name := range []string{"w1", "w2"} {
		agent[name] = [2]io.WriteCloser{w.WorkerStreamWriter(name, StreamStdout), w.WorkerStreamWriter(name, StreamStderr)}
	}
	say := func(worker string, stream int, line string) {
		if _, err := io.WriteString(agent[worker][stream], line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	meta(EventRunStart, RunStart{Mode: "build", RunID: "r"})
	meta(EventIterationStart, map[string]any{"iteration": 1, "issue_id": "t-1", "worker": "w1"})
	meta(EventIterationStart, map[string]any{"iteration": 2, "issue_id": "t-2", "worker": "w2"})
	say("w1", 0, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"Edit","input":{"file_path":"x.go"}}]}}`)
	say("w2", 0, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"Bash","input":{"command":"go test ./..."}}]}}`)
	say("w1", 0, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","is_error":true,"content":"no such file"}]}}`)
	say("w2", 1, "npm warn deprecated")
	say("w2", 0, "plain text from w2")
	say("w1", 0, `{"type":"result","num_turns":3,"total_cost_usd":0.5}`)
	say("w2", 0, `{"type":"result","num_turns":7,"total_cost_usd":0.25}`)
	say("w2", 0, `{"type":"something_new","x":1}`)
	meta(EventIterationEnd, map[string]any{"iteration": 2, "exit_code": 0, "worker": "w2"})
	meta(EventIterationEnd, map[string]any{"iteration": 1, "exit_code": 0, "worker": "w1"})
	for _, a := range agent {
		a[0].Close()
		a[1].Close()
	}
	meta(EventRunEnd, RunEnd{Outcome: "success", Iterations: 2})

	out := renderString(t, buf.Bytes(), RenderOptions{})
	hasLines(t, out,
		"▶ run 2026-01-02 03:04:05 · build",
		"[w1] ━━ iteration 1 · t-1 ━━",
		"[w2] ━━ iteration 2 · t-2 ━━",
		"[w1]   ▸ Edit x.go",
		"[w2]   $ go test ./...",
		"[w1]   ✗ Edit: no such file",
		"[w2]   stderr: npm warn deprecated",
		"[w2]   plain text from w2",
		`[w2]   {"type":"something_new","x":1}`,
		"[w2] └ iteration 2: ok · 7 turns · $0.2500",
		"[w1] └ iteration 1: ok · 3 turns · $0.5000",
		"■ run end: success · 2 iterations · 0s",
	)
	if strings.Contains(out, "ralph_worker") {
		t.Errorf("the tag shows in the rendered log:\n%s", out)
	}
}

// TestRenderWorkersPendingResults: results no iteration_end showed are
// shown at the run's end, each with its worker.
func TestRenderWorkersPendingResults(t *testing.T) {
	in := `{"ralph_worker":"w2","type":"result","num_turns":2}` + "\n" +
		`{"type":"result","num_turns":1}` + "\n" +
		`{"ralph_worker":"w1","type":"result","num_turns":4,"is_error":true}` + "\n"
	out := renderString(t, []byte(in), RenderOptions{})
	hasLines(t, out,
		"└ agent result: ok · 1 turn",
		"[w1] └ agent result: error · 4 turns",
		"[w2] └ agent result: ok · 2 turns",
	)
}

// TestRenderManyWorkers: a log naming more workers than the renderer keeps
// apart still renders, in bounded memory.
func TestRenderManyWorkers(t *testing.T) {
	var in []byte
	for i := range 3 * maxStates {
		in = fmt.Appendf(in, `{"ralph_worker":"w%d","type":"assistant","message":{"content":"hi %d"}}`+"\n", i, i)
	}
	out := renderString(t, in, RenderOptions{})
	last := 3*maxStates - 1
	hasLines(t, out, "[w0]   hi 0", fmt.Sprintf("[w%d]   hi %d", maxStates-2, maxStates-2), fmt.Sprintf("[…]   hi %d", last))
}

// TestRenderOneWorker: RenderOptions.Worker shows that worker's lines,
// ralphd's and its agent's, and the run's own; no other worker's.
func TestRenderOneWorker(t *testing.T) {
	in := `{"type":"loop_meta","event":"run_start","timestamp":"2026-01-02T03:04:05Z","data":{"mode":"build"}}` + "\n" +
		`{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-02T03:04:05Z","data":{"iteration":1,"issue_id":"t-1","worker":"w1"}}` + "\n" +
		`{"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-02T03:04:05Z","data":{"iteration":2,"issue_id":"t-2","worker":"w2"}}` + "\n" +
		`{"ralph_worker":"w1","type":"assistant","message":{"content":"from one"}}` + "\n" +
		`{"ralph_worker":"w2","type":"assistant","message":{"content":"from two"}}` + "\n" +
		`{"ralph_worker":"w2","type":"agent_output","stream":"stderr","line":"two's stderr"}` + "\n" +
		`{"ralph_worker":"w12","type":"assistant","message":{"content":"from twelve"}}` + "\n" +
		`{"type":"loop_meta","event":"run_end","timestamp":"2026-01-02T03:04:05Z","data":{"outcome":"success","iterations":2}}` + "\n"
	out := renderString(t, []byte(in), RenderOptions{Worker: "w2"})
	hasLines(t, out,
		"▶ run 2026-01-02 03:04:05 · build",
		"[w2] ━━ iteration 2 · t-2 ━━",
		"[w2]   from two",
		"[w2]   stderr: two's stderr",
		"■ run end: success · 2 iterations",
	)
	for _, not := range []string{"w1", "from one", "twelve"} {
		if strings.Contains(out, not) {
			t.Errorf("shows %q:\n%s", not, out)
		}
	}
}

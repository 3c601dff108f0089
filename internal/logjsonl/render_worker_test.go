package logjsonl

import (
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
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "] ▶ run") {
		t.Errorf("run_start is tagged with a worker:\n%s", out)
	}
}

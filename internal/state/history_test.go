package state

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
)

func cost(v float64) *float64 { return &v }

func TestRecordJSONFields(t *testing.T) {
	is := is.New(t)
	start := time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
	progress := true
	r := Record{
		RunID: "r1", Mode: "build", Iteration: 3, IssueID: "bd-1", Attempt: 2,
		StartedAt: start, EndedAt: start.Add(90 * time.Second), Outcome: "agent_error", ExitCode: 1,
		Fingerprint: "abc123", CostUSD: cost(0.25), Tokens: agent.Tokens{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40},
		DurationSeconds: 90, StopReason: "budget", Gate: "verify", Violations: []string{"bd delete"},
		Progress: &progress, Tier: 1, Stuck: true, FailureBranch: "wip/ralph-fail-bd-1-20260102-150000",
		Extra: map[string]json.RawMessage{"later": json.RawMessage(`{"x":1}`)},
	}
	data, err := json.Marshal(r)
	is.NoErr(err)
	var m map[string]json.RawMessage
	is.NoErr(json.Unmarshal(data, &m))
	for _, k := range []string{"v", "run_id", "mode", "iteration", "issue_id", "attempt", "started_at", "ended_at", "outcome",
		"exit_code", "fingerprint", "cost_usd", "tokens", "duration_seconds", "stop_reason", "gate", "violations",
		"progress", "tier", "stuck", "failure_branch", "extra"} {
		_, ok := m[k]
		is.True(ok) // key present
	}
	is.Equal(string(m["tokens"]), `{"input_tokens":10,"output_tokens":20,"cache_read_tokens":30,"cache_write_tokens":40}`)
	// A record written before the run log's spelling was shared still
	// reads with its counts.
	old, err := ParseHistoryLine([]byte(`{"v":1,"run_id":"r0","tokens":{"input":10,"output":20,"cache_read":30,"cache_write":40}}`))
	is.NoErr(err)
	is.Equal(old.Tokens, r.Tokens)
	is.Equal(string(m["started_at"]), `"2026-01-02T15:00:00Z"`)

	back, err := ParseHistoryLine(data)
	is.NoErr(err)
	is.Equal(back, r)

	// Unknown cost and tokens are omitted, never written as 0.
	data, err = json.Marshal(Record{RunID: "r", Mode: "plan"})
	is.NoErr(err)
	s := string(data)
	is.True(!strings.Contains(s, "cost_usd"))
	is.True(!strings.Contains(s, "tokens"))
	is.True(!strings.Contains(s, "started_at"))
}

func TestParseHistoryLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{"record", `{"v":1,"run_id":"r","mode":"build","iteration":1}`, true},
		{"spaces", "  {\"run_id\":\"r\"}\r", true},
		{"null", `null`, false},
		{"number", `42`, false},
		{"array", `[{"run_id":"r"}]`, false},
		{"cut short", `{"v":1,"run_id":"r","mo`, false},
		{"wrong type", `{"iteration":"three"}`, false},
		{"two records glued", `{"run_id":"a"}{"run_id":"b"}`, false},
		{"garbage", "\x00\x00\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := ParseHistoryLine([]byte(tt.line))
			is.Equal(err == nil, tt.ok)
		})
	}
}

func TestHistoryAppendAndRead(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	recs, err := s.History()
	is.NoErr(err)
	is.Equal(len(recs), 0) // no file yet

	for i := 1; i <= 3; i++ {
		is.NoErr(s.AppendHistory(Record{RunID: "r1", Mode: "build", Iteration: i, IssueID: "bd-1", Attempt: i, Outcome: "ok"}))
	}
	fi, err := os.Stat(s.HistoryPath())
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o600))
	data := readFile(t, s.HistoryPath())
	is.Equal(strings.Count(data, "\n"), 3) // one line per record
	recs, err = s.History()
	is.NoErr(err)
	is.Equal(len(recs), 3)
	is.Equal(recs[2].Iteration, 3)
	is.Equal(recs[2].V, HistoryVersion)
	is.Equal(recs[2].Kind, KindIteration)
}

func TestHistoryBadLinesSkipped(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	// A good line, garbage, a line cut short by a crash (no newline).
	writeFile(t, s.HistoryPath(), `{"run_id":"r1","mode":"build","iteration":1}`+"\n"+
		"not json\n"+
		`{"run_id":"r1","mode":"build","iteration":2}`+"\n"+
		`{"run_id":"r1","mode":"bu`)
	// Appending after the cut line starts a new line, so the record survives.
	is.NoErr(s.AppendHistory(Record{RunID: "r1", Mode: "build", Iteration: 3}))

	recs, err := s.History()
	is.NoErr(err)
	is.Equal(len(recs), 3)
	is.Equal([]int{recs[0].Iteration, recs[1].Iteration, recs[2].Iteration}, []int{1, 2, 3})
	warns := s.Warnings()
	is.Equal(len(warns), 1)
	is.True(strings.Contains(warns[0], s.HistoryPath()))
	is.True(strings.Contains(warns[0], "skipped 2 unreadable line(s), first at line 2"))
	// Nothing was rewritten: history stays append-only.
	is.True(strings.Contains(readFile(t, s.HistoryPath()), "not json\n"))
}

// TestHistoryConcurrentAppenders appends from two stores on the same
// directory (separate mutexes, as two processes would be): O_APPEND and one
// write per record keep every line whole.
func TestHistoryConcurrentAppenders(t *testing.T) {
	is := is.New(t)
	a := openStore(t)
	b := &Store{Now: fixedNow, id: a.id, dir: a.dir, root: a.root, mu: new(sync.Mutex), seal: new(sealState)}
	const n = 50
	var wg sync.WaitGroup
	for i, s := range []*Store{a, b} {
		wg.Go(func() {
			for j := range n {
				if err := s.AppendHistory(Record{RunID: "r" + string(rune('a'+i)), Mode: "build", Iteration: j, Violations: []string{strings.Repeat("x", 3000)}}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	recs, warns, err := ReadHistory(a.HistoryPath())
	is.NoErr(err)
	is.Equal(len(warns), 0)
	is.Equal(len(recs), 2*n)
}

func TestSummaries(t *testing.T) {
	is := is.New(t)
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	recs := []Record{
		{RunID: "r1", Mode: "build", Iteration: 1, IssueID: "bd-b", Attempt: 1, StartedAt: at(0), EndedAt: at(5), Outcome: "agent_error", Fingerprint: "f1", CostUSD: cost(0.5), Tokens: agent.Tokens{InputTokens: 100, OutputTokens: 10}, DurationSeconds: 300, Gate: "verify"},
		{RunID: "r1", Mode: "build", Iteration: 2, IssueID: "bd-b", Attempt: 2, StartedAt: at(5), EndedAt: at(9), Outcome: "agent_error", Fingerprint: "f1", Tokens: agent.Tokens{InputTokens: 50}, DurationSeconds: 240, Gate: "verify"},
		{RunID: "r1", Kind: KindRunEnd, Mode: "build", Iteration: 2, EndedAt: at(10), StopReason: "interrupted"},
		// r2: restarted after a crash; no run_end yet.
		{RunID: "r2", Mode: "build", Iteration: 1, IssueID: "bd-a", Attempt: 1, StartedAt: at(20), EndedAt: at(21), Outcome: OutcomeInterrupted, ExitCode: -1, DurationSeconds: 60},
		{RunID: "r2", Mode: "build", Iteration: 2, IssueID: "bd-b", Attempt: 3, StartedAt: at(22), EndedAt: at(30), Outcome: "ok", Fingerprint: "", CostUSD: cost(0.25), Tokens: agent.Tokens{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}, DurationSeconds: 480},
	}

	issues := SummarizeIssues(recs)
	is.Equal(len(issues), 2)
	is.Equal(issues[0].IssueID, "bd-a") // sorted
	is.Equal(issues[0].CostUSD, (*float64)(nil))
	b := issues[1]
	is.Equal(b.Iterations, 3)
	is.Equal(b.LastAttempt, 3)
	is.Equal(*b.CostUSD, 0.75)
	is.Equal(b.Tokens, agent.Tokens{InputTokens: 151, OutputTokens: 12, CacheReadTokens: 3, CacheWriteTokens: 4})
	is.Equal(b.DurationSeconds, 1020.0)
	is.Equal(b.Fingerprints, []string{"f1", "f1"})
	is.Equal(b.Outcomes, map[string]int{"agent_error": 2, "ok": 1})
	is.Equal(b.LastOutcome, "ok")
	is.Equal(b.LastGate, "")

	is.Equal(LastRunID(recs), "r2")
	r1 := SummarizeRun(recs, "r1")
	is.Equal(r1.Iterations, 2)
	is.True(r1.Ended)
	is.Equal(r1.StopReason, "interrupted")
	is.Equal(r1.StartedAt, at(0))
	is.Equal(r1.EndedAt, at(10))
	is.Equal(*r1.CostUSD, 0.5)
	is.Equal(r1.Issues, []string{"bd-b"})
	r2 := SummarizeRun(recs, "r2")
	is.Equal(r2.Iterations, 2)
	is.True(!r2.Ended)
	is.Equal(r2.Issues, []string{"bd-a", "bd-b"})
	is.Equal(r2.Outcomes, map[string]int{OutcomeInterrupted: 1, "ok": 1})

	all := SummarizeAll(recs)
	is.Equal(all.Runs, 2)
	is.Equal(all.Iterations, 4)
	is.Equal(*all.CostUSD, 0.75)
	is.Equal(all.DurationSeconds, 1080.0)

	is.Equal(SummarizeAll(nil).CostUSD, (*float64)(nil))
	is.Equal(LastRunID(nil), "")
}

func TestNewRunID(t *testing.T) {
	is := is.New(t)
	a, b := NewRunID(fixedNow()), NewRunID(fixedNow())
	is.True(a != b)
	is.True(strings.HasPrefix(a, "20260102T150405Z-"))
	is.Equal(len(a), len("20260102T150405Z-")+8)
	later := NewRunID(fixedNow().Add(time.Second))
	is.True(slices.IsSorted([]string{a[:16], later[:16]}))
}

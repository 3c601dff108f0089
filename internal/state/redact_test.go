package state

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/judge"
)

// With SetRedact, a secret in a command's output reaches none of the
// store's files: judgement, attempt record, history, report.
func TestSetRedactCoversEveryFile(t *testing.T) {
	is := is.New(t)
	s := openStore(t)
	secret := []byte("sk-ant-SECRET-123456")
	s.SetRedact(func(b []byte) []byte { return bytes.ReplaceAll(b, secret, []byte("[redacted]")) })

	n, err := s.IncrementAttempt("bd-1")
	is.NoErr(err)
	out := "ANTHROPIC_API_KEY=" + string(secret) + "\n"
	is.NoErr(s.RecordFailure("bd-1", Judgement{LastGate: "verify", LastError: out},
		judge.Attempt{Iteration: n, LastGate: "verify", ExitCode: 1, Outputs: []judge.Output{{Name: "verify", Text: out}}}))
	is.NoErr(s.AppendHistory(Record{RunID: "r", Iteration: 1, IssueID: "bd-1", Outcome: "failed", Violations: []string{out}}))
	_, err = s.WriteReport("r", []byte(`{"reason":"`+string(secret)+`"}`), []byte("- "+out))
	is.NoErr(err)

	seen := 0
	is.NoErr(filepath.WalkDir(s.Dir(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, secret) {
			t.Errorf("%s holds the secret", p)
		}
		if bytes.Contains(data, []byte("[redacted]")) {
			seen++
		}
		return nil
	}))
	is.True(seen >= 5) // judgement, record, history, report .json and .md
}

// A history record with a negative or impossible cost or token count (an
// edited file) is read without it, with a warning, so no sum goes down.
func TestReadHistoryDropsImpossibleFigures(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	is.NoErr(os.WriteFile(path, []byte(
		`{"v":1,"run_id":"r","mode":"build","iteration":1,"cost_usd":-100,"tokens":{"input":-5,"output":3,"cache_read":0,"cache_write":0}}`+"\n"+
			`{"v":1,"run_id":"r","mode":"build","iteration":2,"cost_usd":1e300}`+"\n"+
			`{"v":1,"run_id":"r","mode":"build","iteration":3,"cost_usd":0.9}`+"\n"), 0o600))
	recs, warns, err := ReadHistory(path)
	is.NoErr(err)
	is.Equal(len(recs), 3)
	is.True(recs[0].CostUSD == nil)
	is.Equal(recs[0].Tokens.InputTokens, int64(0))
	is.Equal(recs[0].Tokens.OutputTokens, int64(3))
	is.True(recs[1].CostUSD == nil)
	is.Equal(*recs[2].CostUSD, 0.9)
	is.Equal(len(warns), 1)
	is.True(strings.Contains(warns[0], "2 record(s)"))
	sum := SummarizeRun(recs, "r")
	is.Equal(*sum.CostUSD, 0.9)
}

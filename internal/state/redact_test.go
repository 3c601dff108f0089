package state

import (
	"bytes"
	"os"
	"path/filepath"
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

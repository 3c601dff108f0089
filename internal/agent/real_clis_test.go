package agent

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestRealCLIStreams parses streams captured from the real Codex 0.169.0,
// opencode 1.18.33 and Gemini CLI 0.61.0 under `ralphd build` against the
// scripted model API (cmd/ralphd TestE2ECLICloseWithEvidence): three Bash
// calls, the last closing the issue, then the completion promise. Where
// they differ from the docs: Codex puts a warning ("Model metadata ... not
// found") in an item of type error and still succeeds; opencode ends
// without a "done" line and writes cost 0 for an unpriced model; Gemini
// CLI's token stats include its model router's side request.
func TestRealCLIStreams(t *testing.T) {
	type realCase struct {
		file    string
		backend Backend
		input   int64
	}
	tests := []realCase{
		{"real-codex-0.169.0-scripted-api-tool-use.jsonl", Codex{Now: clock}, 400},
		{"real-opencode-1.18.33-scripted-api-tool-use.jsonl", Opencode{Now: clock}, 400},
		{"real-gemini-0.61.0-scripted-api-tool-use.jsonl", Gemini{Now: clock}, 500},
	}
	// Every captured stream of these CLIs has a row.
	for _, glob := range []string{"real-codex-*.jsonl", "real-opencode-*.jsonl", "real-gemini-*.jsonl"} {
		files, _ := filepath.Glob(filepath.Join("testdata", glob))
		for _, f := range files {
			if !slices.ContainsFunc(tests, func(tt realCase) bool { return tt.file == filepath.Base(f) }) {
				t.Errorf("captured stream %s has no expected outcome", f)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			f, err := os.Open(filepath.Join("testdata", tt.file))
			is.NoErr(err)
			defer f.Close()
			p := tt.backend.NewParser()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				p.Line(sc.Bytes())
			}
			is.NoErr(sc.Err())
			o := p.Finish(0, "")
			is.Equal(o.Status, StatusOK)
			is.Equal(o.ToolCalls, 3)
			is.Equal(len(o.Commands), 3)
			is.True(o.CostUSD == nil) // no price reported: absent, not $0
			is.Equal(o.Usage.InputTokens, tt.input)
			is.True(o.Usage.OutputTokens > 0)
			is.True(strings.Contains(o.ResultText, "<promise>COMPLETE</promise>"))
		})
	}
}

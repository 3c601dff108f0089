package main

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/testkit/scriptedapi"
)

func TestResumeCount(t *testing.T) {
	is := is.New(t)
	reqs := []scriptedapi.Request{
		{Kind: scriptedapi.KindAgent, Script: "interrupted", InputTokens: 10},
		{Kind: scriptedapi.KindSide, Script: "interrupted", InputTokens: 1000}, // side requests are left out
		{Kind: scriptedapi.KindAgent, Script: "restarted", InputTokens: 7},
		{Kind: scriptedapi.KindAgent, Script: "interrupted", InputTokens: 32},
	}
	is.Equal(count(reqs, "interrupted"), attemptTokens{Requests: 2, Input: 42})
	is.Equal(count(reqs, "restarted"), attemptTokens{Requests: 1, Input: 7})
	is.Equal(count(reqs, "none"), attemptTokens{})
}

func TestResumeSection(t *testing.T) {
	tests := []struct {
		name    string
		rs      []resumeResult
		value   string
		verdict bench.Verdict
	}{
		{"saves", []resumeResult{{CLI: "claude", Resumed: attemptTokens{2, 450}, Fresh: attemptTokens{5, 1000}}},
			"0.45 (450 ÷ 1000 tokens; 2 ÷ 5 requests)", bench.Met},
		{"costs more", []resumeResult{{CLI: "codex", Resumed: attemptTokens{2, 1500}, Fresh: attemptTokens{5, 1000}}},
			"1.50 (1500 ÷ 1000 tokens; 2 ÷ 5 requests)", bench.Missed},
		{"skipped", []resumeResult{{CLI: "codex", Skipped: "codex is not installed (run scripts/install-agents codex)"}},
			"skipped: codex is not installed (run scripts/install-agents codex)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			s := resumeSection(tt.rs, "scripts/bench --only resume")
			is.Equal(len(s.Figures), 1)
			is.Equal(s.Figures[0].ID, "9a")
			is.Equal(s.Figures[0].Value, tt.value)
			is.Equal(s.Figures[0].Verdict, tt.verdict)
			is.True(strings.Contains(s.Figures[0].Name, tt.rs[0].CLI))
			is.Equal(strings.Contains(s.Body, "No CLI was measured"), tt.rs[0].Skipped != "")
		})
	}
}

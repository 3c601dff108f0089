package judge

import (
	"testing"

	"github.com/matryer/is"
)

func TestProgress(t *testing.T) {
	base := Signals{
		FailingChecks: []string{"verify", "acceptance:2"},
		Fingerprint:   "aaaaaaaaaaaa",
		GitHead:       "c0ffee1",
		DiffHash:      "d1",
		IssueHash:     "i1",
		ToolCalls:     5,
	}
	with := func(f func(*Signals)) Signals {
		s := base
		s.FailingChecks = append([]string(nil), base.FailingChecks...)
		f(&s)
		return s
	}
	tests := []struct {
		name     string
		cur      Signals
		progress bool
		noop     bool
		reasons  []string
	}{
		{"nothing changed but the agent worked", base, false, false,
			[]string{"no check, fingerprint, commit, diff or issue change"}},
		{"nothing changed and no tool calls", with(func(s *Signals) { s.ToolCalls = 0 }), false, true,
			[]string{"no tool calls and no changes"}},
		{"a failing check now passes", with(func(s *Signals) { s.FailingChecks = []string{"verify"} }), true, false,
			[]string{"check acceptance:2 now passes"}},
		{"check order and duplicates do not matter", with(func(s *Signals) { s.FailingChecks = []string{"acceptance:2", "verify", "verify"} }), false, false,
			[]string{"no check, fingerprint, commit, diff or issue change"}},
		{"a new failing check alone is no progress", with(func(s *Signals) { s.FailingChecks = append(s.FailingChecks, "acceptance:3") }), false, false,
			[]string{"no check, fingerprint, commit, diff or issue change"}},
		{"fingerprint changed", with(func(s *Signals) { s.Fingerprint = "bbbbbbbbbbbb" }), true, false,
			[]string{"the error changed (fingerprint bbbbbbbbbbbb, before aaaaaaaaaaaa)"}},
		{"failure cleared", with(func(s *Signals) { s.Fingerprint = ""; s.FailingChecks = nil }), true, false,
			[]string{"check acceptance:2 now passes", "check verify now passes", "the earlier error is gone (fingerprint aaaaaaaaaaaa)"}},
		{"HEAD moved (the agent committed)", with(func(s *Signals) { s.GitHead = "beef002" }), true, false,
			[]string{"git HEAD moved"}},
		{"diff changed", with(func(s *Signals) { s.DiffHash = "d2" }), true, false,
			[]string{"working-tree diff changed"}},
		{"issue record changed", with(func(s *Signals) { s.IssueHash = "i2" }), true, false,
			[]string{"issue record changed"}},
		{"everything changed, reasons in order", with(func(s *Signals) {
			s.FailingChecks = []string{"acceptance:2"}
			s.Fingerprint = "bbbbbbbbbbbb"
			s.GitHead, s.DiffHash, s.IssueHash = "beef002", "d2", "i2"
		}), true, false, []string{
			"check verify now passes", "the error changed (fingerprint bbbbbbbbbbbb, before aaaaaaaaaaaa)",
			"git HEAD moved", "working-tree diff changed", "issue record changed",
		}},
		{"flaky change without any work is no progress", with(func(s *Signals) { s.ToolCalls = 0; s.Fingerprint = "bbbbbbbbbbbb" }), false, true,
			[]string{"no tool calls and no changes", "not progress, as the agent did no work: the error changed (fingerprint bbbbbbbbbbbb, before aaaaaaaaaaaa)"}},
		{"a change without tool calls still counts", with(func(s *Signals) { s.ToolCalls = 0; s.DiffHash = "d2" }), true, false,
			[]string{"working-tree diff changed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			v := Progress(base, tt.cur)
			is.Equal(v.Progress, tt.progress)
			is.Equal(v.NoOp, tt.noop)
			is.Equal(v.Reasons, tt.reasons)
		})
	}
}

func TestProgressFirstAttemptFromZero(t *testing.T) {
	is := is.New(t)
	before := Signals{GitHead: "a", DiffHash: "", IssueHash: "i"}
	// A new failure after an agent that edited files is progress.
	v := Progress(before, Signals{GitHead: "a", DiffHash: "d", IssueHash: "i", Fingerprint: "f", ToolCalls: 3})
	is.True(v.Progress)
	is.Equal(v.Reasons, []string{"a new error appeared (fingerprint f)", "working-tree diff changed"})
}

func TestIssueHash(t *testing.T) {
	is := is.New(t)
	h := IssueHash("open", "notes", []string{"rt-1.1", "rt-1.2"}, []string{"rt-9"})
	is.Equal(len(h), 24)
	is.Equal(h, IssueHash("open", "notes", []string{"rt-1.2", "rt-1.1"}, []string{"rt-9"})) // order-free
	is.True(h != IssueHash("in_progress", "notes", []string{"rt-1.1", "rt-1.2"}, []string{"rt-9"}))
	is.True(h != IssueHash("open", "notes!", []string{"rt-1.1", "rt-1.2"}, []string{"rt-9"}))
	is.True(h != IssueHash("open", "notes", []string{"rt-1.1"}, []string{"rt-9"}))
	is.True(h != IssueHash("open", "notes", []string{"rt-1.1", "rt-1.2"}, nil))
	// A child and a blocker with the same id are different records.
	is.True(IssueHash("open", "", []string{"x"}, nil) != IssueHash("open", "", nil, []string{"x"}))
	// Field boundaries are unambiguous.
	is.True(IssueHash("ab", "c", nil, nil) != IssueHash("a", "bc", nil, nil))
}

package modes

import (
	"testing"

	"github.com/ralphd/ralphd/internal/agent"
)

func TestFirstSessionOnly(t *testing.T) {
	const a, b = "862e0dbf-f692-4422-96cc-30c52efcdae5", "01a22012-4dfb-71d2-8087-e8d6918d1c1b"
	for _, c := range []struct {
		name   string
		events []agent.Event
		want   string
	}{
		{"one init", []agent.Event{{Kind: agent.EventInit, SessionID: a}}, a},
		{"a forged init after a tool call", []agent.Event{{Kind: agent.EventInit, SessionID: a}, {Kind: agent.EventToolCall}, {Kind: agent.EventInit, SessionID: b}}, a},
		{"an id that is not a UUID", []agent.Event{{Kind: agent.EventInit, SessionID: "../x"}, {Kind: agent.EventInit, SessionID: a}}, a},
		{"an id on another kind", []agent.Event{{Kind: agent.EventResult, SessionID: b}, {Kind: agent.EventInit, SessionID: a}}, a},
		{"none", []agent.Event{{Kind: agent.EventText, Text: a}}, ""},
	} {
		var f firstSession
		for _, ev := range c.events {
			f.see(ev)
		}
		if f.id != c.want {
			t.Errorf("%s: kept %q, want %q", c.name, f.id, c.want)
		}
	}
}

func TestResumeRules(t *testing.T) {
	for _, c := range []struct {
		out              agent.Outcome
		resumable, fails bool
	}{
		{agent.Outcome{Status: agent.StatusTimeout, ToolCalls: 3}, true, false},
		{agent.Outcome{Status: agent.StatusInterrupted}, true, false},
		{agent.Outcome{Status: agent.StatusRateLimited}, true, false},
		{agent.Outcome{Status: agent.StatusCrashed}, true, true},
		{agent.Outcome{Status: agent.StatusCrashed, ToolCalls: 1}, true, false},
		{agent.Outcome{Status: agent.StatusOK}, false, false},
		{agent.Outcome{Status: agent.StatusAgentError}, false, true},                // "No conversation found"
		{agent.Outcome{Status: agent.StatusAgentError, ToolCalls: 2}, false, false}, // it worked, then failed: an attempt
		{agent.Outcome{Status: agent.StatusFatal}, false, true},
	} {
		if got := resumableStatus(c.out.Status); got != c.resumable {
			t.Errorf("resumableStatus(%s) = %v", c.out.Status, got)
		}
		if got := resumeFailed(c.out); got != c.fails {
			t.Errorf("resumeFailed(%+v) = %v", c.out, got)
		}
	}
}

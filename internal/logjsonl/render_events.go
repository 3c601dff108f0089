package logjsonl

import (
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
)

// This file shows an agent's lines: the backend that ran reads each line
// into agent.Events (it words what its CLI said), and the renderer lays
// the events of every CLI out alike: the marks, colours, indentation,
// what verbose mode adds and how long texts are cut.

// agentLine shows one line of the agent's stream (b, of total bytes), as
// its backend reads it, or as it is when no backend does.
func (rd *renderer) agentLine(b []byte, total int) {
	evs, ok := rd.parse(b)
	if !ok {
		rd.raw(b, total)
		return
	}
	for _, ev := range evs {
		rd.event(ev, b, total)
	}
}

// parse reads an agent line with the parser of the backend that ran: the
// one run_start names, else the one whose stream the first line the
// renderer could read was, or, for a line that one does not read, the
// first backend whose stream it is. ok is false when no backend reads the
// line.
func (rd *renderer) parse(line []byte) (evs []agent.Event, ok bool) {
	st := rd.agentState
	if st.parser == nil {
		if p, known := agent.NewLogParser(rd.agent); known {
			st.parser, st.detected = p, ""
		} else if p, known := agent.NewLogParser(st.detected); known {
			st.parser = p
		}
	}
	if st.parser != nil {
		if evs, ok := st.parser.Log(line); ok || st.detected == "" {
			return evs, ok
		}
	}
	// A log that names no backend ralphd knows (a bare stream, an old or
	// a bash loop's log): try each in the registry's order.
	if rd.backends == nil {
		rd.backends = agent.Names()
	}
	names := rd.backends
	if st.guesses == nil {
		st.guesses = make([]agent.LogParser, len(names))
	}
	for i, name := range names {
		if name == st.detected {
			continue
		}
		if st.guesses[i] == nil {
			st.guesses[i], _ = agent.NewLogParser(name)
		}
		if evs, ok := st.guesses[i].Log(line); ok {
			if st.parser == nil {
				st.parser, st.detected = st.guesses[i], name
			}
			return evs, true
		}
	}
	return nil, false
}

// event shows one event of the agent line b (of total bytes).
func (rd *renderer) event(ev agent.Event, b []byte, total int) {
	if ev.Verbose && !rd.opts.Verbose {
		return
	}
	switch ev.Kind {
	case agent.EventInit:
		if ev.Text == "" {
			return
		}
		s := "  · " + ev.Text
		if rd.opts.Verbose && ev.Detail != "" {
			s += " · " + ev.Detail
		}
		rd.println(dim, oneLine(s))
	case agent.EventText:
		rd.block(plain, "  ", ev.Text)
	case agent.EventThinking:
		if rd.opts.Verbose {
			rd.block(dim, "  (thinking) ", ev.Text)
		}
	case agent.EventPrompt:
		if rd.opts.Verbose {
			rd.block(dim, "  > ", ev.Text)
		}
	case agent.EventToolCall:
		if ev.Shell || ev.Command != "" {
			rd.println(cyan, "  $ "+oneLine(ev.Command))
			return
		}
		s := "  ▸ " + ev.Tool
		if ev.Input != "" {
			s += " " + rd.cut(ev.Input, len(ev.Input))
		}
		rd.println(cyan, oneLine(s))
	case agent.EventToolResult:
		rd.toolResult(ev)
	case agent.EventError:
		st := yellow
		if ev.IsError {
			st = red
		}
		rd.println(st, oneLine("  ! "+ev.Text))
	case agent.EventRateLimit:
		s := "  ⏳ rate limit: " + ev.Text
		if !ev.ResetAt.IsZero() {
			s += ", resets " + ev.ResetAt.In(rd.loc).Format(time.DateTime)
		}
		rd.println(yellow, oneLine(s))
	case agent.EventUsage, agent.EventNote:
		st := dim
		if ev.IsError {
			st = red
		}
		rd.println(st, oneLine("  · "+ev.Text))
	case agent.EventResult:
		rd.resultEvent(ev)
	case agent.EventRaw:
		rd.raw(b, total)
	}
}

// toolResult shows how a tool call ended: a refusal or a failure always,
// with the error message or the first line of the output; a success only
// in verbose mode.
func (rd *renderer) toolResult(ev agent.Event) {
	shown := ev.Error
	if shown == "" {
		shown, _, _ = strings.Cut(strings.TrimSpace(ev.Text), "\n")
		shown = rd.cut(shown, len(shown))
	}
	switch {
	case ev.Denied:
		rd.println(redBold, oneLine("  ⛔ denied: "+shown))
	case ev.IsError:
		s := "  ✗ "
		if ev.Label != "" {
			s += ev.Label + ": "
		}
		if ev.ExitCode != nil && *ev.ExitCode != 0 {
			s += "exit " + strconv.Itoa(*ev.ExitCode) + ": "
		}
		rd.println(red, oneLine(s+shown))
	case rd.opts.Verbose:
		rd.println(dim, oneLine("    → "+shown))
	}
}

// resultEvent keeps the agent's result for the end of the iteration, and
// shows at once why it failed, when the backend words it.
func (rd *renderer) resultEvent(ev agent.Event) {
	rd.result = &agentResult{
		turns:      int64(ev.Turns),
		cost:       ev.CostUSD,
		durationMS: ev.Duration.Milliseconds(),
		isError:    ev.IsError,
	}
	if !ev.IsError || (ev.Label == "" && ev.Text == "") {
		return
	}
	s := "  ✗ " + ev.Label
	if ev.Text != "" {
		if ev.Label != "" {
			s += ": "
		}
		s += rd.cut(ev.Text, len(ev.Text))
	}
	rd.println(red, oneLine(s))
}

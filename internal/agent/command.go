package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Command is the generic backend: a user-given command line (--agent-cmd)
// run with `sh -c`. The prompt goes on its stdin, and RALPH_MODE,
// RALPH_ISSUE_ID, RALPH_ITERATION and RALPH_ATTEMPT describe the
// iteration in its environment, with RALPH_MODEL when a model was asked
// for.
//
// Stdout lines that are Claude stream-json are parsed as such, so a
// scripted agent can report a result, cost, commands and rate limits. When
// they include a result line (or a provider error), the stream decides the
// Outcome exactly as for Claude; otherwise the exit code does: 0 is
// StatusOK, anything else StatusAgentError, and 127 or 126 with "not
// found" or "permission denied" on stderr is StatusFatal (the command
// itself is missing). Without a stream result, the final result text is
// the last non-empty plain stdout line.
type Command struct {
	// Line is the shell command line.
	Line string
	// Now is the clock used for reset times; time.Now when nil.
	Now func() time.Time
}

// Name returns "command".
func (c Command) Name() string { return "command" }

// Binary returns "sh", which runs the command line.
func (c Command) Binary() string { return "sh" }

// InstallHint says what a missing sh means.
func (c Command) InstallHint() string {
	return "the command backend runs --agent-cmd with `sh -c`; install a POSIX shell"
}

// Verified says the command backend runs anything: there is no CLI to pin.
func (c Command) Verified() Verification {
	return Verification{Why: "any command; its output is read as Claude Code's stream-json"}
}

// Hosts returns nothing: what the command talks to is its own business.
func (c Command) Hosts(func(string) string) []string { return nil }

// Credentials cannot be checked for an arbitrary command.
func (c Command) Credentials(Home) Credentials { return Credentials{} }

// Writable returns nothing beyond the shared cache Writable adds.
func (c Command) Writable(Home) (dirs, files []string) { return nil, nil }

// Guarded returns nothing: the command is not known, and has no dirs.
func (c Command) Guarded(Home) Guarded { return Guarded{} }

// ScrubEnv returns nothing: the command is not known.
func (c Command) ScrubEnv() []string { return nil }

// errNoCommandLine is returned when the command backend has no command line.
var errNoCommandLine = errors.New("the command agent needs a command line: pass --agent-cmd '<command line>'")

// Command returns `sh -c <Line>` with the prompt on stdin.
func (c Command) Command(inv Invocation) (Spec, error) {
	if strings.TrimSpace(c.Line) == "" {
		return Spec{}, errNoCommandLine
	}
	env := ralphEnv(inv)
	if inv.Model != "" {
		// The model of an agents entry such as command:fast: a command
		// line listed twice tells its runs apart by it.
		env = append(env, "RALPH_MODEL="+inv.Model)
	}
	return Spec{Argv: []string{"sh", "-c", c.Line}, Env: env, Stdin: inv.Prompt}, nil
}

// NewParser returns a parser that understands Claude stream-json lines and
// falls back to the exit code.
func (c Command) NewParser() Parser {
	return &commandParser{claude: newClaudeParser(c.Now, 0)}
}

// commandParser is the command backend's parser.
type commandParser struct {
	claude   *claudeParser
	lastText string // last non-empty plain (non-stream) stdout line
}

// Line passes stream-json lines to the Claude parser and turns every other
// non-empty line into a text event.
func (p *commandParser) Line(line []byte) []Event {
	if evs, ok := p.claude.line(line); ok {
		return evs
	}
	t := strings.TrimSpace(string(line))
	if t == "" {
		return nil
	}
	p.lastText = t
	return []Event{{Kind: EventText, Text: t}}
}

// startFailed reports whether the shell said the agent command itself
// cannot run: not found or not executable (127 or 126, as sh says it), a
// script given to sh that it cannot open (dash: "sh: 0: cannot open
// FILE: No such file", exit 2), or a command or script missing as bash
// says it ("bash: FILE: No such file or directory", exit 127). The last
// two are matched on stderr's last line, where the shell's own complaint
// is when nothing ran.
func startFailed(exitCode int, stderrTail string) bool {
	low, last := strings.ToLower(stderrTail), strings.ToLower(lastLine(stderrTail))
	switch exitCode {
	case 127:
		return strings.Contains(low, "not found") || strings.HasSuffix(last, ": no such file or directory")
	case 126:
		return strings.Contains(low, "permission denied") || strings.Contains(low, "cannot execute")
	case 2:
		return strings.Contains(last, ": 0: cannot open ") || strings.Contains(last, ": 0: can't open ")
	}
	return false
}

// Finish classifies the run: a missing command is fatal, then the stream
// decides if it can, then the exit code.
func (p *commandParser) Finish(exitCode int, stderrTail string) Outcome {
	out := p.claude.outcome(exitCode)
	if !p.claude.haveResult {
		out.ResultText = p.lastText
	}
	if startFailed(exitCode, stderrTail) {
		out.Status = StatusFatal
		out.Reason = fmt.Sprintf("agent command failed to start (exit code %d): %s; check --agent-cmd", exitCode, lastLine(stderrTail))
		return out
	}
	// The stream decides only with a result or a provider error; stderr
	// text of an arbitrary command is not searched.
	if v, ok := p.claude.verdict(""); ok {
		v.apply(&out)
		return out
	}
	switch {
	case exitCode == 0:
		out.Status, out.Reason = StatusOK, "exit code 0"
	case exitCode < 0:
		out.Status, out.Reason = StatusCrashed, "the agent command was killed by a signal"
	default:
		out.Status = StatusAgentError
		out.Reason = fmt.Sprintf("the agent command exited with code %d", exitCode)
		if last := lastLine(stderrTail); last != "" {
			out.Reason += ": " + last
		}
	}
	return out
}

// NewLogParser returns a parser of the command's stream-json lines for
// the run log; any other line is shown as it is.
func (c Command) NewLogParser() LogParser { return &claudeLog{} }

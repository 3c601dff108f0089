// Package agent runs one coding-agent process per iteration and turns its
// output stream into events and a final Outcome.
//
// A Backend knows how to start one agent CLI (argv, env, stdin) and how to
// parse what it prints. Adding an agent means adding one Backend in this
// package and one line in the registry (see Lookup); nothing else in ralphd
// changes. Run starts a Backend's process in its own process group, feeds
// its output to the Backend's Parser and makes sure no process of the
// agent's tree outlives the run.
package agent

import (
	"time"
)

// Status classifies how an iteration's agent run ended.
type Status string

// Outcome statuses. Only StatusOK and StatusAgentError are attempts at the
// work; the others are about the provider, the setup or the process.
const (
	StatusOK          Status = "ok"           // the agent finished its turn without error
	StatusAgentError  Status = "agent_error"  // the agent ran but reported failure (max turns, tool errors, exit != 0)
	StatusRateLimited Status = "rate_limited" // provider quota or rate limit; not an attempt
	StatusFatal       Status = "fatal_config" // agent unusable: not installed, not logged in, invalid key
	StatusTimeout     Status = "timeout"      // ralphd killed it at the iteration timeout
	StatusCrashed     Status = "crashed"      // the process died with no final result
	StatusInterrupted Status = "interrupted"  // ralphd was asked to stop (signal) mid-iteration
)

// EventKind is the kind of a normalised stream event.
type EventKind string

// Event kinds shared by all backends.
const (
	EventInit       EventKind = "init"
	EventText       EventKind = "text"
	EventToolCall   EventKind = "tool_call"
	EventToolResult EventKind = "tool_result"
	EventRateLimit  EventKind = "rate_limit"
	EventError      EventKind = "error"
	EventResult     EventKind = "result"
)

// Event kinds only a LogParser reports: what a person reading the run log
// sees and the loop has no use for.
const (
	EventThinking EventKind = "thinking" // the model's reasoning, in Text
	EventPrompt   EventKind = "prompt"   // input the CLI echoes back (the prompt, a user message), in Text
	EventUsage    EventKind = "usage"    // a turn or step finished: Tokens and CostUSD as the CLI counts them, worded in Text
	EventNote     EventKind = "note"     // anything else the stream said worth a line, worded in Text
	EventRaw      EventKind = "raw"      // the line is best shown as it is
)

// Event is one normalised event parsed from an agent's output line.
//
// A Parser fills the first eight fields, for the loop. A LogParser fills
// the others too, for `ralphd logs`: the backend words what its CLI said
// (Text, Label, Detail), and the run log's renderer lays every CLI's
// events out alike.
type Event struct {
	Kind      EventKind
	SessionID string
	Text      string // assistant text, tool output, or error message
	Tool      string // tool name for tool calls ("Bash", "command_execution", ...)
	ToolID    string
	Command   string // the shell command of a shell tool call
	IsError   bool
	ResetAt   time.Time // for EventRateLimit, when known

	// Verbose marks an event the log shows only when asked for
	// everything (a rate limit that still allows, a note).
	Verbose bool
	// Detail is more of the event, shown only in verbose mode: the
	// session id of an EventInit.
	Detail string
	// Label heads the text of its line: the kind of failure of an
	// EventResult ("agent error [error_max_turns]"), or the name of the
	// tool whose EventToolResult failed.
	Label string
	// Shell marks an EventToolCall that runs Command in a shell, even
	// when the command is empty.
	Shell bool
	// Input is the main argument of an EventToolCall that is not a shell
	// command: a path, a pattern, a URL, or its whole JSON input.
	Input string
	// ExitCode is the exit code of the shell command of an
	// EventToolResult, when the CLI reports it.
	ExitCode *int
	// Error is the error message of a failed EventToolResult, which the
	// log shows whole (of Text, the tool's output, it shows the first
	// line).
	Error string
	// Denied marks an EventToolResult refused by a permission rule or by
	// ralphd's policy.
	Denied bool
	// Tokens and CostUSD are what an EventUsage or EventResult reports,
	// as the CLI counts them (Outcome.Usage is what ralphd counts).
	Tokens  *Tokens
	CostUSD *float64
	// Turns and Duration are the run's turns and duration an EventResult
	// reports, when the CLI reports them.
	Turns    int
	Duration time.Duration
}

// Usage is what a backend reports of a run's tokens: usage.Tokens, the
// one token count ralphd keeps.
type Usage = Tokens

// Outcome is the result of one agent run.
type Outcome struct {
	Status     Status
	Reason     string    // a short human explanation, for logs and notes
	ResultText string    // the agent's final result text (completion promises are matched here only)
	CostUSD    *float64  // nil when the backend reports no cost; never invented
	Usage      Usage     // tokens, when reported
	Turns      int       // agent turns, when reported
	SessionID  string    // the agent's session id, when reported
	ResetAt    time.Time // for StatusRateLimited: when the quota resets, if the agent said
	// ResetRounded marks a ResetAt read from text that gives the time only
	// to the minute ("resets 3pm"), which needs a minute of slack (see
	// QuotaWait). False when the agent gave the instant exactly.
	ResetRounded bool
	Commands     []string // shell commands the agent asked to run, in order, for the policy audit
	ToolCalls    int      // number of tool calls seen
	ExitCode     int      // the process exit code (-1 when killed by a signal)
	// Denials are the tool calls the agent's own permission system refused
	// (Claude's result.permission_denials). A refused command also appears
	// in Commands, because the agent asked for it.
	Denials []Denial
	// Transient marks a StatusRateLimited outcome caused by a server-side
	// error (HTTP 5xx, 529 overloaded) rather than a quota: ResetAt is then
	// only a short backoff, not a reset time the provider announced.
	Transient bool
	// Rejected lists the figures the agent reported that no run can have
	// produced (a negative or non-finite cost or token count), which Run
	// dropped: the cost is then nil and the counts 0. Reason says so too.
	Rejected []string
	// Recoverable marks a StatusFatal outcome that a person can clear
	// without touching ralphd's setup: an agent that is logged out (log it
	// back in) or out of credit (top it up). The daemon waits these out;
	// every other StatusFatal (a missing or mistyped agent command, a
	// rejected model or command line) is a setup error that ends it.
	Recoverable bool
	// OutputTail is the end of what the agent said and did, as text: its
	// messages, the commands it ran and their results, the final result
	// (at most OutputTailBytes, from the normalised events, so a
	// stream-json agent reads as text). Attempt records keep it: it is
	// what the next attempt most needs to see.
	OutputTail string
}

// OutputTailBytes bounds Outcome.OutputTail.
const OutputTailBytes = 8 << 10

// Denial is one tool call the agent's permission system refused.
type Denial struct {
	Tool    string `json:"tool"`
	ToolID  string `json:"tool_id,omitempty"`
	Command string `json:"command,omitempty"` // the shell command, for shell tools
}

// Parser turns one agent's output lines into events. It is stateful: one
// Parser per run. Line must tolerate any input (non-JSON, unknown types,
// truncated lines) without panicking.
type Parser interface {
	// Line parses one stdout line (without its newline).
	Line(line []byte) []Event
	// Finish returns the Outcome once the process has exited. exitCode is -1
	// when the process was killed; stderrTail is the last part of stderr.
	Finish(exitCode int, stderrTail string) Outcome
}

// Invocation is what ralphd asks of one agent run.
type Invocation struct {
	Mode      string // "build" or "plan"
	IssueID   string // empty in plan mode
	Iteration int
	Attempt   int
	Prompt    string // sent on stdin
	Dir       string // the project directory (the agent's cwd)
	Model     string // optional model override
	// ScratchDir is a private per-iteration directory where a backend may
	// write files it needs (settings, policy files).
	ScratchDir string
	// DenyBash are the shell command prefixes the policy forbids in this
	// mode ("bd delete", "bd dep remove", ...), for backends that can
	// compile them into the agent's own permission system.
	DenyBash []string
	// DenyWhy holds, for some DenyBash prefixes, the message the agent's
	// permission system shows when it refuses one (the forge verbs ralphd
	// refuses in every mode); the others get the separation of powers'.
	DenyWhy map[string]string
	// HookArgv, when set, is the command that checks one Bash tool call
	// against the policy (ralphd's `hook pre-tool-use`), for backends with
	// a pre-tool hook.
	HookArgv []string
	// MaxBudgetUSD, when > 0, is passed to agents that support a per-run
	// spending cap.
	MaxBudgetUSD float64
	// Sandboxed says the agent runs inside ralphd's bwrap sandbox. A CLI
	// with a sandbox of its own (Codex) then turns it off: sandboxes do
	// not nest where user namespaces cannot (as root), and ralphd's keeps
	// the agent to the work tree as the CLI's would.
	Sandboxed bool
	// Home is the home dir and environment the agent runs with, where a
	// Resumer finds and puts back its sessions.
	Home Home
	// Resume, when set, is a session ralphd saved, for a Resumer to put
	// back and resume with Prompt as the next message instead of
	// starting a fresh session.
	Resume *Session
}

// Spec is how to start the agent process.
type Spec struct {
	Argv  []string
	Env   []string // added to the (scrubbed) environment
	Stdin string
}

// Program is what Run needs to run an agent process: how to start it and
// how to read what it prints. Every Backend is a Program; so is anything
// else ralphd runs the same way (its checks).
type Program interface {
	// Name is the program's name, as given to --agent for a backend.
	Name() string
	// Binary is the executable the program needs on PATH, if any.
	Binary() string
	// Command builds the process spec for one run. It may write files into
	// inv.ScratchDir.
	Command(inv Invocation) (Spec, error)
	// NewParser returns a fresh parser for one run's output.
	NewParser() Parser
}

// Backend is one agent CLI: how to run it (Program), and everything else
// ralphd must know of that CLI. Each backend answers all of it in its own
// file, so the rest of ralphd (doctor, the sandbox, the egress proxy,
// `ralphd agents`) asks the backend instead of knowing CLIs by name.
type Backend interface {
	Program
	// Verified is what the end-to-end suite proves about the backend: the
	// CLI version pinned and run for real, or why there is none.
	Verified() Verification
	// Hosts are the model API hosts the CLI talks to ("api.anthropic.com"),
	// as host or host:port, each replaced by the host of the CLI's
	// base-URL variable (ANTHROPIC_BASE_URL, ...) when getenv sets it.
	// Empty when ralphd cannot know them (the command backend).
	Hosts(getenv func(string) string) []string
	// Credentials says where the CLI's credentials are, judged from h's
	// files and environment without going online.
	Credentials(h Home) Credentials
	// Writable lists the dirs and the files outside them under h (the
	// home and XDG dirs) that the CLI writes to, which the sandbox leaves
	// writable. Paths that cannot be known (no home) are "".
	Writable(h Home) (dirs, files []string)
	// Guarded lists what of those dirs configures the CLI itself, which
	// a BUILD agent may not change (see Guarded).
	Guarded(h Home) Guarded
	// ScrubEnv lists the variables the CLI sets for the commands it runs
	// (CLAUDECODE, ...), which must never reach an agent ralphd starts:
	// Run removes every backend's from every agent's environment.
	ScrubEnv() []string
}

// InstallHinter is implemented by backends that can tell a user how to
// install their binary. Run puts the hint in the StatusFatal reason when
// the binary is missing.
type InstallHinter interface {
	InstallHint() string
}

package logjsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
)

// SchemaVersion is the version of the event schema described in this file.
// It is written as "schema_version" in the data of every run_start event.
// Adding an event or an optional field keeps the version; renaming or
// removing a field, or changing its meaning, bumps it.
const SchemaVersion = 1

// Record types: the value of the top-level "type" key of the lines ralphd
// itself writes.
const (
	// TypeMeta marks ralphd's own events.
	TypeMeta = "loop_meta"
	// TypeAgentOutput marks a wrapped agent line (not JSON, or from stderr,
	// or a chunk of an over-long line).
	TypeAgentOutput = "agent_output"
)

// Stream names for [Writer.AgentLine] and [Writer.CopyLines]. Only lines of
// StreamStdout are ever passed through verbatim.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// Event names, the "event" key of loop_meta records. The first three and
// the quota events continue the bash loop's vocabulary (which called the
// quota events quota_sleep_start/quota_sleep_end).
const (
	EventRunStart       = "run_start"        // data: RunStart
	EventIterationStart = "iteration_start"  // data: IterationStart
	EventIterationEnd   = "iteration_end"    // data: IterationEnd
	EventStuck          = "stuck"            // data: Stuck
	EventBDCall         = "bd_call"          // data: state.BDCall, written by the guard process
	EventViolation      = "violation"        // data: Violation
	EventCreated        = "created"          // data: Created
	EventQuotaWaitStart = "quota_wait_start" // data: QuotaWaitStart
	EventQuotaWaitEnd   = "quota_wait_end"   // data: QuotaWaitEnd
	EventPlanChanges    = "plan_changes"     // data: free form (what a PLANNING iteration changed in the graph)
	EventSweep          = "sweep"            // data: free form (a housekeeping pass over the issues)
	EventDecision       = "decision"         // data: Decision
	EventRunEnd         = "run_end"          // data: RunEnd
	EventWorker         = "worker"           // data: WorkerStep
	EventNetworkRefused = "network_refused"  // data: NetworkRefused
)

// NetworkRefused is the data of a network_refused event: the network proxy
// of a sandboxed BUILD agent refused a connection to a host that is not on
// its allowlist (the backend's model API hosts and network_allow). It is
// written once per host per iteration, however often the agent tried.
type NetworkRefused struct {
	Iteration int    `json:"iteration,omitempty"`
	IssueID   string `json:"issue_id,omitempty"`
	Host      string `json:"host"` // host:port, as the agent asked for it
}

// WorkerStep is the data of a worker event: one step of one of several
// BUILD workers (claimed, lost, skipped, integrated, failed, stuck,
// recovered, idle-exit). Every other event a worker's iteration writes
// carries a "worker" key too.
type WorkerStep struct {
	Worker  string `json:"worker"`
	IssueID string `json:"issue_id,omitempty"`
	Kind    string `json:"kind"`
	Detail  string `json:"detail,omitempty"`
	// PullRequest is set on a step of kind "pull-request": a pull request
	// of integrate = pr that was opened or changed state.
	PullRequest *PullRequest `json:"pull_request,omitempty"`
}

// PullRequest is a pull request the workers wait on, in a worker event.
type PullRequest struct {
	Number int    `json:"number,omitempty"` // 0 until the forge opened it
	URL    string `json:"url,omitempty"`
	Branch string `json:"branch"`
	// State: opening, waiting for review, checks failing, changes
	// requested, merged, closed.
	State string `json:"state"`
}

// RunStart is the data of a run_start event. SchemaVersion must be set to
// [SchemaVersion].
type RunStart struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id,omitempty"` // the run's ID, as in its log's name, report and history
	Mode          string `json:"mode"`             // "build" or "plan"
	MaxIterations int    `json:"max_iterations"`   // 0 means no limit
	Version       string `json:"ralphd_version"`
	ProjectID     string `json:"project_id"`
	Agent         string `json:"agent"`
	Model         string `json:"model,omitempty"`
	// Agents is the list of agents the run falls back on, in order, when
	// there is more than one ("claude", "codex:gpt-5"); Agent and Model
	// are then the first's.
	Agents      []string `json:"agents,omitempty"`
	ProjectDir  string   `json:"project_dir,omitempty"`
	Scope       string   `json:"scope,omitempty"` // the epic a BUILD run is limited to
	MaxAttempts int      `json:"max_attempts,omitempty"`
	PID         int      `json:"pid,omitempty"`
	// Sandbox is how BUILD agents run: "bwrap" or "none"; SandboxNote
	// says why not, when the setting allowed a sandbox.
	Sandbox     string `json:"sandbox,omitempty"`
	SandboxNote string `json:"sandbox_note,omitempty"`
	// Containment says how the agents' processes are contained: a cgroup
	// v2, or the process-group fallback.
	Containment string `json:"containment,omitempty"`
}

// IterationStart is the data of an iteration_start event. The first three
// keys are the bash loop's, in its order.
type IterationStart struct {
	Iteration   int    `json:"iteration"`
	IssueID     string `json:"issue_id,omitempty"` // empty in PLANNING mode
	Mode        string `json:"mode"`
	IssueTitle  string `json:"issue_title,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`      // this attempt at the issue, from 1
	MaxAttempts int    `json:"max_attempts,omitempty"` // attempts before the issue counts as stuck
	Sandbox     string `json:"sandbox,omitempty"`      // "bwrap" when the agent runs sandboxed, else "none"
	Agent       string `json:"agent,omitempty"`        // the backend that runs the iteration
	Model       string `json:"model,omitempty"`        // the model it was asked for, if any
	// Resumed marks an iteration that resumes the agent session an
	// interrupted one left, SessionID (docs/agents.md, "Resuming").
	Resumed   bool   `json:"resumed,omitempty"`
	SessionID string `json:"session_id,omitempty"`
}

// IterationEnd is the data of an iteration_end event. The first three keys
// are the bash loop's; DurationSeconds is whole seconds, as there.
type IterationEnd struct {
	Iteration       int           `json:"iteration"`
	ExitCode        int           `json:"exit_code"` // -1 when the agent was killed by a signal
	DurationSeconds int64         `json:"duration_seconds"`
	Outcome         string        `json:"outcome,omitempty"` // an agent.Status value ("ok", "agent_error", ...)
	Reason          string        `json:"reason,omitempty"`
	IssueID         string        `json:"issue_id,omitempty"`
	Attempt         int           `json:"attempt,omitempty"`
	MaxAttempts     int           `json:"max_attempts,omitempty"`
	IssueClosed     bool          `json:"issue_closed,omitempty"`
	Turns           int           `json:"turns,omitempty"`
	ToolCalls       int           `json:"tool_calls,omitempty"`
	CostUSD         *float64      `json:"cost_usd,omitempty"` // nil when the agent reports no cost
	Tokens          *agent.Tokens `json:"tokens,omitempty"`
	SessionID       string        `json:"session_id,omitempty"`
	Agent           string        `json:"agent,omitempty"` // the backend that ran the iteration
	Model           string        `json:"model,omitempty"`
}

// Stuck is the data of a stuck event: an issue used up its attempts.
type Stuck struct {
	IssueID     string `json:"issue_id"`
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts"`
	Iteration   int    `json:"iteration,omitempty"`
	Action      string `json:"action,omitempty"` // what ralphd did about it ("noted", "blocked", ...)
	Reason      string `json:"reason,omitempty"`
}

// Violation is the data of a violation event: the agent did something the
// mode forbids, found by an audit after the fact or by a denied hook.
// Created is what one BUILD iteration created: how many issues, the cap
// (max_creates, 0 for none) and the first of their ids.
type Created struct {
	Iteration int      `json:"iteration"`
	IssueID   string   `json:"issue_id"` // the iteration's issue
	Count     int      `json:"count"`
	Cap       int      `json:"cap"`
	IDs       []string `json:"ids"`
}

type Violation struct {
	Iteration int    `json:"iteration,omitempty"`
	IssueID   string `json:"issue_id,omitempty"`
	Mode      string `json:"mode"`
	Kind      string `json:"kind"` // e.g. "forbidden_command", "priority_changed"
	Detail    string `json:"detail,omitempty"`
	Command   string `json:"command,omitempty"`
}

// QuotaWaitStart is the data of a quota_wait_start event.
type QuotaWaitStart struct {
	Agent       string    `json:"agent,omitempty"`
	Iteration   int       `json:"iteration,omitempty"`
	ResetAt     time.Time `json:"reset_at,omitzero"` // when the quota resets, if known; write it in UTC
	WaitSeconds int64     `json:"wait_seconds"`
	Reason      string    `json:"reason,omitempty"`
}

// QuotaWaitEnd is the data of a quota_wait_end event.
type QuotaWaitEnd struct {
	WaitedSeconds int64 `json:"waited_seconds"`
	Interrupted   bool  `json:"interrupted,omitempty"`
}

// Decision is the data of a decision event: a choice ralphd made that a
// person may want to audit (skipping an issue, picking the next one, ...).
type Decision struct {
	Iteration int    `json:"iteration,omitempty"`
	IssueID   string `json:"issue_id,omitempty"`
	Decision  string `json:"decision"`
	Reason    string `json:"reason,omitempty"`
}

// RunEnd is the data of a run_end event, the run's summary.
type RunEnd struct {
	Iterations      int           `json:"iterations"`
	Outcome         string        `json:"outcome"` // why the run ended ("complete", "max_iterations", "interrupted", "error", ...)
	DurationSeconds int64         `json:"duration_seconds"`
	Reason          string        `json:"reason,omitempty"`
	IssuesClosed    int           `json:"issues_closed,omitempty"`
	Stuck           int           `json:"stuck,omitempty"`
	Violations      int           `json:"violations,omitempty"`
	CostUSD         *float64      `json:"cost_usd,omitempty"`
	Tokens          *agent.Tokens `json:"tokens,omitempty"`
}

// Field is one key and value of an event's data.
type Field struct {
	Key   string
	Value any
}

// Fields is event data built ad hoc, written with its keys in slice order.
// Values are encoded with encoding/json (without HTML escaping). Keys must
// be unique.
type Fields []Field

func (f Fields) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	for i, kv := range f {
		for _, prev := range f[:i] {
			if prev.Key == kv.Key {
				return nil, fmt.Errorf("encode data: duplicate key %q", kv.Key)
			}
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, []byte(kv.Key))
		dst = append(dst, ':')
		v, err := marshalCompact(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("encode data key %q: %w", kv.Key, err)
		}
		dst = append(dst, v...)
	}
	return append(dst, '}'), nil
}

// marshalCompact encodes v as compact JSON without HTML escaping, so that a
// "<promise>" in a value stays readable and greppable.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

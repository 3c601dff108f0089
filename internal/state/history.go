package state

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/logjsonl"
)

// HistoryVersion is the schema version written in each history record's
// "v" field.
const HistoryVersion = 1

// Record kinds. A record with no kind is an iteration record.
const (
	// KindIteration is one finished iteration.
	KindIteration = "iteration"
	// KindRunEnd closes a run: it carries the run's stop reason. Its
	// Iteration field holds the number of iterations the run used.
	KindRunEnd = "run_end"
	// KindStuck records that BUILD gave up on an issue.
	KindStuck = "stuck"
	// KindCheckpoint records that 90% of a run's timeout passed.
	KindCheckpoint = "checkpoint"
)

// OutcomeInterrupted is the outcome of an iteration whose ralphd died or
// was stopped mid-iteration. It equals agent.StatusInterrupted.
const OutcomeInterrupted = "interrupted"

// Record is one line of history.jsonl: a finished iteration (Kind
// KindIteration) or the end of a run (KindRunEnd).
//
// Fields the later issues need are explicit (fingerprint, gate, tier,
// progress, stuck, failure branch...). Anything else goes in Extra, a map
// of raw JSON values that is written and read back verbatim; promote a key
// to a field once two places use it.
type Record struct {
	// V is the schema version (HistoryVersion).
	V int `json:"v"`
	// Kind is KindIteration (also when empty), KindRunEnd, KindStuck or
	// KindCheckpoint.
	Kind string `json:"kind,omitempty"`
	// RunID names the run (one `ralphd build`/`plan` invocation, or one
	// daemon cycle); see NewRunID.
	RunID string `json:"run_id"`
	// Mode is "build" or "plan".
	Mode string `json:"mode"`
	// Iteration counts from 1 within the run.
	Iteration int `json:"iteration"`
	// IssueID is the issue worked on; empty in plan mode.
	IssueID string `json:"issue_id,omitempty"`
	// Attempt is the issue's attempt number this iteration counted (0 in
	// plan mode or when no attempt was counted).
	Attempt   int       `json:"attempt,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Outcome is the iteration's result: an agent.Status value such as
	// "ok", "agent_error", "rate_limited", "timeout", "interrupted", or a
	// judgement added by the caller.
	Outcome  string `json:"outcome,omitempty"`
	ExitCode int    `json:"exit_code"`
	// Fingerprint is the short hash of the normalised first failure line.
	Fingerprint string `json:"fingerprint,omitempty"`
	// CostUSD is nil when the backend reports no cost; never invented.
	CostUSD         *float64     `json:"cost_usd,omitempty"`
	Tokens          agent.Tokens `json:"tokens,omitzero"`
	DurationSeconds float64      `json:"duration_seconds"`
	// StopReason is why the run stopped (success, max_iterations,
	// repeated_fingerprint, no_progress, budget, timeout, interrupted).
	// It is set on KindRunEnd records.
	StopReason string `json:"stop_reason,omitempty"`
	// Gate is the last verification gate reached ("agent", "verify",
	// "acceptance", ...).
	Gate string `json:"gate,omitempty"`
	// Violations are the policy violations seen in this iteration.
	Violations []string `json:"violations,omitempty"`
	// Created are the issues a BUILD iteration created.
	Created []string `json:"created,omitempty"`
	// Progress says whether the iteration made progress; nil when not judged.
	Progress *bool `json:"progress,omitempty"`
	// Tier is the escalation tier judging the iteration decided for the
	// issue's next attempt (0 none).
	Tier int `json:"tier,omitempty"`
	// Stuck marks the iteration after which BUILD gave up on the issue
	// (its attempts reached the cap, or the escalation's hard stop), and
	// the KindStuck record.
	Stuck bool `json:"stuck,omitempty"`
	// FailureBranch is the wip/ralph-fail-... branch written for the issue.
	FailureBranch string `json:"failure_branch,omitempty"`
	// Agent is the backend's name (claude, codex, ...) and Model the model
	// asked for, when one was.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// SessionID, Turns and ToolCalls are what the agent reported; ToolCalls
	// 0 with no changes is the no-progress signal.
	SessionID string `json:"session_id,omitempty"`
	Turns     int    `json:"turns,omitempty"`
	ToolCalls int    `json:"tool_calls,omitempty"`
	// Sandbox is "bwrap" when the agent ran under bubblewrap, "none" when
	// it did not, and empty in records older than the sandbox.
	Sandbox string `json:"sandbox,omitempty"`
	// Network is the sandboxed agent's network: "allowlist" (a namespace
	// of its own, out only through ralphd's proxy to NetworkAllow) or
	// "open" (the host's); empty when it ran unsandboxed, and in older
	// records.
	Network      string   `json:"network,omitempty"`
	NetworkAllow []string `json:"network_allow,omitempty"`
	// BDCalls are the bd commands the agent ran through the guard in this
	// iteration, allowed and refused.
	BDCalls []BDCall `json:"bd_calls,omitempty"`
	// Extra holds fields no other field covers, as raw JSON.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// BDCall is one bd command an agent ran through ralphd's guard: the
// guard's audit record. The same value is the data of the run log's
// bd_call event, a line of the guard's audit file, and an entry of an
// iteration's history record.
type BDCall struct {
	Argv    []string `json:"argv"`           // the arguments after "bd"
	Mode    string   `json:"mode,omitempty"` // the mode the guard enforced: build or plan
	Allowed bool     `json:"allowed"`        // the policy's verdict
	// ExitCode is the real bd's exit code; the guard's refusal code (1)
	// when refused; -1 when bd could not run.
	ExitCode  int    `json:"exit_code"`
	Rule      string `json:"rule,omitempty"`      // the deciding policy rule
	Reason    string `json:"reason,omitempty"`    // why it was refused
	Error     string `json:"error,omitempty"`     // why the real bd could not run
	Iteration int    `json:"iteration,omitempty"` // the iteration, in the run log
}

// IsIteration reports whether r is an iteration record.
func (r Record) IsIteration() bool { return r.Kind == "" || r.Kind == KindIteration }

// maxCostUSD bounds the cost one record may hold (agent.MaxReportedCostUSD).
const maxCostUSD = 1e6

// dropImpossibleFigures clears a cost and token counts no iteration can
// have (a negative figure would lower the sums a report shows; history is
// a file anyone with the user's rights can edit) and reports whether it
// cleared any.
func (r *Record) dropImpossibleFigures() bool {
	dropped := false
	if r.CostUSD != nil && !(*r.CostUSD >= 0 && *r.CostUSD <= maxCostUSD) {
		r.CostUSD, dropped = nil, true
	}
	for _, n := range []*int64{&r.Tokens.InputTokens, &r.Tokens.OutputTokens, &r.Tokens.CacheReadTokens, &r.Tokens.CacheWriteTokens} {
		if *n < 0 {
			*n, dropped = 0, true
		}
	}
	return dropped
}

// ParseHistoryLine parses one history.jsonl line (without its newline).
// It fails for anything that is not a JSON object matching Record.
func ParseHistoryLine(line []byte) (Record, error) {
	return parseObject[Record]("history line", line)
}

// ReadHistory reads a history.jsonl file. Lines that do not parse are
// skipped and described in one warning; the others are all returned, in
// file order. A missing file is an empty history. Neither the file nor
// its directory may be a link (see atomicfile.Dir).
func ReadHistory(path string) (records []Record, warnings []string, err error) {
	d, name, err := openDirOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read history: %w", err)
	}
	defer d.Close()
	return readHistoryIn(d, name)
}

// readHistoryIn reads the history file name below d, as ReadHistory does.
func readHistoryIn(d *atomicfile.Dir, name string) (records []Record, warnings []string, err error) {
	path := d.Join(name)
	data, err := readIn(d, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read history: %w", err)
	}
	badLines, firstBad, impossible := 0, 0, 0
	var firstErr error
	n := 0
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		n++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := ParseHistoryLine(line)
		if err != nil {
			if badLines == 0 {
				firstBad, firstErr = n, err
			}
			badLines++
			continue
		}
		if r.dropImpossibleFigures() {
			impossible++
		}
		records = append(records, r)
	}
	if impossible > 0 {
		warnings = append(warnings, fmt.Sprintf("%s: ignored the negative or impossible cost or token figures of %d record(s)", path, impossible))
	}
	if badLines > 0 {
		warnings = append(warnings, fmt.Sprintf("%s: skipped %d unreadable line(s), first at line %d (%v); the other %d record(s) are used",
			path, badLines, firstBad, firstErr, len(records)))
	}
	return records, warnings, nil
}

// HistoryPath returns the path of history.jsonl.
func (s *Store) HistoryPath() string { return s.path(HistoryFile) }

// History reads history.jsonl; unreadable lines are skipped with a queued
// warning.
func (s *Store) History() ([]Record, error) {
	recs, warns, err := readHistoryIn(s.root, HistoryFile)
	for _, w := range warns {
		s.warn("%s", w)
	}
	return recs, err
}

// AppendHistory appends r to history.jsonl as one line, with one write
// call on a file opened O_APPEND, and fsyncs it. V defaults to
// HistoryVersion and Kind to KindIteration. If the file's last line was
// cut short by a crash, the record starts on a new line so it stays
// readable.
func (s *Store) AppendHistory(r Record) error {
	if r.V == 0 {
		r.V = HistoryVersion
	}
	if r.Kind == "" {
		r.Kind = KindIteration
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	line = s.redact(append(line, '\n'))

	s.mu.Lock()
	defer s.mu.Unlock()
	// Never through a link, and never to a file with a second name: an
	// append, unlike a rename, writes into the file that is there, so a
	// hard link to one of the user's files would get ralphd's lines. That
	// is moved aside (with a warning) and a new history started.
	const flags = os.O_RDWR | os.O_APPEND | os.O_CREATE
	f, err := s.root.OpenFile(HistoryFile, flags, filePerm)
	if atomicfile.IsForeign(err) {
		if err := s.setAside(HistoryFile); err != nil {
			return fmt.Errorf("append history: %w", err)
		}
		f, err = s.root.OpenFile(HistoryFile, flags, filePerm)
	}
	if err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	created, err := appendLine(f, line)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("append history: %w", err)
	}
	s.resealAppended(HistoryFile, line)
	if err := f.Close(); err != nil {
		return fmt.Errorf("append history: %w", err)
	}
	if created {
		if err := s.root.Sync(); err != nil {
			return fmt.Errorf("append history: %w", err)
		}
	}
	return nil
}

// appendLine appends line to f (opened O_APPEND) with one write call and
// fsyncs it. When f does not end in a newline (a line cut short by a
// crash), the write starts with one. It reports whether f was empty.
func appendLine(f *os.File, line []byte) (wasEmpty bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
			return false, err
		}
		if last[0] != '\n' {
			line = slices.Insert(line, 0, '\n')
		}
	}
	if _, err := f.Write(line); err != nil {
		return false, err
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("fsync: %w", err)
	}
	return fi.Size() == 0, nil
}

// IssueTotals sums the iteration records of one issue.
type IssueTotals struct {
	IssueID    string `json:"issue_id"`
	Iterations int    `json:"iterations"`
	// LastAttempt is the attempt number of the latest iteration.
	LastAttempt int `json:"last_attempt"`
	// Outcomes counts iterations by outcome.
	Outcomes map[string]int `json:"outcomes"`
	// CostUSD sums the known costs; nil when no iteration reported one.
	CostUSD         *float64     `json:"cost_usd,omitempty"`
	Tokens          agent.Tokens `json:"tokens"`
	DurationSeconds float64      `json:"duration_seconds"`
	// Fingerprints are the iterations' non-empty fingerprints, oldest first.
	Fingerprints    []string  `json:"fingerprints"`
	LastOutcome     string    `json:"last_outcome,omitempty"`
	LastGate        string    `json:"last_gate,omitempty"`
	LastFingerprint string    `json:"last_fingerprint,omitempty"`
	LastEndedAt     time.Time `json:"last_ended_at,omitzero"`
}

// SummarizeIssues returns the totals of every issue that has iteration
// records, sorted by issue id.
func SummarizeIssues(records []Record) []IssueTotals {
	byID := map[string]*IssueTotals{}
	for _, r := range records {
		if !r.IsIteration() || r.IssueID == "" {
			continue
		}
		t := byID[r.IssueID]
		if t == nil {
			t = &IssueTotals{IssueID: r.IssueID, Outcomes: map[string]int{}, Fingerprints: []string{}}
			byID[r.IssueID] = t
		}
		t.Iterations++
		t.LastAttempt = r.Attempt
		if r.Outcome != "" {
			t.Outcomes[r.Outcome]++
		}
		t.CostUSD = addCost(t.CostUSD, r.CostUSD)
		t.Tokens = t.Tokens.Add(r.Tokens)
		t.DurationSeconds += r.DurationSeconds
		if r.Fingerprint != "" {
			t.Fingerprints = append(t.Fingerprints, r.Fingerprint)
		}
		t.LastOutcome, t.LastGate, t.LastFingerprint, t.LastEndedAt = r.Outcome, r.Gate, r.Fingerprint, r.EndedAt
	}
	out := make([]IssueTotals, 0, len(byID))
	for _, t := range byID {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b IssueTotals) int { return cmp.Compare(a.IssueID, b.IssueID) })
	return out
}

// RunSummary sums the records of one run.
type RunSummary struct {
	RunID     string    `json:"run_id"`
	Mode      string    `json:"mode"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Iterations counts the run's iteration records.
	Iterations int `json:"iterations"`
	// Issues are the distinct issues worked on, in first-seen order.
	Issues []string `json:"issues"`
	// Outcomes counts iterations by outcome.
	Outcomes        map[string]int `json:"outcomes"`
	CostUSD         *float64       `json:"cost_usd,omitempty"`
	Tokens          agent.Tokens   `json:"tokens"`
	DurationSeconds float64        `json:"duration_seconds"`
	// Ended says a run_end record exists; a run without one is still going
	// or was killed.
	Ended      bool   `json:"ended"`
	StopReason string `json:"stop_reason,omitempty"`
	// Sandbox is the last BUILD iteration's sandbox ("bwrap" or "none"),
	// and Network and NetworkAllow its network (see Record).
	Sandbox      string   `json:"sandbox,omitempty"`
	Network      string   `json:"network,omitempty"`
	NetworkAllow []string `json:"network_allow,omitempty"`
	// CreatedByBuild counts the issues the run's BUILD iterations created.
	CreatedByBuild int `json:"created_by_build"`
	// Agents are the run's iterations by agent, in the order each first
	// ran: several when the run fell back on another (config agents).
	Agents []AgentTotals `json:"agents"`
}

// AgentTotals sums one agent's iterations in a run: its runs (rate-limited
// ones too), their cost when it reported one, and their tokens.
type AgentTotals struct {
	Name       string       `json:"name"` // as the agents list writes it: "claude", "codex:gpt-5"
	Iterations int          `json:"iterations"`
	CostUSD    *float64     `json:"cost_usd,omitempty"`
	Tokens     agent.Tokens `json:"tokens"`
}

// AgentName names the agent of r as the agents list does: its backend,
// then ":" and the model when one was asked for.
func (r Record) AgentName() string {
	if r.Model == "" {
		return r.Agent
	}
	return r.Agent + ":" + r.Model
}

// addAgent adds r to the totals of its agent in ts.
func addAgent(ts []AgentTotals, r Record) []AgentTotals {
	name := r.AgentName()
	if name == "" {
		return ts
	}
	i := slices.IndexFunc(ts, func(t AgentTotals) bool { return t.Name == name })
	if i < 0 {
		ts, i = append(ts, AgentTotals{Name: name}), len(ts)
	}
	t := &ts[i]
	t.Iterations++
	t.CostUSD = addCost(t.CostUSD, r.CostUSD)
	t.Tokens = t.Tokens.Add(r.Tokens)
	return ts
}

// LastRunID returns the run id of the last record that has one, or "".
func LastRunID(records []Record) string {
	for i := len(records) - 1; i >= 0; i-- {
		if records[i].RunID != "" {
			return records[i].RunID
		}
	}
	return ""
}

// SummarizeRun sums the records of run runID. Its counters (iterations,
// cost, tokens, duration) come from the iteration records, so they are
// right even for a run that was killed before writing its run_end record.
func SummarizeRun(records []Record, runID string) RunSummary {
	sum := RunSummary{RunID: runID, Issues: []string{}, Outcomes: map[string]int{}, Agents: []AgentTotals{}}
	for _, r := range records {
		if r.RunID != runID {
			continue
		}
		if sum.Mode == "" {
			sum.Mode = r.Mode
		}
		if !r.StartedAt.IsZero() && (sum.StartedAt.IsZero() || r.StartedAt.Before(sum.StartedAt)) {
			sum.StartedAt = r.StartedAt
		}
		if r.EndedAt.After(sum.EndedAt) {
			sum.EndedAt = r.EndedAt
		}
		if !r.IsIteration() {
			if r.Kind == KindRunEnd {
				sum.Ended = true
				sum.StopReason = r.StopReason
			}
			continue
		}
		sum.Iterations++
		sum.CreatedByBuild += len(r.Created)
		if r.Mode == "build" && r.Sandbox != "" {
			sum.Sandbox, sum.Network, sum.NetworkAllow = r.Sandbox, r.Network, r.NetworkAllow
		}
		if r.IssueID != "" && !slices.Contains(sum.Issues, r.IssueID) {
			sum.Issues = append(sum.Issues, r.IssueID)
		}
		if r.Outcome != "" {
			sum.Outcomes[r.Outcome]++
		}
		sum.CostUSD = addCost(sum.CostUSD, r.CostUSD)
		sum.Tokens = sum.Tokens.Add(r.Tokens)
		sum.DurationSeconds += r.DurationSeconds
		sum.Agents = addAgent(sum.Agents, r)
	}
	return sum
}

// Totals sums every iteration record in history, across runs and crashes.
type Totals struct {
	Runs            int          `json:"runs"`
	Iterations      int          `json:"iterations"`
	CostUSD         *float64     `json:"cost_usd,omitempty"`
	Tokens          agent.Tokens `json:"tokens"`
	DurationSeconds float64      `json:"duration_seconds"`
}

// SummarizeAll sums every iteration record.
func SummarizeAll(records []Record) Totals {
	var t Totals
	runs := map[string]bool{}
	for _, r := range records {
		if r.RunID != "" {
			runs[r.RunID] = true
		}
		if !r.IsIteration() {
			continue
		}
		t.Iterations++
		t.CostUSD = addCost(t.CostUSD, r.CostUSD)
		t.Tokens = t.Tokens.Add(r.Tokens)
		t.DurationSeconds += r.DurationSeconds
	}
	t.Runs = len(runs)
	return t
}

// addCost adds a known cost to a running sum; unknown costs add nothing,
// and a sum stays nil until some cost is known.
func addCost(sum, c *float64) *float64 {
	if c == nil {
		return sum
	}
	v := *c
	if sum != nil {
		v += *sum
	}
	return &v
}

// NewRunID returns a fresh run ID (see package runid), for example
// "20260102T150405Z-1a2b3c4d". IDs sort by start time.
func NewRunID(start time.Time) string { return logjsonl.NewRunID(start) }

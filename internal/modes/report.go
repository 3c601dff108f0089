package modes

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/internal/text"
)

// Report is the end-of-run report: what a run completed and what it gave
// up on, and why it stopped. It is built from the run's history records,
// so its figures are history's.
type Report struct {
	RunID      string         `json:"run_id"`
	Mode       string         `json:"mode"`
	Started    time.Time      `json:"started_at"`
	Ended      time.Time      `json:"ended_at"`
	StopReason StopReason     `json:"stop_reason"`
	Reason     string         `json:"reason"`
	Iterations int            `json:"iterations"`
	Completed  int            `json:"completed"`
	Tried      int            `json:"tried"`
	CostUSD    *float64       `json:"cost_usd,omitempty"` // nil when the agent reports no cost
	Tokens     agent.Tokens   `json:"tokens"`
	Issues     []ReportIssue  `json:"issues"`
	Config     []config.Entry `json:"config"`
	// Agents are the iterations, cost and tokens of each agent that ran;
	// DroppedAgents the agents taken out of the list for the run, with why.
	Agents        []state.AgentTotals `json:"agents"`
	DroppedAgents []string            `json:"dropped_agents,omitempty"`
	// PullRequests are the run's pull requests (integrate = pr), each in
	// its last state: still waiting for review, merged, closed, or sent
	// back (checks failing, changes requested).
	PullRequests []ReviewStatus `json:"pull_requests,omitempty"`
}

// ReportIssue is one issue worked in the run.
type ReportIssue struct {
	ID            string   `json:"id"`
	Closed        bool     `json:"closed"`
	Iterations    int      `json:"iterations"`
	Attempts      int      `json:"attempts"` // the last attempt number
	MaxAttempts   int      `json:"max_attempts"`
	LastOutcome   string   `json:"last_outcome"`
	LastGate      string   `json:"last_gate,omitempty"`
	Fingerprint   string   `json:"fingerprint,omitempty"`
	Stuck         bool     `json:"stuck"`
	FailureBranch string   `json:"failure_branch,omitempty"`
	CostUSD       *float64 `json:"cost_usd,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
}

// buildReport assembles the report of res from history.
func (l *Loop) buildReport(res *Result) (*Report, error) {
	all, err := l.State.History()
	if err != nil {
		return nil, err
	}
	var recs []state.Record
	for _, r := range all {
		if r.RunID == res.RunID {
			recs = append(recs, r)
		}
	}
	rep := &Report{
		RunID: res.RunID, Mode: res.Mode, Started: res.Started, Ended: res.Ended, StopReason: res.Stop,
		Reason: res.Reason, Config: l.Config.Entries(), Issues: []ReportIssue{},
		Agents: state.SummarizeRun(recs, res.RunID).Agents, DroppedAgents: res.DroppedAgents, PullRequests: res.PullRequests,
	}
	stuck, branches := map[string]bool{}, map[string]string{}
	violations, noProgress := map[string]int{}, map[string]int{}
	for _, r := range recs {
		switch {
		case r.Kind == state.KindStuck:
			stuck[r.IssueID] = true
			if r.FailureBranch != "" {
				branches[r.IssueID] = r.FailureBranch
			}
		case r.IsIteration():
			rep.Iterations++
			rep.Tokens = rep.Tokens.Add(r.Tokens)
			if r.CostUSD != nil {
				c := *r.CostUSD
				if rep.CostUSD != nil {
					c += *rep.CostUSD
				}
				rep.CostUSD = &c
			}
			violations[r.IssueID] += len(r.Violations)
			if r.Outcome == string(OutcomeNoProgress) {
				noProgress[r.IssueID]++
			}
		}
	}
	for _, fb := range res.FailureBranches {
		if id, b, ok := strings.Cut(fb, " "); ok {
			branches[id] = b
		}
	}
	for _, t := range state.SummarizeIssues(recs) {
		ri := ReportIssue{
			ID: t.IssueID, Closed: t.LastOutcome == string(OutcomeClosed), Iterations: t.Iterations, Attempts: t.LastAttempt,
			MaxAttempts: l.Config.MaxStuck, LastOutcome: t.LastOutcome, LastGate: t.LastGate,
			Fingerprint: t.LastFingerprint, Stuck: stuck[t.IssueID], FailureBranch: branches[t.IssueID], CostUSD: t.CostUSD,
		}
		if n := violations[t.IssueID]; n > 0 {
			ri.Warnings = append(ri.Warnings, fmt.Sprintf("%d forbidden tracker change(s) reverted", n))
		}
		if n := noProgress[t.IssueID]; n > 0 {
			ri.Warnings = append(ri.Warnings, text.Count(n, "iteration")+" with no progress")
		}
		if ri.Closed && t.LastGate == GateAgent {
			ri.Warnings = append(ri.Warnings, "closed without a verification gate (no verify command, no acceptance commands)")
		}
		rep.Tried++
		if ri.Closed {
			rep.Completed++
		}
		rep.Issues = append(rep.Issues, ri)
	}
	return rep, nil
}

// writeReport builds the report and writes it as <reports>/<run id>.md and
// .json. It returns the markdown file's path.
func (l *Loop) writeReport(res *Result) (string, *Report, error) {
	rep, err := l.buildReport(res)
	if err != nil {
		return "", nil, err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", nil, err
	}
	var md strings.Builder
	rep.WriteMarkdown(&md)
	path, err := l.State.WriteReport(res.RunID, append(data, '\n'), []byte(md.String()))
	if err != nil {
		return "", nil, err
	}
	if err := l.State.PruneReports(l.Config.ReportRetention, res.RunID); err != nil {
		l.human().Warn("could not remove old reports", "err", err)
	}
	return path, rep, nil
}

// WriteMarkdown renders the report for a person.
func (r *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# ralphd %s run %s\n\n", r.Mode, r.RunID)
	fmt.Fprintf(w, "%s to %s (%s)\n\n", r.Started.Local().Format(time.DateTime), r.Ended.Local().Format(time.DateTime), r.Ended.Sub(r.Started).Round(time.Second))
	if r.Mode == ModeBuild {
		fmt.Fprintf(w, "**Completed %d of %d tried.**\n\n", r.Completed, r.Tried)
	}
	var failed []ReportIssue
	for _, is := range r.Issues {
		if !is.Closed {
			failed = append(failed, is)
		}
	}
	if len(failed) > 0 {
		fmt.Fprint(w, "## Not completed\n\n| issue | attempts | last gate | fingerprint | stuck | failure branch | warnings |\n|---|---|---|---|---|---|---|\n")
		for _, is := range failed {
			fmt.Fprintf(w, "| %s | %d/%d | %s | %s | %s | %s | %s |\n", is.ID, is.Attempts, is.MaxAttempts, dash(is.LastGate),
				dash(is.Fingerprint), yesNo(is.Stuck), dash(is.FailureBranch), dash(strings.Join(is.Warnings, "; ")))
		}
		fmt.Fprintln(w)
	}
	var warned []ReportIssue
	for _, is := range r.Issues {
		if is.Closed && len(is.Warnings) > 0 {
			warned = append(warned, is)
		}
	}
	if len(warned) > 0 {
		fmt.Fprint(w, "## Completed, with quality warnings\n\n")
		for _, is := range warned {
			fmt.Fprintf(w, "- %s: %s\n", is.ID, strings.Join(is.Warnings, "; "))
		}
		fmt.Fprintln(w)
	}
	if len(r.PullRequests) > 0 {
		fmt.Fprint(w, "## Pull requests\n\n| issue | pull request | state | branch | commit |\n|---|---|---|---|---|\n")
		for _, pr := range r.PullRequests {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", pr.Issue, dash(prLink(pr)), pr.State, pr.Branch, shortSHA(pr.Commit))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "## Loop\n\n")
	fmt.Fprintf(w, "- stop reason: %s (%s)\n", r.StopReason, r.Reason)
	fmt.Fprintf(w, "- iterations: %d\n", r.Iterations)
	if r.CostUSD != nil {
		fmt.Fprintf(w, "- cost: $%.4f\n", *r.CostUSD)
	} else {
		fmt.Fprint(w, "- cost: not reported by the agent\n")
	}
	fmt.Fprintf(w, "- tokens: %d in, %d out, %d cache read, %d cache write\n", r.Tokens.InputTokens, r.Tokens.OutputTokens, r.Tokens.CacheReadTokens, r.Tokens.CacheWriteTokens)
	if len(r.Agents) > 1 || len(r.DroppedAgents) > 0 {
		for _, a := range r.Agents {
			cost := "cost not reported"
			if a.CostUSD != nil {
				cost = fmt.Sprintf("$%.4f", *a.CostUSD)
			}
			fmt.Fprintf(w, "- agent %s: %s, %s, %d tokens in, %d out\n", a.Name, text.Count(a.Iterations, "iteration"), cost, a.Tokens.InputTokens, a.Tokens.OutputTokens)
		}
		for _, d := range r.DroppedAgents {
			fmt.Fprintf(w, "- dropped for the run: %s\n", d)
		}
	}
	fmt.Fprint(w, "\n<details><summary>Effective configuration</summary>\n\n| key | value | source |\n|---|---|---|\n")
	for _, e := range slices.Clone(r.Config) {
		fmt.Fprintf(w, "| %s | `%s` | %s |\n", e.Key, e.Value, e.Source)
	}
	fmt.Fprint(w, "\n</details>\n")
}

// prLink is a pull request as a markdown link, "" before it was opened.
func prLink(pr ReviewStatus) string {
	if pr.PR == 0 {
		return ""
	}
	if pr.URL == "" {
		return fmt.Sprintf("#%d", pr.PR)
	}
	return fmt.Sprintf("[#%d](%s)", pr.PR, pr.URL)
}

// shortSHA is a commit's first 12 hex digits.
func shortSHA(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

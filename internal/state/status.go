package state

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/judge"
	"github.com/ralphd/ralphd/internal/text"
)

// StatusVersion is the version of the Status JSON object. It changes only
// when a field is removed or changes meaning; new fields may be added.
const StatusVersion = 1

// Who wrote a state directory, for Status.CreatedBy.
const (
	CreatedByRalphd   = "ralphd"
	CreatedByBashLoop = "bash-loop"
)

// Status is a snapshot of a project's state, for `ralphd status` (its JSON
// form is the stable object of `ralphd status --json`). Slices are never
// nil, so they encode as [] rather than null.
type Status struct {
	Version int      `json:"version"`
	Project Identity `json:"project"`
	// StateDir is the project's state directory; StateExists says whether
	// it has been created.
	StateDir    string `json:"state_dir"`
	StateExists bool   `json:"state_exists"`
	// CreatedBy is CreatedByRalphd, CreatedByBashLoop (metadata.json without
	// ralphd's fields), or "" when there is no metadata.
	CreatedBy     string `json:"created_by,omitempty"`
	CreatedAt     string `json:"created_at,omitempty"`
	RalphdVersion string `json:"ralphd_version,omitempty"`
	// Lock is the ralphd holding the project lock; nil when none runs.
	Lock *LockInfo `json:"lock"`
	// Running is the agent record. With Lock nil it is left over from a
	// ralphd that died; the next start cleans it up.
	Running *Running `json:"running"`
	// TreeWork is the work an interrupted BUILD iteration left in the
	// work tree, which the next run goes on from; nil when none.
	TreeWork *TreeWork `json:"tree_work"`
	// Fleet is who plans on the tracker the running daemon shares with
	// other daemons (fleet planning); nil when no daemon on a fleet
	// tracker runs.
	Fleet      *FleetStatus    `json:"fleet"`
	StuckLimit int             `json:"stuck_limit"`
	Attempts   []AttemptStatus `json:"attempts"`
	// Issues are per-issue totals from history.
	Issues  []IssueTotals `json:"issues"`
	LastRun *RunSummary   `json:"last_run"`
	// Totals sums all of history, across runs and crashes.
	Totals Totals    `json:"totals"`
	Logs   []LogFile `json:"logs"`
	// LatestReport is the newest end-of-run report, if any.
	LatestReport string `json:"latest_report,omitempty"`
	// LegacyAttempts is the path of a legacy .ralph-attempts file, if one
	// exists in the project.
	LegacyAttempts string `json:"legacy_attempts,omitempty"`
	// Layers are ralphd's defences against a BUILD agent as a ralphd
	// started now would have them; the caller probes them (ReadStatus
	// leaves them empty).
	Layers   []Layer  `json:"layers"`
	Warnings []string `json:"warnings"`
}

// Layer is one of ralphd's defences against a BUILD agent (the sandbox,
// its network, cgroup containment, the bd broker, the state dir), as
// found on this machine.
type Layer struct {
	Name   string `json:"name"`
	On     bool   `json:"on"`
	Detail string `json:"detail"` // what is in force, or why the layer is off
	// Open says what the layer being off leaves open, and Fix how to turn
	// it on; both empty when it is on.
	Open string `json:"open,omitempty"`
	Fix  string `json:"fix,omitempty"`
}

// AttemptStatus is one issue's attempt record, as BUILD judges it.
type AttemptStatus struct {
	IssueID string `json:"issue_id"`
	Count   int    `json:"count"`
	// AtLimit is true when the count is at or over the stuck limit.
	AtLimit bool `json:"at_limit"`
	// Stuck is true when BUILD gives up on the issue: IssueRecord.Stuck,
	// the very decision BUILD makes, on the same record. StuckCause says
	// why (judge.StuckAttemptCap or judge.StuckHardStop).
	Stuck      bool   `json:"stuck"`
	StuckCause string `json:"stuck_cause,omitempty"`
	// Tier is the escalation tier of the issue's next attempt
	// ("none", "strategy-shift", "context-expansion", "hard-stop").
	Tier string `json:"tier"`
}

// LogFile is one file in the logs directory.
type LogFile struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// ReadStatus builds the status of project id under root without changing
// anything: it creates no directory, moves no corrupt file aside and takes
// no lock (problems become warnings). stuckLimit marks the attempt
// counters at or over it; 0 marks none.
func ReadStatus(root string, id Identity, stuckLimit int) (Status, error) {
	st := Status{
		Version:    StatusVersion,
		Project:    id,
		StuckLimit: stuckLimit,
		Attempts:   []AttemptStatus{},
		Issues:     []IssueTotals{},
		Logs:       []LogFile{},
		Layers:     []Layer{},
		Warnings:   []string{},
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	dir := ProjectDir(root, id.ID)
	st.StateDir = dir
	if id.TopLevel != "" && HasLegacyAttempts(id.TopLevel) {
		st.LegacyAttempts = LegacyAttemptsPath(id.TopLevel)
	}
	d, err := openStateDir(root, id.ID)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read status: %w", err)
	}
	defer d.Close()
	st.StateExists = true
	warn := func(format string, args ...any) { st.Warnings = append(st.Warnings, fmt.Sprintf(format, args...)) }

	// Metadata.
	if data, err := readIn(d, MetadataFile); err == nil {
		m, err := ParseMetadata(data)
		if err != nil {
			warn("%s could not be parsed (%v); ralphd will move it aside and write a new one on its next run", filepath.Join(dir, MetadataFile), err)
		} else {
			st.CreatedAt, st.RalphdVersion = m.CreatedAt, m.RalphdVersion
			st.CreatedBy = CreatedByBashLoop
			if m.RalphdVersion != "" {
				st.CreatedBy = CreatedByRalphd
			}
		}
	} else if unusable(err) {
		warn("%v; ralphd will move it aside and write a new one on its next run", err)
	} else if !errors.Is(err, fs.ErrNotExist) {
		warn("%v", err)
	}

	// Lock and running agent.
	holder, err := lockHolderIn(d, LockFile)
	if err != nil {
		warn("%v", err)
	}
	st.Lock = holder
	if f, note := readFleetIn(d, holder); note != "" {
		warn("%s", note)
	} else {
		st.Fleet = f
	}
	st.Running = statusRecord(d, dir, RunningFile, ParseRunning, warn)
	st.TreeWork = statusRecord(d, dir, TreeWorkFile, ParseTreeWork, warn)

	// Attempts.
	if data, err := readIn(d, AttemptsFile); err == nil {
		counts, bad := ParseAttempts(data)
		for _, c := range counts {
			r := IssueRecord{IssueID: c.IssueID, Count: c.Count}
			var warns []string
			r.Judgement, _, warns = readIssueFiles(d, judgementName(c.IssueID), recordName(c.IssueID))
			st.Warnings = append(st.Warnings, warns...)
			cause := r.Stuck(stuckLimit)
			st.Attempts = append(st.Attempts, AttemptStatus{
				IssueID: c.IssueID, Count: c.Count, AtLimit: stuckLimit > 0 && c.Count >= stuckLimit,
				Stuck: cause != judge.NotStuck, StuckCause: string(cause), Tier: r.Judgement.Next.Tier.String(),
			})
		}
		slices.SortFunc(st.Attempts, func(a, b AttemptStatus) int { return cmp.Compare(a.IssueID, b.IssueID) })
		if len(bad) > 0 {
			warn("%s has %d unreadable or duplicate line(s); ralphd will move them to attempts.txt.corrupt-<time> on its next run", filepath.Join(dir, AttemptsFile), len(bad))
		}
	} else if unusable(err) {
		warn("%v; ralphd will move it aside on its next run, and the attempt counts start empty", err)
	} else if !errors.Is(err, fs.ErrNotExist) {
		warn("%v", err)
	}

	// History.
	recs, warns, err := readHistoryIn(d, HistoryFile)
	if unusable(err) {
		warn("%v; ralphd will move it aside on its next run, and start a new history", err)
	} else if err != nil {
		warn("%v", err)
	}
	st.Warnings = append(st.Warnings, warns...)
	st.Issues = SummarizeIssues(recs)
	if runID := LastRunID(recs); runID != "" {
		sum := SummarizeRun(recs, runID)
		st.LastRun = &sum
	}
	st.Totals = SummarizeAll(recs)

	// Logs and reports.
	if entries, err := d.ReadDir(LogsDirName); err == nil {
		for _, e := range entries {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			st.Logs = append(st.Logs, LogFile{Name: e.Name(), Path: filepath.Join(dir, LogsDirName, e.Name()), Size: info.Size(), ModTime: info.ModTime()})
		}
	} else if unusable(err) {
		warn("%v; ralphd will move it aside on its next run", err)
	}
	if entries, err := d.ReadDir(ReportsDirName); err == nil {
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".md") {
				st.LatestReport = filepath.Join(dir, ReportsDirName, e.Name()) // names sort by time
			}
		}
	} else if unusable(err) {
		warn("%v; ralphd will move it aside on its next run", err)
	}
	return st, nil
}

// WriteText renders the status for a human.
func (st Status) WriteText(w io.Writer) error {
	p := &printer{w: w}
	const col = "%-12s"
	line := func(label, format string, args ...any) {
		p.printf(col+format+"\n", append([]any{label}, args...)...)
	}
	more := func(format string, args ...any) {
		p.printf(strings.Repeat(" ", 12)+format+"\n", args...)
	}

	id := st.Project
	switch id.Rule {
	case RuleRemote:
		line("Project", "%s (id from the remote origin %s)", id.ID, id.RemoteURL)
	case RulePath:
		line("Project", "%s (id from the repository path; there is no \"origin\" remote)", id.ID)
		more("Adding a remote later changes the id, and ralphd would then start with fresh state.")
	default:
		line("Project", "%s", id.ID)
	}
	if id.TopLevel != "" {
		line("Repository", "%s", id.TopLevel)
	}
	if !st.StateExists {
		line("State dir", "%s (not created yet)", st.StateDir)
		p.printf("\nNo state yet: neither ralphd nor the bash loop has run on this project.\n")
		p.printf("The state dir is created by the first `ralphd build` or `ralphd plan`.\n")
		st.writeLayers(p)
		st.writeLegacy(p)
		st.writeWarnings(p)
		return p.err
	}
	line("State dir", "%s", st.StateDir)
	switch st.CreatedBy {
	case CreatedByBashLoop:
		line("Written by", "the bash loop (loop.sh), created %s; ralphd reads and keeps this state", st.CreatedAt)
	case CreatedByRalphd:
		line("Written by", "ralphd %s, created %s", st.RalphdVersion, st.CreatedAt)
	}

	switch {
	case st.Lock != nil && st.Lock.PID != 0:
		line("Running", "yes: ralphd PID %d, %s mode, since %s", st.Lock.PID, st.Lock.Mode, fmtTime(st.Lock.Since))
	case st.Lock != nil:
		line("Running", "yes: a ralphd holds the lock (it has not written its details yet)")
	default:
		line("Running", "no ralphd is running on this project")
	}
	if r := st.Running; r != nil {
		what := "plan"
		if r.IssueID != "" {
			what = fmt.Sprintf("%s (attempt %d)", r.IssueID, r.Attempt)
		}
		if st.Lock != nil {
			more("agent PID %d working on %s, iteration %d, started %s", r.PID, what, r.Iteration, fmtTime(r.StartedAt))
		} else {
			more("left over: an agent (PID %d, %s, iteration %d) was running when ralphd stopped;", r.PID, what, r.Iteration)
			more("the next `ralphd build`, `plan` or `daemon` ends it if still alive and gives the attempt back")
		}
	}

	if w := st.TreeWork; w != nil {
		line("Tree", "holds the work of iteration %d on %s, interrupted %s (HEAD %.12s):", w.Iteration, w.IssueID, fmtTime(w.At), w.Head)
		more("the next `ralphd build` or `daemon` goes on from it, %s first, while the tree is unchanged", w.IssueID)
	}
	if f := st.Fleet; f != nil {
		line("Fleet", "%s", f.Describe())
	}

	p.printf("\n")
	if len(st.Attempts) == 0 {
		line("Attempts", "none counted")
	} else {
		if st.StuckLimit > 0 {
			line("Attempts", "per issue (stuck limit %d: issues at the limit are skipped)", st.StuckLimit)
		} else {
			line("Attempts", "per issue")
		}
		width := 0
		for _, a := range st.Attempts {
			width = max(width, len(a.IssueID))
		}
		for _, a := range st.Attempts {
			mark := ""
			switch judge.StuckCause(a.StuckCause) {
			case judge.StuckAttemptCap:
				mark = "  STUCK (at or over the limit; `ralphd reset " + a.IssueID + "` retries it)"
			case judge.StuckHardStop:
				mark = "  STUCK (the escalation gave up after its strategy shifts; `ralphd reset " + a.IssueID + "` retries it)"
			}
			more("%-*s %3d%s", width, a.IssueID, a.Count, mark)
		}
	}

	p.printf("\n")
	if st.LastRun == nil {
		line("Last run", "none recorded by ralphd yet")
	} else {
		r := st.LastRun
		line("Last run", "%s (%s mode), %s to %s", r.RunID, r.Mode, fmtTime(r.StartedAt), fmtTime(r.EndedAt))
		more("%s on %s%s", text.Count(r.Iterations, "iteration"), text.Count(len(r.Issues), "issue"), fmtOutcomes(r.Outcomes))
		switch {
		case r.Ended:
			more("stopped: %s", r.StopReason)
		case st.Lock != nil:
			more("still running")
		default:
			more("ended without a stop record (ralphd was killed or crashed)")
		}
		more("%s", fmtCost(r.CostUSD, r.Tokens))
		if len(r.Agents) > 1 {
			for _, a := range r.Agents {
				more("agent %s: %s; %s", a.Name, text.Count(a.Iterations, "iteration"), fmtCost(a.CostUSD, a.Tokens))
			}
		}
		if r.CreatedByBuild > 0 {
			more("BUILD created %s", text.Count(r.CreatedByBuild, "issue"))
		}
		switch r.Sandbox {
		case "bwrap":
			more("BUILD agent sandboxed (bwrap)%s", fmtNetwork(r.Network, r.NetworkAllow))
		case "none":
			more("BUILD agent NOT sandboxed (see `ralphd doctor`)")
		}
		if st.Totals.Runs > 1 {
			line("All runs", "%s, %s; %s", text.Count(st.Totals.Runs, "run"), text.Count(st.Totals.Iterations, "iteration"), fmtCost(st.Totals.CostUSD, st.Totals.Tokens))
		}
	}
	if len(st.Issues) > 0 {
		line("Issues", "worked on, from history")
		width := 0
		for _, t := range st.Issues {
			width = max(width, len(t.IssueID))
		}
		for _, t := range st.Issues {
			last := t.LastOutcome
			if t.LastGate != "" {
				last += " at " + t.LastGate
			}
			more("%-*s %s, last %s; %s", width, t.IssueID, text.Count(t.Iterations, "iteration"), last, fmtCost(t.CostUSD, t.Tokens))
		}
	}
	if st.LatestReport != "" {
		line("Report", "%s", st.LatestReport)
	}

	p.printf("\n")
	if len(st.Logs) == 0 {
		line("Logs", "none yet")
	} else {
		line("Logs", "%s in %s", text.Count(len(st.Logs), "file"), filepath.Dir(st.Logs[0].Path))
		const shown = 5
		start := max(len(st.Logs)-shown, 0)
		if start > 0 {
			more("... %d older", start)
		}
		for _, l := range st.Logs[start:] {
			more("%s  %s", l.Name, fmtSize(l.Size))
		}
	}
	st.writeLayers(p)
	st.writeLegacy(p)
	st.writeWarnings(p)
	return p.err
}

// writeLayers lists the layers, each on or off, and for one that is off
// what that leaves open and how to turn it on.
func (st Status) writeLayers(p *printer) {
	if len(st.Layers) == 0 {
		return
	}
	width := 0
	for _, l := range st.Layers {
		width = max(width, len(l.Name))
	}
	p.printf("\n%-12s%s\n", "Layers", "against the BUILD agent, for a ralphd started now (`ralphd doctor` checks more)")
	pad := strings.Repeat(" ", 12+width+6)
	for _, l := range st.Layers {
		mark := "on "
		if !l.On {
			mark = "OFF"
		}
		p.printf("%12s%-*s  %s  %s\n", "", width, l.Name, mark, l.Detail)
		if l.Open != "" {
			p.printf("%sleaves open: %s\n", pad, l.Open)
		}
		if l.Fix != "" {
			p.printf("%sto turn it on: %s\n", pad, l.Fix)
		}
	}
}

// fmtNetwork says what network a sandboxed run's agent had.
func fmtNetwork(network string, allow []string) string {
	switch network {
	case "allowlist":
		if len(allow) == 0 {
			return "; network: none beyond its own loopback (an empty allowlist)"
		}
		return "; network: only through ralphd's proxy, to " + strings.Join(allow, ", ")
	case "open":
		return "; network: the host's, unfiltered (network=open)"
	}
	return ""
}

func (st Status) writeLegacy(p *printer) {
	if st.LegacyAttempts != "" {
		p.printf("\nLegacy file %s is still in the project. Run `ralphd migrate` to import its counts and remove it.\n", st.LegacyAttempts)
	}
}

func (st Status) writeWarnings(p *printer) {
	if len(st.Warnings) > 0 {
		p.printf("\n")
	}
	for _, w := range st.Warnings {
		p.printf("warning: %s\n", w)
	}
}

// printer remembers the first write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

func fmtOutcomes(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return ": " + strings.Join(parts, ", ")
}

func fmtCost(cost *float64, t agent.Tokens) string {
	c := "cost unknown"
	if cost != nil {
		c = fmt.Sprintf("cost $%.2f", *cost)
	}
	if t.IsZero() {
		return c + ", no tokens reported"
	}
	s := fmt.Sprintf("%s, tokens %d in / %d out", c, t.InputTokens, t.OutputTokens)
	if t.CacheReadTokens != 0 || t.CacheWriteTokens != 0 {
		s += fmt.Sprintf(" (cache %d read, %d written)", t.CacheReadTokens, t.CacheWriteTokens)
	}
	return s
}

func fmtSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// statusRecord is the state file name in d (whose path is dir) as parse
// reads it, for status: nil when there is none; one that cannot be read
// or parsed is a warning, and nil.
func statusRecord[T any](d *atomicfile.Dir, dir, name string, parse func([]byte) (T, error), warn func(string, ...any)) *T {
	data, err := readIn(d, name)
	switch {
	case err == nil:
		v, err := parse(data)
		if err != nil {
			warn("%s could not be parsed (%v)", filepath.Join(dir, name), err)
			return nil
		}
		return &v
	case unusable(err):
		warn("%v; ralphd will move it aside on its next run", err)
	case !errors.Is(err, fs.ErrNotExist):
		warn("%v", err)
	}
	return nil
}

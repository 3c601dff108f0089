package logjsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// OutcomeUnfinished is the Outcome of a run whose log has no run_end event:
// the run is still going, or ralphd died before it could write one.
const OutcomeUnfinished = "unfinished"

// summaryMaxLine bounds the bytes of one line Summarize looks at. loop_meta
// records are small; longer lines are agent output and are skipped.
const summaryMaxLine = 1 << 20

// RunSummary describes one run log, from its loop_meta records.
type RunSummary struct {
	Path  string // the log file
	Name  string // its base name
	RunID string // the run's ID: run_start's, else the name without .log

	// Start is the run_start timestamp, else the first event's, else the
	// time in the file name. End is the run_end timestamp, zero without one;
	// Last is the timestamp of the last event.
	Start, End, Last time.Time

	SchemaVersion int // 0 for logs without run_start (the bash loop's)
	Mode          string
	Agent         string
	Version       string // ralphd's version
	ProjectID     string
	MaxIterations int

	// Iterations is run_end's count, else the highest iteration number seen.
	Iterations int
	// Failed counts iteration_end events whose outcome is not "ok" (or,
	// without an outcome, whose exit code is not 0).
	Failed int
	// Outcome is run_end's outcome, or OutcomeUnfinished.
	Outcome string
	Reason  string   // run_end's reason
	CostUSD *float64 // run_end's cost, else the sum of the iterations' costs, nil if none reported
	Stuck   int      // stuck events
	Denials int      // bd_call events with allowed=false, and violation events

	Size     int64 // bytes
	BadLines int   // lines that are not JSON, such as a truncated last line
}

// ListRuns summarises every .log file in dir, oldest first (by the time in
// the file name, as Prune orders them). A missing dir has no runs. A file
// that cannot be read is listed with only its name, size and Outcome set to
// an error text; damaged content is tolerated (see Summarize).
func ListRuns(dir string) ([]RunSummary, error) {
	files, _, err := listLogFiles(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	runs := make([]RunSummary, 0, len(files))
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		s, err := Summarize(path)
		if err != nil {
			s = RunSummary{Path: path, Name: f.name, RunID: strings.TrimSuffix(f.name, ".log"), Start: f.t, Outcome: "unreadable: " + err.Error()}
		}
		runs = append(runs, s)
	}
	return runs, nil
}

// Summarize reads the run log at path. It reads only loop_meta records and
// tolerates anything else: lines that are not JSON are counted in BadLines,
// a missing run_end leaves Outcome as OutcomeUnfinished.
func Summarize(path string) (RunSummary, error) {
	// Never through a link, never blocking on a FIFO.
	f, err := atomicfile.Open(path)
	if err != nil {
		return RunSummary{}, fmt.Errorf("open run log: %w", err)
	}
	defer f.Close()
	s := RunSummary{Path: path, Name: filepath.Base(path), Outcome: OutcomeUnfinished}
	if err := s.read(f); err != nil {
		return RunSummary{}, fmt.Errorf("read run log %s: %w", s.Name, err)
	}
	if s.RunID == "" {
		s.RunID = strings.TrimSuffix(s.Name, ".log")
	}
	if s.Start.IsZero() {
		if t, _, ok := parseLogName(s.Name); ok {
			s.Start = t
		}
	}
	return s, nil
}

func (s *RunSummary) read(r io.Reader) error {
	lr := newLineReader(r, summaryMaxLine)
	var (
		sawEnd   bool
		iterCost *float64
		maxIter  int
	)
	for {
		line, total, err := lr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return err
			}
			if rest, n := lr.rest(); n > 0 {
				s.Size += int64(n)
				if n > len(rest) || !text.ValidJSON(rest) {
					s.BadLines++
				}
			}
			break
		}
		s.Size += int64(total) + 1
		if total > len(line) {
			continue // an over-long line: agent output
		}
		if !bytes.Contains(line, []byte(`"loop_meta"`)) {
			if !text.ValidJSON(line) {
				s.BadLines++
			}
			continue
		}
		if !text.ValidJSON(line) {
			s.BadLines++
			continue
		}
		rec := gjson.ParseBytes(line)
		if rec.Get("type").String() != TypeMeta {
			continue
		}
		data := rec.Get("data")
		ts, _ := time.Parse(time.RFC3339, rec.Get("timestamp").String())
		if !ts.IsZero() {
			if s.Start.IsZero() {
				s.Start = ts
			}
			s.Last = ts
		}
		switch rec.Get("event").String() {
		case EventRunStart:
			if !ts.IsZero() {
				s.Start = ts
			}
			s.SchemaVersion = int(data.Get("schema_version").Int())
			s.RunID = data.Get("run_id").String()
			s.Mode = data.Get("mode").String()
			s.Agent = data.Get("agent").String()
			s.Version = data.Get("ralphd_version").String()
			s.ProjectID = data.Get("project_id").String()
			s.MaxIterations = int(data.Get("max_iterations").Int())
		case EventIterationStart:
			maxIter = max(maxIter, int(data.Get("iteration").Int()))
			if s.Mode == "" {
				s.Mode = data.Get("mode").String()
			}
		case EventIterationEnd:
			maxIter = max(maxIter, int(data.Get("iteration").Int()))
			if outcome := data.Get("outcome"); outcome.Exists() {
				if outcome.String() != "ok" {
					s.Failed++
				}
			} else if data.Get("exit_code").Int() != 0 {
				s.Failed++
			}
			if c := data.Get("cost_usd"); c.Type == gjson.Number {
				sum := c.Float()
				if iterCost != nil {
					sum += *iterCost
				}
				iterCost = &sum
			}
		case EventStuck:
			s.Stuck++
		case EventBDCall:
			if a := data.Get("allowed"); a.Exists() && !a.Bool() {
				s.Denials++
			}
		case EventViolation:
			s.Denials++
		case EventRunEnd:
			sawEnd = true
			s.End = ts
			s.Iterations = int(data.Get("iterations").Int())
			s.Outcome = data.Get("outcome").String()
			s.Reason = data.Get("reason").String()
			if c := data.Get("cost_usd"); c.Type == gjson.Number {
				cost := c.Float()
				s.CostUSD = &cost
			}
		}
	}
	if !sawEnd {
		s.Iterations = maxIter
	}
	if s.CostUSD == nil {
		s.CostUSD = iterCost
	}
	if sawEnd && s.Outcome == "" {
		s.Outcome = "ended"
	}
	return nil
}

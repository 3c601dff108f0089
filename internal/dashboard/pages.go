package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

var funcs = template.FuncMap{
	"ago": func(t, now time.Time) string {
		if t.IsZero() {
			return ""
		}
		return now.Sub(t).Round(time.Second).String()
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("15:04:05")
	},
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04")
	},
	"usd": func(c *float64) string {
		if c == nil {
			return "–"
		}
		return fmt.Sprintf("$%.4f", *c)
	},
	"usdf":   func(c float64) string { return fmt.Sprintf("$%.4f", c) },
	"secs":   func(s float64) string { return (time.Duration(s) * time.Second).String() },
	"colour": func(st string) string { return palette[st] },
	"deref":  func(b *bool) bool { return b != nil && *b },
}

// page is the data every full page gets.
type page struct {
	Title   string
	Project string
	Body    any
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		s.opts.Log.Error("dashboard template", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// graphView is the graph panel: an SVG laid out by dot, or the list
// fallback with the reason.
type graphView struct {
	SVG      template.HTML
	Nodes    []Node
	Fallback string
	Err      string
	States   []string
}

func (s *Server) graphData(ctx context.Context) graphView {
	g := graphView{States: States}
	if s.opts.Sources.Issues == nil {
		g.Err = "no tracker"
		return g
	}
	issues, err := s.opts.Sources.Issues(ctx)
	if err != nil {
		g.Err = "cannot read the tracker: " + err.Error()
		return g
	}
	g.Nodes = Nodes(issues, s.opts.Sources.StuckLabel)
	// An issue a worker is on is in progress, whether or not its agent
	// has said so to bd yet.
	working := map[string]bool{}
	for _, w := range s.live.snapshot().Workers {
		if w.Busy() && w.IssueID != "" {
			working[w.IssueID] = true
		}
	}
	for i, n := range g.Nodes {
		if working[n.ID] && (n.State == StateReady || n.State == StateBlocked) {
			g.Nodes[i].State = StateInProgress
		}
	}
	if !s.HasDot() {
		g.Fallback = "Graphviz dot is not installed (Debian: apt-get install graphviz), so the issues are listed instead of drawn."
		return g
	}
	svg, err := s.graph.svg(ctx, g.Nodes)
	if err != nil {
		g.Fallback = "Graphviz dot failed, so the issues are listed instead of drawn: " + err.Error()
		s.opts.Log.Warn("dashboard graph", "err", err)
		return g
	}
	// dot's SVG holds only what DOT() gave it, reduced by dotSafe.
	g.SVG = template.HTML(svg)
	return g
}

type indexView struct {
	Now   Now
	Graph graphView
	Cost  costView
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	s.render(w, "index.html", page{Title: "ralphd", Project: s.opts.Project, Body: indexView{
		Now: s.nowData(), Graph: s.graphData(r.Context()), Cost: s.costData(),
	}})
}

func (s *Server) nowData() Now {
	n := s.live.snapshot()
	if s.controlsOn() {
		n.Controls, n.CSRF, n.Paused = true, s.csrfToken(), s.opts.Control.Paused()
	}
	if s.opts.Sources.Fleet != nil {
		n.Fleet = s.opts.Sources.Fleet()
	}
	if !n.Live {
		if s.opts.Sources.LogsDir != "" {
			evs := recordedEvents(s.opts.Sources.LogsDir, lastEvents)
			n.Events = n.Events[:0]
			for i := len(evs) - 1; i >= 0; i-- {
				n.Events = append(n.Events, Line{Time: evs[i].Time, Event: evs[i].Name, Text: describe(evs[i])})
			}
		}
		n.State = "not running"
		n.Reason = "`ralphd serve` shows what is recorded; start `ralphd daemon --http ADDR` for a live view"
	}
	return n
}

func (s *Server) nowFragment(w http.ResponseWriter, r *http.Request) {
	s.render(w, "now", s.nowData())
}

func (s *Server) graphFragment(w http.ResponseWriter, r *http.Request) {
	s.render(w, "graph", s.graphData(r.Context()))
}

// events streams server-sent events: "now" with the panel's HTML after
// each loop event, "graph" with the graph's HTML when an iteration starts
// or ends, and "cost" with the cost panel's after an iteration ends.
// Only a keep-alive comment is sent while nothing happens.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	ch, unsub := s.live.subscribe()
	defer unsub()
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	send := func(name, tmpl string, data any) bool {
		var buf bytes.Buffer
		if err := s.tmpl.ExecuteTemplate(&buf, tmpl, data); err != nil {
			return false
		}
		fmt.Fprintf(w, "event: %s\n", name)
		for _, line := range strings.Split(buf.String(), "\n") {
			fmt.Fprintf(w, "data: %s\n", line)
		}
		_, err := fmt.Fprint(w, "\n")
		fl.Flush()
		return err == nil
	}
	if !send("now", "now", s.nowData()) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		case kind := <-ch:
			if !send("now", "now", s.nowData()) {
				return
			}
			if (kind == "graph" || kind == "end") && !send("graph", "graph", s.graphData(r.Context())) {
				return
			}
			if kind == "end" && !send("cost", "cost", s.costData()) {
				return
			}
		}
	}
}

// runView is one run from history, with links to its report and log.
type runView struct {
	RunID      string
	Mode       string
	Started    time.Time
	Duration   float64
	Iterations int
	Outcome    string
	CostUSD    *float64
	Tokens     int64
	Report     string // file name under reports, "" if none
	Log        string // file name under logs, "" if none
}

type runsView struct {
	Runs []runView
	Logs []logjsonl.RunSummary
	Err  string
}

func (s *Server) runsData() runsView {
	var v runsView
	src := s.opts.Sources
	if src.History != nil {
		recs, err := src.History()
		if err != nil {
			v.Err = err.Error()
		}
		byID := map[string]*runView{}
		var order []string
		for _, r := range recs {
			rv := byID[r.RunID]
			if rv == nil {
				rv = &runView{RunID: r.RunID, Mode: r.Mode, Started: r.StartedAt}
				byID[r.RunID] = rv
				order = append(order, r.RunID)
			}
			if r.IsIteration() {
				rv.Iterations++
				if r.CostUSD != nil {
					c := *r.CostUSD
					if rv.CostUSD != nil {
						c += *rv.CostUSD
					}
					rv.CostUSD = &c
				}
				rv.Tokens += r.Tokens.Total()
			} else {
				rv.Outcome, rv.Duration = r.StopReason, r.DurationSeconds
				if !r.StartedAt.IsZero() {
					rv.Started = r.StartedAt
				}
			}
		}
		for i := len(order) - 1; i >= 0; i-- {
			rv := byID[order[i]]
			if validName(rv.RunID) && src.ReportsDir != "" {
				if _, err := os.Stat(filepath.Join(src.ReportsDir, rv.RunID+".md")); err == nil {
					rv.Report = rv.RunID + ".md"
				}
			}
			if validName(rv.RunID) && src.LogsDir != "" {
				if _, err := os.Stat(filepath.Join(src.LogsDir, rv.RunID+".log")); err == nil {
					rv.Log = rv.RunID + ".log"
				}
			}
			v.Runs = append(v.Runs, *rv)
		}
	}
	if src.LogsDir != "" {
		logs, err := logjsonl.ListRuns(src.LogsDir)
		if err != nil && v.Err == "" {
			v.Err = err.Error()
		}
		for i := len(logs) - 1; i >= 0; i-- {
			v.Logs = append(v.Logs, logs[i])
		}
	}
	return v
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	s.render(w, "runs.html", page{Title: "runs", Project: s.opts.Project, Body: s.runsData()})
}

// nameRE is what a log, report or issue name may look like in a URL: no
// slashes, no leading dot, so no path leaves its directory.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,200}$`)

func validName(n string) bool { return nameRE.MatchString(n) && !strings.Contains(n, "..") }

type textView struct {
	Name, Text string
}

// maxShown bounds the bytes of one log or report rendered into a page.
const maxShown = 4 << 20

func (s *Server) runLog(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !validName(name) || !strings.HasSuffix(name, ".log") || s.opts.Sources.LogsDir == "" {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(filepath.Join(s.opts.Sources.LogsDir, name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	var buf bytes.Buffer
	if err := logjsonl.Render(&limitWriter{w: &buf, n: maxShown}, f, logjsonl.RenderOptions{}); err != nil {
		fmt.Fprintf(&buf, "\n[rendering stopped: %v]\n", err)
	}
	s.render(w, "text.html", page{Title: name, Project: s.opts.Project, Body: textView{Name: name, Text: buf.String()}})
}

func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if !validName(name) || !strings.HasSuffix(name, ".md") || s.opts.Sources.ReportsDir == "" {
		http.NotFound(w, r)
		return
	}
	b, err := readBounded(filepath.Join(s.opts.Sources.ReportsDir, name), maxShown)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	s.render(w, "text.html", page{Title: name, Project: s.opts.Project, Body: textView{Name: name, Text: string(b)}})
}

func readBounded(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	if len(p) > l.n {
		l.w.Write(p[:l.n])
		l.w.WriteString("\n[truncated]\n")
		l.n = 0
		return len(p), nil
	}
	l.n -= len(p)
	return l.w.Write(p)
}

type issueView struct {
	Controls bool
	CSRF     string
	ID       string
	Title    string
	State    string
	Notes    string
	Attempts int
	MaxStuck int
	Records  []state.Record
	Err      string
}

func (s *Server) issue(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validName(id) {
		http.NotFound(w, r)
		return
	}
	v := issueView{ID: id, MaxStuck: s.opts.Sources.MaxStuck}
	if s.controlsOn() {
		v.Controls, v.CSRF = true, s.csrfToken()
	}
	src := s.opts.Sources
	if src.Issues != nil {
		issues, err := src.Issues(r.Context())
		if err != nil {
			v.Err = err.Error()
		}
		for _, n := range Nodes(issues, src.StuckLabel) {
			if n.ID == id {
				v.Title, v.State = n.Title, n.State
			}
		}
		for _, is := range issues {
			if is.ID == id {
				v.Notes = is.Notes
			}
		}
	}
	if src.Attempt != nil {
		v.Attempts, _ = src.Attempt(id)
	}
	if src.History != nil {
		recs, _ := src.History()
		for _, rec := range recs {
			if rec.IssueID == id && rec.IsIteration() {
				v.Records = append(v.Records, rec)
			}
		}
	}
	s.render(w, "issue.html", page{Title: id, Project: s.opts.Project, Body: v})
}

type costView struct {
	Chart template.HTML
	Days  []Day
	Total Point
}

func (s *Server) costData() costView {
	var v costView
	if s.opts.Sources.History == nil {
		return v
	}
	recs, err := s.opts.Sources.History()
	if err != nil {
		return v
	}
	pts, days := costSeries(recs)
	v.Chart = costChart(pts)
	sort.Slice(days, func(i, j int) bool { return days[i].Date > days[j].Date })
	v.Days = days
	if len(pts) > 0 {
		v.Total = pts[len(pts)-1]
	}
	return v
}

func (s *Server) cost(w http.ResponseWriter, r *http.Request) {
	s.render(w, "cost.html", page{Title: "cost", Project: s.opts.Project, Body: s.costData()})
}

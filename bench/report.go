package bench

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Verdict says whether a figure met its goal.
type Verdict string

// The verdicts. A figure without a goal is Info.
const (
	Met    Verdict = "met"
	Missed Verdict = "MISSED"
	Info   Verdict = "-"
)

// Judge returns Met when ok, Missed otherwise.
func Judge(ok bool) Verdict {
	if ok {
		return Met
	}
	return Missed
}

// Figure is one measured number, with the command that produced it.
type Figure struct {
	ID      string  // short key, e.g. "1a"
	Name    string  // what it is
	Value   string  // the measured value, formatted
	Goal    string  // the goal, or "" when there is none
	Verdict Verdict // whether the goal was met
	Command string  // the command (or commands) that produced it
}

// Section is one part of the report: its figures and a Markdown body with
// the method, the details and, for any miss, the explanation.
type Section struct {
	Title   string
	Figures []Figure
	Body    string
}

// Report is the whole benchmark report.
type Report struct {
	Title    string
	Preamble string // Markdown after the title: how, where and when it ran
	Sections []Section
}

// Table renders every figure as an aligned plain-text table for a
// terminal.
func (r Report) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tfigure\tvalue\tgoal\tresult")
	for _, s := range r.Sections {
		for _, f := range s.Figures {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.ID, clip(f.Name, tableName), f.Value, dash(f.Goal), verdictOf(f))
		}
	}
	_ = tw.Flush()
	return b.String()
}

// Markdown renders the report as docs/benchmarks.md: a summary table of every
// figure, then one section each with its figures, their commands and its
// body.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", r.Title)
	if r.Preamble != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(r.Preamble))
	}
	b.WriteString("## Summary\n\n")
	b.WriteString("| # | Figure | Value | Goal | Result |\n|---|---|---|---|---|\n")
	for _, s := range r.Sections {
		for _, f := range s.Figures {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.ID, cell(f.Name), cell(f.Value), cell(dash(f.Goal)), verdictOf(f))
		}
	}
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "\n## %s\n\n", s.Title)
		if len(s.Figures) > 0 {
			b.WriteString("| # | Figure | Value | Goal | Result |\n|---|---|---|---|---|\n")
			for _, f := range s.Figures {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", f.ID, cell(f.Name), cell(f.Value), cell(dash(f.Goal)), verdictOf(f))
			}
			b.WriteString("\nCommands:\n\n")
			for _, g := range groupCommands(s.Figures) {
				fmt.Fprintf(&b, "- %s:\n\n  ```sh\n%s\n  ```\n", strings.Join(g.ids, ", "), indent(g.command, "  "))
			}
		}
		if body := strings.TrimSpace(s.Body); body != "" {
			fmt.Fprintf(&b, "\n%s\n", body)
		}
	}
	return b.String()
}

// tableName is how many characters of a figure's name the terminal table
// shows.
const tableName = 64

// clip shortens s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// commandGroup is one command and the figures it produced.
type commandGroup struct {
	ids     []string
	command string
}

// groupCommands lists each distinct command once, in the order of the
// first figure it produced, with every figure it produced.
func groupCommands(fs []Figure) []commandGroup {
	var gs []commandGroup
	idx := map[string]int{}
	for _, f := range fs {
		c := strings.TrimSpace(f.Command)
		if c == "" {
			continue
		}
		if i, ok := idx[c]; ok {
			gs[i].ids = append(gs[i].ids, f.ID)
			continue
		}
		idx[c] = len(gs)
		gs = append(gs, commandGroup{ids: []string{f.ID}, command: c})
	}
	return gs
}

func verdictOf(f Figure) Verdict {
	if f.Verdict == "" {
		return Info
	}
	return f.Verdict
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell escapes a table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

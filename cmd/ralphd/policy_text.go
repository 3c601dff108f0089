package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"

	"github.com/ralphd/ralphd/internal/guard"
)

// defaultWidth is the width `ralphd policy` fits when stdout is not a
// terminal.
const defaultWidth = 80

// outputWidth is the terminal's width when w is one, else defaultWidth.
func outputWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && isTerminal(w) {
		if width, _, err := term.GetSize(f.Fd()); err == nil && width >= 40 {
			return width
		}
	}
	return defaultWidth
}

// writePolicyText prints the policy table fitted to width: one line per
// command with its BUILD and PLAN verdicts and rule (a long command wraps
// in its column), then its note, wrapped and indented.
func writePolicyText(w io.Writer, rows []guard.TableRow, width int) error {
	const gap = 2
	build, plan, rule := len("BUILD"), len("PLAN"), len("RULE")
	for _, r := range rows {
		build, plan, rule = max(build, len(r.Build)), max(plan, len(r.Plan)), max(rule, len(r.Rule))
	}
	cmdWidth := max(width-build-plan-rule-3*gap, 16)
	var b strings.Builder
	line := func(cmd, bv, pv, rv string) {
		fmt.Fprintf(&b, "%-*s%*s%-*s%*s%-*s%*s%s\n", cmdWidth, cmd, gap, "", build, bv, gap, "", plan, pv, gap, "", rv)
	}
	line("COMMAND", "BUILD", "PLAN", "RULE")
	for _, r := range rows {
		cmd := wrap(r.Command, cmdWidth)
		line(cmd[0], r.Build, r.Plan, r.Rule)
		for _, c := range cmd[1:] {
			fmt.Fprintf(&b, "  %s\n", c)
		}
		for _, n := range wrap(r.Note, width-4) {
			fmt.Fprintf(&b, "    %s\n", n)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write policy table: %w", err)
	}
	return nil
}

// wrap breaks s into lines of at most width bytes at spaces; a word longer
// than width gets a line of its own. It returns at least one line.
func wrap(s string, width int) []string {
	width = max(width, 1)
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case len(cur)+1+len(word) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = word
		}
	}
	return append(lines, cur)
}

package guard

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// TableRow is one row of the policy table printed by `ralphd policy` and
// in the README.
type TableRow struct {
	Command string // e.g. "bd update --priority, -p"
	Build   string // "allowed", "allowed (limited)" or "refused"
	Plan    string // always "allowed"
	Rule    string // the deciding rule ID
	Note    string // why, and what to do instead
}

// Table returns the policy as rows, generated from the same data Decide
// uses: one row per listed command, one per group of refused flags, and
// rows for everything else.
func Table() []TableRow {
	var rows []TableRow
	for _, p := range policy {
		rows = append(rows, commandRow(p))
		if p.allow {
			rows = append(rows, refusedFlagRows(p)...)
		}
	}
	// BUILD's powers over issues other than its own (powers.go).
	rows = append(rows,
		refusedRow("bd update <another issue> --status, --assignee or --claim; bd assign, bd close or bd reopen (of an unclosed one) "+
			"<another issue>; bd close --claim-next; bd ready --claim", RuleOtherIssue),
		refusedRow(fmt.Sprintf("bd create or bd q with a priority above the iteration's issue's (without -p: P%d)", DefaultCreatePriority),
			RuleCreatePriority),
		refusedRow("bd create or bd q <beyond max_creates in one iteration>", RuleCreateCap))
	for _, id := range []string{RuleElsewhere, RuleNotAllowed, RuleFlag, RuleUnknownCommand, RuleUnknownFlag, RuleBadArgv, RuleDynamic} {
		r := ruleByID(id)
		rows = append(rows, TableRow{Command: catchAll[id], Build: "refused", Plan: "allowed", Rule: id,
			Note: sentence(r.Reason)})
	}
	return append(rows, forgeRows()...)
}

// forgeRows are the rows of the forge verbs (forge.go), refused in both
// modes, and of the forge CLI calls the guard leaves alone.
func forgeRows() []TableRow {
	var rows []TableRow
	for _, v := range forgeVerbs() {
		row := refusedRow(v.name(), RuleForgeMerge)
		row.Plan = "refused"
		var notes []string
		if v.note != "" {
			notes = append(notes, sentence(v.note))
		}
		if ps := v.prefixes(); len(ps) > 1 {
			notes = append(notes, "Also "+strings.Join(ps[1:], ", ")+".")
		}
		if len(notes) > 0 {
			row.Note = strings.Join(notes, " ") + " " + row.Note
		}
		rows = append(rows, row)
	}
	r := ruleByID(RuleForgeOther)
	return append(rows, TableRow{Command: "any other gh, tea, glab or hub call (gh pr view, gh pr checks, gh pr diff, api reads)",
		Build: "allowed", Plan: "allowed", Rule: r.ID, Note: sentence(r.Reason)})
}

// flagGroup names a long list of refused flags in the command column.
var flagGroup = map[string]string{
	RuleCreateFlag:  "<bulk, explicit-ID and infrastructure flags>",
	RuleUpdateField: "<other fields>",
}

// catchAll names the calls the catch-all rules cover.
var catchAll = map[string]string{
	RuleElsewhere:      "bd --db, --directory/-C or --global, or any bd call from outside the work tree",
	RuleNotAllowed:     "any other bd command",
	RuleFlag:           "any other flag of a limited command",
	RuleUnknownCommand: "a command bd does not have",
	RuleUnknownFlag:    "a flag the command does not have",
	RuleBadArgv:        "a malformed command line",
	RuleDynamic:        "a command or flag name, or a checked value, computed at run time (hook)",
}

func commandRow(p commandPolicy) TableRow {
	r := ruleByID(p.rule)
	row := TableRow{Command: displayCommand(p.path), Plan: "allowed", Rule: r.ID}
	if !p.allow {
		row.Build = "refused"
		row.Note = sentence(r.Reason)
		if p.note != "" {
			row.Note += " " + sentence(p.note)
		}
		return row
	}
	row.Build = "allowed"
	var notes []string
	if p.note != "" {
		notes = append(notes, sentence(p.note))
	}
	switch {
	case p.flags != allFlags:
		row.Build = "allowed (limited)"
		var fs []string
		for _, f := range strings.Fields(p.flags) {
			if p.allows(f) { // a protected field's flag is refused by its row
				fs = append(fs, displayFlag(p.path, f))
			}
		}
		notes = append(notes, "Only "+strings.Join(fs, ", ")+", and global flags.")
	case len(p.refuse) > 0 || len(p.values) > 0 || len(p.require) > 0:
		row.Build = "allowed (limited)"
		notes = append(notes, "All its flags except those refused below.")
	case len(p.labelFlags) > 0 || p.labelArg:
		row.Build = "allowed (limited)"
		notes = append(notes, "Any label but "+strings.Join(ReservedLabels(), ", ")+".")
	}
	if len(notes) == 0 {
		if r.ID == RuleRead {
			notes = append(notes, "Read-only.")
		} else {
			notes = append(notes, sentence(r.Reason))
		}
	}
	row.Note = strings.Join(notes, " ")
	return row
}

// refusedFlagRows lists the refused flags and values of an allowed
// command, one row per rule.
func refusedFlagRows(p commandPolicy) []TableRow {
	byRule := map[string][]string{}
	for f, rule := range p.refuse {
		byRule[rule] = append(byRule[rule], f)
	}
	ids := make([]string, 0, len(byRule))
	for id := range byRule {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var rows []TableRow
	for _, id := range ids {
		flags := byRule[id]
		sort.Strings(flags)
		var shown []string
		for _, f := range flags {
			shown = append(shown, displayFlag(p.path, f))
		}
		if len(shown) <= 3 {
			rows = append(rows, refusedRow(commandName(p.path)+" "+strings.Join(shown, ", "), id))
			continue
		}
		row := refusedRow(commandName(p.path)+" "+flagGroup[id], id)
		row.Note = "Flags " + strings.Join(shown, ", ") + ". " + row.Note
		rows = append(rows, row)
	}
	valueFlags := make([]string, 0, len(p.values))
	for flag := range p.values {
		valueFlags = append(valueFlags, flag)
	}
	sort.Strings(valueFlags)
	for _, flag := range valueFlags {
		values := p.values[flag]
		cmd := commandName(p.path) + " " + displayFlag(p.path, flag)
		if flag == "status" {
			rows = append(rows, refusedRow(cmd+" closed", RuleStatusClosed))
		}
		rule := RuleStatus
		if r, ok := p.valueRule[flag]; ok {
			rule = r
		}
		rows = append(rows, refusedRow(cmd+" other than "+strings.Join(values, ", "), rule))
	}
	for _, flag := range p.require {
		rows = append(rows, refusedRow(commandName(p.path)+" without a non-empty --"+flag, RuleCloseReason))
	}
	for _, l := range ReservedLabels() {
		for _, flag := range p.labelFlags {
			rows = append(rows, refusedRow(commandName(p.path)+" "+displayFlag(p.path, flag)+" "+l, RuleReservedLabel))
		}
		if p.labelArg {
			rows = append(rows, refusedRow(commandName(p.path)+" <id> "+l, RuleReservedLabel))
		}
	}
	return rows
}

func refusedRow(cmd, rule string) TableRow {
	r := ruleByID(rule)
	note := sentence(r.Reason)
	if r.Instead != "" {
		note += " Instead: " + sentence(r.Instead)
	}
	return TableRow{Command: cmd, Build: "refused", Plan: "allowed", Rule: rule, Note: note}
}

// displayCommand renders a command path with its aliases, e.g.
// "bd show (view)".
func displayCommand(path string) string {
	name := commandName(path)
	c := lookup(path)
	if c == nil || path == "" {
		return name
	}
	parent := lookup(parentOf(path))
	var aliases []string
	for a, child := range parent.children {
		if child == c && a != c.name {
			aliases = append(aliases, a)
		}
	}
	if len(aliases) == 0 {
		return name
	}
	slices.Sort(aliases)
	return name + " (" + strings.Join(aliases, ", ") + ")"
}

// displayFlag renders a flag with its shorthand, e.g. "--priority/-p".
func displayFlag(path, long string) string {
	c := lookup(path)
	if c != nil {
		if f, ok := c.flags[long]; ok && f.short != 0 {
			return "--" + long + "/-" + string(f.short)
		}
	}
	return "--" + long
}

func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// TableFormat selects how WriteTable renders the table.
type TableFormat int

// Table formats.
const (
	TableText     TableFormat = iota // aligned plain-text columns
	TableMarkdown                    // a GitHub markdown table
)

// WriteTable writes the policy table in the given format.
func WriteTable(w io.Writer, format TableFormat) error {
	rows := Table()
	switch format {
	case TableMarkdown:
		var b strings.Builder
		b.WriteString("| command | BUILD | PLAN | rule | note |\n|---|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s |\n",
				mdCell(r.Command), mdCell(r.Build), mdCell(r.Plan), mdCell(r.Rule), mdCell(r.Note))
		}
		_, err := io.WriteString(w, b.String())
		if err != nil {
			return fmt.Errorf("write policy table: %w", err)
		}
		return nil
	case TableText:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "COMMAND\tBUILD\tPLAN\tRULE\tNOTE")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Command, r.Build, r.Plan, r.Rule, r.Note)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write policy table: %w", err)
		}
		return nil
	}
	return fmt.Errorf("write policy table: unknown format %d", format)
}

// mdCell escapes a markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

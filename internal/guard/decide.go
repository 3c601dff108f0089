package guard

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Decision is the policy's verdict on one bd call.
type Decision struct {
	Allowed bool
	Rule    string // the rule ID that decided
	Reason  string // why, naming the part of the call that decided
	Instead string // for a refusal, what to do instead
	Mode    Mode
	Argv    []string // the call's arguments, without the program name
	Command string   // the canonical command path ("dep remove"), when known

	line string // the call as a shell command line, when it came from shell text
}

// Decide applies the policy of mode to one bd call. argv holds the
// arguments after the program name, exactly as bd would receive them.
// PLAN allows everything; BUILD allows only what the policy lists, and
// refuses unknown commands, unknown flags and malformed command lines.
func Decide(mode Mode, argv []string) Decision {
	return decide(mode, staticArgs(argv))
}

// decide is Decide over arguments that may be partly unknown until run
// time (from shell analysis).
func decide(mode Mode, args []arg) Decision {
	d := Decision{Mode: mode, Argv: make([]string, len(args))}
	line := "bd"
	for i, a := range args {
		if a.kind == argStatic {
			d.Argv[i] = a.text
			line += " " + bashQuote(a.text)
			continue
		}
		d.Argv[i] = a.src
		line += " " + a.src
	}
	d.line = line
	if !mode.Valid() {
		return d.refuse(RuleUnknownMode, fmt.Sprintf("mode %q", string(mode)))
	}
	p, err := parseArgs(args)
	if p.cmd != nil {
		d.Command = p.cmd.path
	}
	if mode == ModePlan {
		return d.allow(RulePlanAll, "")
	}
	switch {
	case errors.Is(err, errDynamic):
		return d.refuse(RuleDynamic, err.Error())
	case err != nil:
		return d.refuse(RuleBadArgv, err.Error())
	}
	if p.dynChild && !childrenAllowed(p.cmd) {
		return d.refuse(RuleDynamic, fmt.Sprintf("the subcommand of `%s` is computed at run time", commandName(p.cmd.path)))
	}
	if p.cmd == grammar && len(p.pos) > 0 {
		if len(p.unknown) > 0 {
			// bd reports the unknown flag first (it took the command name
			// as the flag's value).
			return d.refuse(RuleUnknownFlag, fmt.Sprintf("`%s` on `bd`", p.unknown[0]))
		}
		return d.refuse(RuleUnknownCommand, fmt.Sprintf("`bd %s`", p.pos[0].src))
	}
	pol, ok := policyFor(p.cmd.path)
	if !ok {
		return d.refuse(RuleNotAllowed, "`"+commandName(p.cmd.path)+"`")
	}
	if !pol.allow {
		return d.refuse(pol.rule, "`"+commandName(p.cmd.path)+"`")
	}
	if refused, ok := checkFlags(d, pol, p); ok {
		return refused
	}
	if len(p.unknown) > 0 {
		return d.refuse(RuleUnknownFlag, fmt.Sprintf("`%s` on `%s`", p.unknown[0], commandName(p.cmd.path)))
	}
	if refused, ok := checkLabels(d, pol, p); ok {
		return refused
	}
	for _, name := range pol.require {
		if !hasNonBlank(p, name) {
			return d.refuse(RuleCloseReason, fmt.Sprintf("`%s` without a non-empty --%s", commandName(p.cmd.path), name))
		}
	}
	if p.wild && (pol.restricted() || len(p.cmd.children) > 0) {
		return d.refuse(RuleDynamic, fmt.Sprintf("arguments of `%s` are only known at run time", commandName(p.cmd.path)))
	}
	if rule, ok := hiddenAfterDash(mode, args); ok {
		return d.refuse(rule, "a flag after `--`, which bd takes for an issue id, not a flag")
	}
	return d.allow(pol.rule, "`"+commandName(p.cmd.path)+"`")
}

// genericRules refuse a call for its form, not for what it would change.
var genericRules = []string{RuleUnknownFlag, RuleFlag, RuleBadArgv, RuleDynamic, RuleUnknownCommand, RuleNotAllowed}

// hiddenAfterDash reports the rule that would refuse args were their
// `--` separators not there, when that rule protects something. After
// `--` bd reads `--priority 0` as two issue ids and changes nothing, but
// the agent meant the change, and a bd that parsed it differently would
// make it: the guard refuses it, with the advice for the change meant.
// A call refused only for its form (`-- -5 degrees`: no flag -5) is what
// `--` is for, and stays allowed.
func hiddenAfterDash(mode Mode, args []arg) (string, bool) {
	var without []arg
	for _, a := range args {
		if a.kind == argStatic && a.text == "--" {
			continue
		}
		without = append(without, a)
	}
	if len(without) == len(args) {
		return "", false
	}
	d := decide(mode, without)
	if d.Allowed || slices.Contains(genericRules, d.Rule) {
		return "", false
	}
	return d.Rule, true
}

// checkFlags applies the per-flag rules. It returns the refusal and true
// when a flag is refused.
func checkFlags(d Decision, pol commandPolicy, p parsedCall) (Decision, bool) {
	for _, u := range p.uses {
		name := u.spec.long
		what := fmt.Sprintf("`%s` on `%s`", u.written, commandName(p.cmd.path))
		if u.written != "--"+name && !strings.HasPrefix(u.written, "--"+name+"=") {
			what = fmt.Sprintf("`%s` (--%s) on `%s`", u.written, name, commandName(p.cmd.path))
		}
		if slices.Contains(trackerFlags, name) && !p.cmd.local[name] {
			return d.refuse(RuleElsewhere, what), true
		}
		if isGlobalFlag(name) {
			continue
		}
		if rule, ok := pol.refuse[name]; ok {
			return d.refuse(rule, what), true
		}
		if !pol.allows(name) {
			return d.refuse(RuleFlag, what), true
		}
		allowed, ok := pol.values[name]
		if !ok {
			continue
		}
		if u.dynamic {
			return d.refuse(RuleDynamic, what+": the value is computed at run time"), true
		}
		if !slices.Contains(allowed, u.value) {
			rule := RuleStatus
			if r, ok := pol.valueRule[name]; ok {
				rule = r
			}
			if name == "status" && strings.EqualFold(strings.TrimSpace(u.value), "closed") {
				rule = RuleStatusClosed
			}
			return d.refuse(rule, fmt.Sprintf("%s with value %q", what, u.value)), true
		}
	}
	return Decision{}, false
}

// checkLabels refuses a call that would add a reserved label: through a
// flag that adds labels, or as a positional of a command that takes the
// label as one (an issue id is never a reserved label). It returns the
// refusal and true when it refuses.
func checkLabels(d Decision, pol commandPolicy, p parsedCall) (Decision, bool) {
	cmd := commandName(p.cmd.path)
	for _, u := range p.uses {
		if !slices.Contains(pol.labelFlags, u.spec.long) {
			continue
		}
		what := fmt.Sprintf("`%s` on `%s`", u.written, cmd)
		if u.dynamic {
			return d.refuse(RuleDynamic, what+": the labels are computed at run time"), true
		}
		if l := reservedIn(u.value); l != "" {
			return d.refuse(RuleReservedLabel, fmt.Sprintf("%s adding %q", what, l)), true
		}
	}
	if !pol.labelArg {
		return Decision{}, false
	}
	for i, a := range p.pos {
		if a.hasMark(a.text) {
			if i == len(p.pos)-1 { // the label: bd takes the last one
				return d.refuse(RuleDynamic, fmt.Sprintf("the label of `%s` is computed at run time", cmd)), true
			}
			continue
		}
		if l := reservedIn(a.text); l != "" {
			return d.refuse(RuleReservedLabel, fmt.Sprintf("`%s` adding %q", cmd, l)), true
		}
	}
	return Decision{}, false
}

// hasNonBlank reports whether every use of the flag has a value with a
// non-space character, and there is at least one. For a value computed at
// run time only its literal part counts.
func hasNonBlank(p parsedCall, name string) bool {
	n := 0
	for _, u := range p.uses {
		if u.spec.long != name {
			continue
		}
		n++
		v := u.value
		if u.dynamic {
			v = strings.ReplaceAll(v, dynMark, "")
		}
		if strings.TrimSpace(v) == "" {
			return false
		}
	}
	return n > 0
}

// childrenAllowed reports whether every subcommand of c (recursively) is
// allowed in BUILD, so that a subcommand name computed at run time cannot
// reach a refused one.
func childrenAllowed(c *command) bool {
	for _, name := range c.names {
		child := c.children[name]
		pol, ok := policyFor(child.path)
		if !ok || !pol.allow || !childrenAllowed(child) {
			return false
		}
	}
	return true
}

func (d Decision) allow(rule, what string) Decision {
	r := ruleByID(rule)
	d.Allowed = true
	d.Rule = r.ID
	d.Reason = r.Reason
	if what != "" {
		d.Reason = what + ": " + r.Reason
	}
	return d
}

func (d Decision) refuse(rule, what string) Decision {
	r := ruleByID(rule)
	d.Allowed = false
	d.Rule = r.ID
	d.Reason = r.Reason
	if what != "" {
		d.Reason = what + ": " + r.Reason
	}
	d.Instead = r.Instead
	if id := d.issueID(); id != "" {
		d.Instead = strings.ReplaceAll(d.Instead, "<id>", id)
	}
	return d
}

// issueID returns the first issue ID of the call, when one is plainly
// there, to make the advice concrete.
func (d Decision) issueID() string {
	p, err := ParseArgs(d.Argv)
	if err != nil || len(p.Path) == 0 || len(p.Positionals) == 0 {
		return ""
	}
	if pol, ok := policyFor(strings.Join(p.Path, " ")); ok && pol.rule == RuleCreate {
		return "" // its positional is the new issue's title
	}
	id := p.Positionals[0]
	if id == "" || len(id) > 64 || strings.ContainsAny(id, " \t\n\"'`$\\") {
		return ""
	}
	return id
}

// CommandLine renders the call as a shell command line, e.g.
// `bd update bd-1 --priority 0`.
func (d Decision) CommandLine() string {
	if d.line != "" {
		return d.line
	}
	return "bd" + quoteArgs(d.Argv)
}

// Message is the text for the agent: for a refusal, what was refused, the
// rule and what to do instead; for an allowed call, one line saying so.
func (d Decision) Message() string {
	if d.Allowed {
		return fmt.Sprintf("ralphd: %s mode allows `%s` (rule %s: %s).\n",
			d.Mode.label(), d.CommandLine(), d.Rule, d.Reason)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ralphd: %s mode refused `%s` (rule %s).\n", d.Mode.label(), d.CommandLine(), d.Rule)
	fmt.Fprintf(&b, "Why: %s.\n", d.Reason)
	if d.Instead != "" {
		fmt.Fprintf(&b, "Instead: %s.\n", d.Instead)
	}
	b.WriteString("Nothing was changed.\n")
	return b.String()
}

// commandName renders a canonical command path as "bd <path>".
func commandName(path string) string {
	if path == "" {
		return "bd"
	}
	return "bd " + path
}

// quoteArgs renders args for a shell, each preceded by a space.
func quoteArgs(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(bashQuote(a))
	}
	return b.String()
}

// bashQuote quotes s for bash when it needs quoting, as bash would print
// it: control characters come out as $'…' rather than raw inside quotes.
func bashQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'`$\\|&;<>(){}[]*?!#") && !strings.HasPrefix(s, "~") {
		return s
	}
	if q, err := syntax.Quote(s, syntax.LangBash); err == nil {
		return q
	}
	return fmt.Sprintf("%q", s)
}

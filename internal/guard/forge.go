package guard

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/ralphd/ralphd/internal/text"
)

// forgeVerb is one command of a forge CLI that merges, approves, or
// otherwise lands work or dismisses review, or hands out the login's
// token. RuleForgeMerge refuses it in every mode: ralphd never merges,
// and no agent of it may (docs/review.md). The table is the one place a
// reader adds a verb; the hook (Hook), the agents' own deny rules
// (DenyPrefixes) and the policy table (Table) all read it.
type forgeVerb struct {
	prog string // the CLI, as its binary is named
	// path is the subcommand, one level per space; each level lists its
	// names and aliases separated by '|'.
	path string
	// check, when set, refuses only some calls of the verb: it returns
	// what it refuses (for the message) and true. Without it every call
	// of the verb is refused, and the verb is a deny prefix of the
	// agents' own permission rules.
	check func(prog string, args []arg) (string, bool)
	note  string // for the policy table
}

// forgeVerbs are the verbs RuleForgeMerge refuses. Reading pull requests
// (`gh pr view`, `gh pr checks`, `gh pr diff`, `gh api` GETs) stays
// allowed: no verb matches them.
func forgeVerbs() []forgeVerb {
	return []forgeVerb{
		{prog: "gh", path: "pr merge", note: "also --auto"},
		{prog: "gh", path: "pr review", check: reviewApproves, note: "with --approve (-a)"},
		{prog: "gh", path: "api", check: apiLands, note: apiNote},
		{prog: "gh", path: "auth token", note: "prints the login's token"},
		{prog: "gh", path: "auth git-credential", note: "prints the login's token to whoever asks as git"},
		{prog: "gh", path: "auth status", check: showsToken, note: "with --show-token (-t)"},
		{prog: "gh", path: "alias set", check: aliasHides, note: "an alias that hides one of these"},
		{prog: "gh", path: "alias import", note: "its aliases are read from a file"},
		{prog: "tea", path: "pulls|pull|pr merge|m"},
		{prog: "tea", path: "pulls|pull|pr approve|lgtm|a"},
		{prog: "tea", path: "api", check: apiLands, note: apiNote},
		{prog: "glab", path: "mr|merge-request merge|accept"},
		{prog: "glab", path: "mr|merge-request approve"},
		{prog: "glab", path: "mr|merge-request revoke", note: "revokes an approval"},
		{prog: "glab", path: "api", check: apiLands, note: apiNote},
		{prog: "glab", path: "auth status", check: showsToken, note: "with --show-token (-t)"},
		{prog: "hub", path: "merge", note: "merges a pull request's branch"},
		{prog: "hub", path: "api", check: apiLands, note: apiNote},
	}
}

const apiNote = "a write (-X other than GET, or fields) to a pull request's merge or reviews, " +
	"a merge request's merge or approval, or a repository's merges; a GraphQL mutation that merges, approves or enables auto-merge"

// forgeProg reports whether base names a forge CLI of forgeVerbs.
func forgeProg(base string) bool {
	return slices.ContainsFunc(forgeVerbs(), func(v forgeVerb) bool { return v.prog == base })
}

// judgedNames are the programs whose calls the guard judges: bd and the
// forge CLIs, each once.
func judgedNames() []string {
	out := []string{"bd"}
	for _, v := range forgeVerbs() {
		if !slices.Contains(out, v.prog) {
			out = append(out, v.prog)
		}
	}
	return out
}

// forgeDecide judges one call of a forge CLI in mode. Its verdict is the
// same in BUILD and PLANNING. The command path is found as cobra and
// urfave/cli would find it, but leniently: a word after a flag may be the
// flag's value or the next subcommand, and either reading that reaches a
// verb is refused. A word computed at run time where a verb's name could
// be is refused too.
func forgeDecide(mode Mode, prog string, args []arg) Decision {
	d := Decision{Mode: mode, Argv: make([]string, len(args))}
	line := prog
	for i, a := range args {
		d.Argv[i] = a.src
		if a.kind == argStatic {
			d.Argv[i] = a.text
			line += " " + bashQuote(a.text)
			continue
		}
		line += " " + a.src
	}
	d.line = line
	if !mode.Valid() {
		return d.refuse(RuleUnknownMode, fmt.Sprintf("mode %q", string(mode)))
	}
	for _, v := range forgeVerbs() {
		if v.prog != prog {
			continue
		}
		rest, m := v.match(args)
		what := ""
		switch m {
		case matchNone:
			continue
		case matchDynamic:
			what = fmt.Sprintf("a subcommand of `%s` computed at run time could be `%s`", prog, v.name())
		case matchVerb:
			if v.check == nil {
				what = "`" + v.name() + "`"
			} else if w, refused := v.check(prog, rest); refused {
				what = "`" + v.name() + "` " + w
			} else {
				continue
			}
		}
		d.Command = v.name()
		return d.forgeRefuse(what)
	}
	r := ruleByID(RuleForgeOther)
	d.Allowed, d.Rule, d.Reason = true, r.ID, r.Reason
	return d
}

// forgeRefuse is refuse without the bd-specific advice.
func (d Decision) forgeRefuse(what string) Decision {
	r := ruleByID(RuleForgeMerge)
	d.Allowed, d.Rule, d.Reason, d.Instead = false, r.ID, what+": "+r.Reason, r.Instead
	return d
}

// name is the verb's canonical spelling: "gh pr merge".
func (v forgeVerb) name() string {
	words := []string{v.prog}
	for _, level := range strings.Fields(v.path) {
		words = append(words, strings.Split(level, "|")[0])
	}
	return strings.Join(words, " ")
}

// prefixes are every spelling of the verb, aliases included, as deny
// prefixes for the agents' own permission rules; none when the verb is
// refused only with some arguments.
func (v forgeVerb) prefixes() []string {
	if v.check != nil {
		return nil
	}
	out := []string{v.prog}
	for _, level := range strings.Fields(v.path) {
		var next []string
		for _, p := range out {
			for _, name := range strings.Split(level, "|") {
				next = append(next, p+" "+name)
			}
		}
		out = next
	}
	return out
}

// forgeMatch says whether a call is a verb's.
type forgeMatch uint8

const (
	matchNone    forgeMatch = iota
	matchVerb               // the call is the verb's
	matchDynamic            // a word computed at run time may make it the verb's
)

// match finds the verb's path in args and returns the other arguments
// (flags before the path included, as cobra passes them on).
func (v forgeVerb) match(args []arg) ([]arg, forgeMatch) {
	levels := strings.Fields(v.path)
	level := 0
	afterFlag := false // the previous word was a flag that may take a value
	var rest []arg
	for i, a := range args {
		if level == len(levels) {
			return append(rest, args[i:]...), matchVerb
		}
		if a.kind != argStatic {
			return nil, matchDynamic
		}
		s := a.text
		switch {
		case s == "--":
			return nil, matchNone // what follows is arguments, not subcommands
		case len(s) > 1 && s[0] == '-':
			rest = append(rest, a)
			afterFlag = !strings.Contains(s, "=") && (len(s) == 2 || strings.HasPrefix(s, "--"))
		case slices.Contains(strings.Split(levels[level], "|"), s):
			level++
			afterFlag = false
		case afterFlag:
			rest = append(rest, a) // the flag's value
			afterFlag = false
		default:
			return nil, matchNone
		}
	}
	if level == len(levels) {
		return rest, matchVerb
	}
	return nil, matchNone
}

// cliFlag is one flag found on a forge CLI's command line.
type cliFlag struct {
	name    string // the long name, or the short letter
	value   string
	dynamic bool // the value is computed at run time
}

// cliArgs are a forge CLI command's arguments, split the way pflag (cobra)
// and urfave/cli split them.
type cliArgs struct {
	flags []cliFlag
	pos   []arg
	// unknown is a word computed at run time that may be a flag.
	unknown *arg
}

// splitCLI splits args into flags and positionals. valueShort lists the
// short flags that take a value, valueLong the long ones; a short flag
// with a value takes the rest of its word or the next word, whatever it
// is, and letters before it are boolean flags (`-ab x`).
func splitCLI(args []arg, valueShort string, valueLong ...string) cliArgs {
	var c cliArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.text
		next := func() (string, bool) { // the next word as a value
			if i+1 >= len(args) {
				return "", false
			}
			i++
			return args[i].text, args[i].kind != argStatic
		}
		if a.kind != argStatic {
			switch {
			case strings.HasPrefix(s, "--") && strings.Contains(s[:strings.Index(s+dynMark, dynMark)], "="):
				name, value, _ := strings.Cut(s[2:], "=")
				c.flags = append(c.flags, cliFlag{name: name, value: value, dynamic: true})
			case s != "" && s[0] != '-' && !strings.HasPrefix(s, dynMark):
				c.pos = append(c.pos, a)
			default:
				if c.unknown == nil {
					c.unknown = &args[i]
				}
				c.pos = append(c.pos, a)
			}
			continue
		}
		switch {
		case s == "--":
			c.pos = append(c.pos, args[i+1:]...)
			return c
		case strings.HasPrefix(s, "--"):
			name, value, hasValue := strings.Cut(s[2:], "=")
			f := cliFlag{name: name, value: value}
			if !hasValue && slices.Contains(valueLong, name) {
				f.value, f.dynamic = next()
			}
			c.flags = append(c.flags, f)
		case len(s) > 1 && s[0] == '-':
			for j := 1; j < len(s); j++ {
				f := cliFlag{name: s[j : j+1]}
				if strings.IndexByte(valueShort, s[j]) >= 0 {
					if f.value = strings.TrimPrefix(s[j+1:], "="); j+1 == len(s) {
						f.value, f.dynamic = next()
					}
					c.flags = append(c.flags, f)
					break
				}
				c.flags = append(c.flags, f)
			}
		default:
			c.pos = append(c.pos, a)
		}
	}
	return c
}

// has reports whether a flag of one of the names is given.
func (c cliArgs) has(names ...string) bool {
	return slices.ContainsFunc(c.flags, func(f cliFlag) bool { return slices.Contains(names, f.name) })
}

// reviewApproves refuses `gh pr review --approve` (-a, also `-ab "…"`).
func reviewApproves(_ string, args []arg) (string, bool) {
	c := splitCLI(args, "bFR", "body", "body-file", "repo")
	if c.has("approve", "a") {
		return "with --approve", true
	}
	if c.unknown != nil {
		return fmt.Sprintf("with %s, computed at run time, which may be --approve", c.unknown.src), true
	}
	return "", false
}

// showsToken refuses `gh auth status --show-token` (and glab's).
func showsToken(_ string, args []arg) (string, bool) {
	c := splitCLI(args, "hq", "hostname", "json", "jq", "template")
	if c.has("show-token", "t") {
		return "with --show-token, which prints the login's token", true
	}
	if c.unknown != nil {
		return fmt.Sprintf("with %s, computed at run time, which may be --show-token", c.unknown.src), true
	}
	return "", false
}

// aliasHides refuses `gh alias set NAME EXPANSION` when the expansion
// runs a refused verb (a `--shell` alias's as shell text), or cannot be
// read.
func aliasHides(prog string, args []arg) (string, bool) {
	c := splitCLI(args, "", "")
	if c.unknown != nil || len(c.pos) < 2 || c.pos[1].kind != argStatic || c.pos[1].text == "-" {
		return "whose expansion is computed at run time or read from stdin", true
	}
	expansion := c.pos[1].text
	if c.has("shell", "s") || strings.HasPrefix(expansion, "!") {
		x := &extractor{}
		if err := x.script(strings.TrimPrefix(expansion, "!"), maxShellDepth); err != nil {
			return "whose shell expansion cannot be analysed", true
		}
		for _, call := range x.calls {
			if call.name != "bd" {
				if d := forgeDecide(ModeBuild, call.name, call.args); !d.Allowed {
					return "that runs `" + d.Command + "`", true
				}
			}
		}
		return "", false
	}
	words := splitWords(arg{text: expansion, kind: argStatic})
	if d := forgeDecide(ModeBuild, prog, words); !d.Allowed {
		return "that runs `" + d.Command + "`", true
	}
	return "", false
}

// landingMutations are the GraphQL mutations that merge, approve, queue
// or auto-merge a pull request (GitHub) or merge request (GitLab), or
// dismiss a review. They are matched as words of the query, in any case.
var landingMutations = []string{
	"mergepullrequest", "addpullrequestreview", "submitpullrequestreview", "dismisspullrequestreview",
	"enablepullrequestautomerge", "enqueuepullrequest", "mergebranch",
	"mergerequestaccept", "mergerequestsetautomerge", "mergerequestapprove",
}

// landingPaths match the REST endpoints (after normalisePath) that merge,
// approve or dismiss review, on GitHub, Gitea/Forgejo and GitLab.
var landingPaths = text.LazyRegexp(`(^|/)(pulls/[^/]+/(merge|reviews)|repos/[^/]+/[^/]+/merges|` +
	`merge_requests/[^/]+/(merge|approve|approvals|unapprove|reset_approvals|merge_when_pipeline_succeeds))(/|$)`)

// apiLands refuses a forge CLI's `api` call that writes to an endpoint
// that lands work or approves: its method is explicit (-X) and not GET or
// HEAD, or implied by fields (-f, -F, --input: POST), and its REST path
// matches landingPaths, or it is a GraphQL query holding a landing
// mutation. What cannot be read (a computed endpoint or method of a
// write, a query from a file) is refused. Only the flags that set the
// method or the body are read with their values: any other word is
// judged as if it were the endpoint, so a flag's value the model misreads
// can hide no endpoint.
func apiLands(_ string, args []arg) (string, bool) {
	c := splitCLI(args, "XHfF", "method", "header", "raw-field", "field", "input", "jq", "template",
		"cache", "hostname", "preview")
	if c.unknown != nil {
		return fmt.Sprintf("with %s, computed at run time where a flag may be", c.unknown.src), true
	}
	method, methodDyn := "GET", false
	if c.has("f", "F", "raw-field", "field", "input") {
		method = "POST"
	}
	for _, f := range c.flags {
		if f.name == "X" || f.name == "method" {
			method, methodDyn = strings.ToUpper(f.value), f.dynamic || strings.Contains(f.value, dynMark)
		}
	}
	write := methodDyn || (method != "GET" && method != "HEAD")
	for _, endpoint := range c.pos {
		if endpoint.kind != argStatic {
			if write {
				return "writing to an endpoint computed at run time", true
			}
			continue
		}
		p := normalisePath(endpoint.text)
		if path.Base(p) == "graphql" {
			if what, refused := graphqlLands(c); refused {
				return what, true
			}
			continue
		}
		if write && landingPaths.MatchString(p) {
			if methodDyn {
				return fmt.Sprintf("to %s with a method computed at run time", endpoint.text), true
			}
			return fmt.Sprintf("with %s to %s", method, endpoint.text), true
		}
	}
	return "", false
}

// graphqlLands refuses a GraphQL call whose query holds a landing
// mutation, or whose query ralphd cannot read.
func graphqlLands(c cliArgs) (string, bool) {
	if c.has("input") {
		return "graphql with --input, whose query ralphd cannot read", true
	}
	for _, f := range c.flags {
		if f.name != "f" && f.name != "F" && f.name != "raw-field" && f.name != "field" {
			continue
		}
		key, value, _ := strings.Cut(f.value, "=")
		if strings.Contains(key, dynMark) {
			return "graphql with a field computed at run time", true
		}
		if key != "query" {
			continue
		}
		if f.dynamic || strings.Contains(value, dynMark) {
			return "graphql with a query computed at run time", true
		}
		if (f.name == "F" || f.name == "field") && strings.HasPrefix(value, "@") {
			return "graphql with a query read from " + value[1:], true
		}
		q := strings.ToLower(value)
		for _, m := range landingMutations {
			if strings.Contains(q, m) {
				return "graphql with the mutation " + m, true
			}
		}
	}
	return "", false
}

// normalisePath reduces an api endpoint to its lower-case path: no
// scheme, host, query or fragment, percent-escapes decoded, no API
// prefix (api/v3, api/v4, api/v1), no empty or dot segments.
func normalisePath(endpoint string) string {
	e := strings.ToLower(endpoint)
	if i := strings.Index(e, "://"); i >= 0 {
		e = e[i+3:]
		if j := strings.IndexByte(e, '/'); j >= 0 {
			e = e[j:]
		} else {
			e = ""
		}
	}
	if i := strings.IndexAny(e, "?#"); i >= 0 {
		e = e[:i]
	}
	for range 3 { // %256d decodes to %6d, then to m
		u, err := url.PathUnescape(e)
		if err != nil || u == e {
			break
		}
		e = strings.ToLower(u)
	}
	e = strings.Trim(path.Clean("/"+e), "/")
	for _, prefix := range []string{"api/v1/", "api/v3/", "api/v4/"} {
		e = strings.TrimPrefix(e, prefix)
	}
	return e
}

// forgeDenyPrefixes are the spellings of the forge verbs refused
// outright, for the agents' own permission rules.
func forgeDenyPrefixes() []string {
	var out []string
	for _, v := range forgeVerbs() {
		out = append(out, v.prefixes()...)
	}
	return out
}

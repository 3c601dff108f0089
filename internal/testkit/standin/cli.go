package standin

import (
	"embed"
	"encoding/csv"
	"fmt"
	"github.com/ralphd/ralphd/internal/text"
	"sort"
	"strconv"
	"strings"
	"time"
)

// helpFS holds the `--help` output real bd 1.0.5 printed for the commands
// the contract recorded. The stand-in prints these verbatim and cuts its
// cobra-style usage text (shown after flag errors) out of them.
//
//go:embed help/*.txt
var helpFS embed.FS

// flagSpec describes one pflag-style flag.
type flagSpec struct {
	name  string
	short string
	typ   string // bool, string, int, strings, stringArray, duration
	def   string
	usage string
}

// command is one node of the cobra-like command tree.
type command struct {
	name    string
	aliases []string
	short   string // one-line summary (for synthesised "Available Commands")
	parent  *command
	subs    []*command

	// help is the full `--help` text (long description, blank line, usage).
	help string
	// local are the command's own flags (including -h/--help).
	local []*flagSpec
	// supported names the local flags the stand-in implements. Any other
	// flag real bd knows fails loudly with errUnsupportedFlag.
	supported map[string]bool

	run     func(*invocation) int
	needsDB bool
	// write marks commands that `--readonly` refuses.
	write bool
	// hidden keeps the command out of cobra's suggestions (bd's "help").
	hidden bool
}

// path returns the command path without the root, e.g. "dep add".
func (c *command) path() string {
	if c.parent == nil {
		return ""
	}
	if p := c.parent.path(); p != "" {
		return p + " " + c.name
	}
	return c.name
}

// commandPath returns the full cobra CommandPath, e.g. "bd dep add".
func (c *command) commandPath() string {
	if p := c.path(); p != "" {
		return "bd " + p
	}
	return "bd"
}

// usage returns the cobra usage string (ends with a newline).
func (c *command) usage() string {
	if i := strings.Index(c.help, "Usage:\n"); i >= 0 {
		return c.help[i:]
	}
	return c.help
}

// find returns the direct subcommand called name (or aliased to it).
func (c *command) find(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
		for _, a := range s.aliases {
			if a == name {
				return s
			}
		}
	}
	return nil
}

// flagSet is the merged view of a command's local and inherited flags.
type flagSet struct {
	byName  map[string]*flagSpec
	byShort map[string]*flagSpec
}

func newFlagSet(groups ...[]*flagSpec) *flagSet {
	fs := &flagSet{byName: map[string]*flagSpec{}, byShort: map[string]*flagSpec{}}
	for _, g := range groups {
		for _, f := range g {
			if _, dup := fs.byName[f.name]; dup {
				continue // local flags shadow global ones (e.g. init --quiet)
			}
			fs.byName[f.name] = f
			if f.short != "" {
				if _, dup := fs.byShort[f.short]; !dup {
					fs.byShort[f.short] = f
				}
			}
		}
	}
	return fs
}

// flagValues holds what the parser saw.
type flagValues struct {
	set  *flagSet
	raw  map[string][]string // every value set, in order
	args []string            // positional arguments
}

func (v *flagValues) changed(name string) bool { _, ok := v.raw[name]; return ok }

func (v *flagValues) str(name string) string {
	if vals := v.raw[name]; len(vals) > 0 {
		return vals[len(vals)-1]
	}
	if f := v.set.byName[name]; f != nil {
		return f.def
	}
	return ""
}

// strAll returns every value given for a string flag, in order.
func (v *flagValues) strAll(name string) []string { return v.raw[name] }

func (v *flagValues) boolean(name string) bool {
	b, err := strconv.ParseBool(v.str(name))
	return err == nil && b
}

func (v *flagValues) integer(name string) int {
	n, err := strconv.ParseInt(v.str(name), 0, 64)
	if err != nil {
		return 0
	}
	return int(n)
}

// list returns the values of a "strings" or "stringArray" flag.
func (v *flagValues) list(name string) []string {
	f := v.set.byName[name]
	vals, ok := v.raw[name]
	if !ok {
		return nil
	}
	var out []string
	for _, s := range vals {
		if f != nil && f.typ == "strings" {
			parts, _ := splitCSV(s)
			out = append(out, parts...)
			continue
		}
		out = append(out, s)
	}
	return out
}

// splitCSV splits like pflag's string slice flags do.
func splitCSV(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	r := csv.NewReader(strings.NewReader(s))
	rec, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("split %q: %w", s, err)
	}
	return rec, nil
}

// flagError is a pflag parse error; cobra prints it followed by the usage.
type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }

// parseFlags parses args the way pflag does with interspersed flags.
// helpAsked reports -h/--help.
func parseFlags(fs *flagSet, args []string) (vals *flagValues, helpAsked bool, err error) {
	vals = &flagValues{set: fs, raw: map[string][]string{}}
	set := func(f *flagSpec, value string) error {
		if err := checkValue(f, value); err != nil {
			name := "--" + f.name
			if f.short != "" {
				name = "-" + f.short + ", " + name
			}
			return &flagError{fmt.Sprintf("invalid argument %q for %q flag: %v", value, name, err)}
		}
		vals.raw[f.name] = append(vals.raw[f.name], value)
		return nil
	}
	for len(args) > 0 {
		s := args[0]
		args = args[1:]
		if len(s) < 2 || s[0] != '-' {
			vals.args = append(vals.args, s)
			continue
		}
		if s[1] == '-' {
			if len(s) == 2 { // "--" ends the flags
				vals.args = append(vals.args, args...)
				break
			}
			name := s[2:]
			if name == "" || name[0] == '-' || name[0] == '=' {
				return nil, false, &flagError{fmt.Sprintf("bad flag syntax: %s", s)}
			}
			value, hasValue := "", false
			if i := strings.IndexByte(name, '='); i >= 0 {
				name, value, hasValue = name[:i], name[i+1:], true
			}
			f := fs.byName[name]
			if f == nil {
				if name == "help" {
					helpAsked = true
					continue
				}
				return nil, false, &flagError{fmt.Sprintf("unknown flag: --%s", name)}
			}
			switch {
			case hasValue:
			case f.typ == "bool":
				value = "true"
			case len(args) > 0:
				value, args = args[0], args[1:]
			default:
				return nil, false, &flagError{fmt.Sprintf("flag needs an argument: %s", s)}
			}
			if err := set(f, value); err != nil {
				return nil, false, err
			}
			if f.name == "help" && vals.boolean("help") {
				helpAsked = true
			}
			continue
		}
		shorthands := s[1:]
		for len(shorthands) > 0 {
			c := shorthands[:1]
			f := fs.byShort[c]
			if f == nil {
				if c == "h" {
					helpAsked = true
					shorthands = shorthands[1:]
					continue
				}
				return nil, false, &flagError{fmt.Sprintf("unknown shorthand flag: %q in -%s", c[0], shorthands)}
			}
			var value string
			switch {
			case len(shorthands) > 2 && shorthands[1] == '=':
				value, shorthands = shorthands[2:], ""
			case f.typ == "bool":
				value, shorthands = "true", shorthands[1:]
			case len(shorthands) > 1:
				value, shorthands = shorthands[1:], ""
			case len(args) > 0:
				value, args, shorthands = args[0], args[1:], ""
			default:
				return nil, false, &flagError{fmt.Sprintf("flag needs an argument: %q in -%s", c[0], shorthands)}
			}
			if err := set(f, value); err != nil {
				return nil, false, err
			}
			if f.name == "help" && vals.boolean("help") {
				helpAsked = true
			}
		}
	}
	return vals, helpAsked, nil
}

// checkValue validates a raw flag value for its type, returning the error
// text pflag would wrap.
func checkValue(f *flagSpec, v string) error {
	switch f.typ {
	case "bool":
		if _, err := strconv.ParseBool(v); err != nil {
			return err
		}
	case "int":
		if _, err := strconv.ParseInt(v, 0, 64); err != nil {
			return err
		}
	case "duration":
		if _, err := time.ParseDuration(v); err != nil {
			return err
		}
	case "strings":
		if _, err := splitCSV(v); err != nil {
			return err
		}
	}
	return nil
}

// stripFlags mirrors cobra's stripFlags: it returns the words that are
// not flags or flag values, as cobra uses to find the subcommand.
func stripFlags(fs *flagSet, args []string) []string {
	var words []string
	for len(args) > 0 {
		s := args[0]
		args = args[1:]
		switch {
		case s == "--":
			return words
		case strings.HasPrefix(s, "--") && !strings.Contains(s, "=") && !isBoolLong(fs, s[2:]):
			if len(args) <= 1 {
				return words
			}
			args = args[1:]
		case strings.HasPrefix(s, "-") && !strings.Contains(s, "=") && len(s) == 2 && !isBoolShort(fs, s[1:]):
			if len(args) <= 1 {
				return words
			}
			args = args[1:]
		case s != "" && !strings.HasPrefix(s, "-"):
			words = append(words, s)
		}
	}
	return words
}

func isBoolLong(fs *flagSet, name string) bool {
	f := fs.byName[name]
	return f != nil && f.typ == "bool"
}

func isBoolShort(fs *flagSet, short string) bool {
	f := fs.byShort[short]
	return f != nil && f.typ == "bool"
}

// removeFirstWord removes the first non-flag occurrence of word from args,
// like cobra's argsMinusFirstX.
func removeFirstWord(fs *flagSet, args []string, word string) []string {
	for i := 0; i < len(args); i++ {
		s := args[i]
		switch {
		case s == "--":
			return args
		case strings.HasPrefix(s, "--") && !strings.Contains(s, "=") && !isBoolLong(fs, s[2:]):
			i++
		case strings.HasPrefix(s, "-") && !strings.Contains(s, "=") && len(s) == 2 && !isBoolShort(fs, s[1:]):
			i++
		case s == word:
			out := append([]string{}, args[:i]...)
			return append(out, args[i+1:]...)
		}
	}
	return args
}

// flagLine matches one pflag usage line.
var flagLine = text.LazyRegexp(`^  (?:-(\S), |    )--([\w-]+)(?: (string|int|strings|stringArray|duration))?\s{2,}(.*)$`)

// defaultRe finds a trailing pflag default.
var defaultRe = text.LazyRegexp(` \(default (.*)\)$`)

// parseFlagSection reads the flags listed under header in a help text.
func parseFlagSection(help, header string) []*flagSpec {
	i := strings.Index(help, "\n"+header+"\n")
	if i < 0 {
		return nil
	}
	var out []*flagSpec
	for _, line := range strings.Split(help[i+len(header)+2:], "\n") {
		if line == "" {
			break
		}
		m := flagLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := &flagSpec{short: m[1], name: m[2], typ: m[3], usage: m[4]}
		if f.typ == "" {
			f.typ = "bool"
		}
		if d := defaultRe.FindStringSubmatch(f.usage); d != nil {
			f.def = d[1]
			if uq, err := strconv.Unquote(f.def); err == nil {
				f.def = uq
			}
			f.usage = strings.TrimSuffix(f.usage, d[0])
		}
		if f.def == "" {
			switch f.typ {
			case "bool":
				f.def = "false"
			case "int":
				f.def = "0"
			}
		}
		out = append(out, f)
	}
	return out
}

// flagUsages renders flags the way pflag's FlagUsages does.
func flagUsages(specs []*flagSpec) string {
	sorted := append([]*flagSpec{}, specs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var lines []string
	maxlen := 0
	for _, f := range sorted {
		line := "      --" + f.name
		if f.short != "" {
			line = "  -" + f.short + ", --" + f.name
		}
		if f.typ != "bool" {
			line += " " + f.typ
		}
		line += "\x00"
		if len(line) > maxlen {
			maxlen = len(line)
		}
		line += f.usage
		if !isZeroDefault(f) {
			if f.typ == "string" {
				line += fmt.Sprintf(" (default %q)", f.def)
			} else {
				line += fmt.Sprintf(" (default %s)", f.def)
			}
		}
		lines = append(lines, line)
	}
	var b strings.Builder
	for _, line := range lines {
		sidx := strings.IndexByte(line, 0)
		b.WriteString(line[:sidx] + " " + strings.Repeat(" ", maxlen-sidx) + " " + line[sidx+1:] + "\n")
	}
	return strings.TrimRight(b.String(), " \n")
}

func isZeroDefault(f *flagSpec) bool {
	switch f.typ {
	case "bool":
		return f.def == "" || f.def == "false"
	case "int":
		return f.def == "" || f.def == "0"
	case "strings", "stringArray":
		return f.def == "" || f.def == "[]"
	case "duration":
		return f.def == "" || f.def == "0s"
	}
	return f.def == ""
}

// synthHelp renders cobra help for a command the contract did not record.
type synthHelp struct {
	long     string
	use      string // e.g. "where" or "list [issue-id]"
	aliases  []string
	example  string
	flags    []*flagSpec
	subs     [][2]string // name, short
	global   string      // rendered global flags block
	cmdPath  string
	runnable bool
}

func (s synthHelp) render() string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(s.long, " \n"))
	b.WriteString("\n\nUsage:")
	if s.runnable {
		use := "bd " + s.use
		if !strings.Contains(use, "[flags]") {
			use += " [flags]"
		}
		b.WriteString("\n  " + use)
	}
	if len(s.subs) > 0 {
		b.WriteString("\n  " + s.cmdPath + " [command]")
	}
	if len(s.aliases) > 0 {
		b.WriteString("\n\nAliases:\n  " + strings.Join(s.aliases, ", "))
	}
	if s.example != "" {
		b.WriteString("\n\nExamples:\n" + s.example)
	}
	if len(s.subs) > 0 {
		pad := 11
		for _, sc := range s.subs {
			if len(sc[0])+2 > pad {
				pad = len(sc[0]) + 2
			}
		}
		b.WriteString("\n\nAvailable Commands:")
		for _, sc := range s.subs {
			b.WriteString(fmt.Sprintf("\n  %-*s %s", pad, sc[0], sc[1]))
		}
	}
	b.WriteString("\n\nFlags:\n" + flagUsages(s.flags))
	if s.global != "" {
		b.WriteString("\n\nGlobal Flags:\n" + s.global)
	}
	if len(s.subs) > 0 {
		b.WriteString("\n\nUse \"" + s.cmdPath + " [command] --help\" for more information about a command.")
	}
	b.WriteString("\n")
	return b.String()
}

// levenshtein computes the edit distance cobra uses for suggestions.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

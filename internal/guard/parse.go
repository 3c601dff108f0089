package guard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Call is a bd command line parsed the way bd (cobra and pflag) parses it.
type Call struct {
	// Path is the canonical command path, e.g. ["dep", "remove"] for
	// `bd dep rm …`. It is empty for bare `bd` and for an unknown command,
	// whose name is then the first positional.
	Path []string
	// Flags maps each flag's canonical long name to its values in the order
	// given. A boolean flag given without a value records "true".
	Flags map[string][]string
	// Positionals are the non-flag arguments after the command path.
	Positionals []string
	// Unknown lists the flags, as written, that the command does not have.
	Unknown []string
	// Modelled reports whether ralphd knows the command's complete flag set.
	// For other commands every flag is reported as unknown.
	Modelled bool
}

// ArgError is a bd command line that bd itself would reject as malformed:
// a bad flag syntax, a missing flag value or an invalid boolean.
type ArgError struct {
	Arg string // the offending argument as written
	Msg string // what is wrong with it
}

func (e *ArgError) Error() string {
	return fmt.Sprintf("bad bd argument %q: %s", e.Arg, e.Msg)
}

// errDynamic is returned when a word computed at run time (by the shell)
// sits where ralphd must know its text to decide: a command name or a flag
// name.
var errDynamic = errors.New("word computed at run time")

// dynMark stands for the part of a shell word that is only known at run
// time (a parameter, a command substitution, a glob). It is a private-use
// rune so that a word holding it can be re-parsed as shell text.
const dynMark = "\ue000"

// argKind tells how much of an argument is known before it runs.
type argKind uint8

const (
	argStatic  argKind = iota // fully known
	argDynamic                // one word whose text is partly computed at run time
	argWild                   // any number of words, unknown until run time ("$@", xargs input)
)

// arg is one argument of a bd call as the guard or the shell analysis sees it.
type arg struct {
	text string // the word; for argDynamic, dynamic parts are dynMark
	kind argKind
	src  string // the word as written, for messages and audit
	// param is NAME when the word is just a variable ($NAME), so the shell
	// analysis can look up what the script assigned to it.
	param string
	glob  bool // the word holds an unquoted glob pattern
}

func staticArgs(argv []string) []arg {
	out := make([]arg, len(argv))
	for i, s := range argv {
		out[i] = arg{text: s, kind: argStatic, src: s}
	}
	return out
}

// hasMark reports whether a's text holds a run-time part.
func (a arg) hasMark(s string) bool {
	return a.kind == argDynamic && strings.Contains(s, dynMark)
}

// flagUse is one occurrence of a flag on a command line.
type flagUse struct {
	spec    flagSpec
	written string // as written, e.g. "-p1" or "--priority"
	value   string // the value; "true"/"false" for booleans
	dynamic bool   // the value is computed at run time
}

// parsedCall is the internal result of parsing a bd command line.
type parsedCall struct {
	cmd     *command
	uses    []flagUse
	unknown []string
	pos     []arg
	wild    bool // some arguments are unknown until run time (argWild)
	// dynChild is set when a run-time word sits where bd would look for a
	// subcommand of cmd.
	dynChild bool
}

// ParseArgs parses the arguments of one bd invocation (without the program
// name) into a Call. It resolves subcommands and aliases the way cobra does,
// then parses flags the way pflag does: global flags anywhere, --flag=value,
// --flag value, -p1, -p 1, -p=1, combined short flags, repeated flags, flags
// after positionals, and -- ending the flags.
func ParseArgs(argv []string) (Call, error) {
	p, err := parseArgs(staticArgs(argv))
	if err != nil {
		return Call{}, err
	}
	c := Call{
		Flags:    map[string][]string{},
		Unknown:  p.unknown,
		Modelled: p.cmd.modelled,
	}
	if p.cmd.path != "" {
		c.Path = strings.Fields(p.cmd.path)
	}
	for _, u := range p.uses {
		c.Flags[u.spec.long] = append(c.Flags[u.spec.long], u.value)
	}
	for _, a := range p.pos {
		c.Positionals = append(c.Positionals, a.text)
	}
	return c, nil
}

// parseArgs resolves the command and parses its flags.
func parseArgs(args []arg) (parsedCall, error) {
	cmd, rest, dynChild, err := resolve(args)
	if err != nil {
		return parsedCall{}, err
	}
	p, err := parseFlags(cmd, rest)
	p.dynChild = dynChild
	return p, err
}

// resolve finds the command the arguments name, as cobra's Command.Find
// does: at each level it skips flags (and the values of flags that take
// one, judged by that level's flags), takes the first remaining word, and
// descends if it names a child or alias. The word is removed from the
// arguments; everything else is left for flag parsing.
func resolve(args []arg) (*command, []arg, bool, error) {
	c := grammar
	rest := args
	for {
		i, err := firstCommandWord(c, rest)
		if err != nil {
			return nil, nil, false, err
		}
		if i < 0 {
			return c, rest, false, nil
		}
		w := rest[i]
		if w.kind != argStatic {
			// A run-time word where bd looks for a subcommand: it may name
			// any child. The caller decides whether that matters.
			return c, rest, len(c.children) > 0, nil
		}
		child, ok := c.children[w.text]
		if !ok {
			return c, rest, false, nil
		}
		next := make([]arg, 0, len(rest)-1)
		next = append(next, rest[:i]...)
		next = append(next, rest[i+1:]...)
		rest = next
		c = child
	}
}

// firstCommandWord mirrors cobra's stripFlags: it returns the index of the
// first word that is not a flag or a flag's value, or -1.
func firstCommandWord(c *command, args []arg) (int, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.text
		if a.kind == argWild {
			return i, nil
		}
		switch {
		case s == "--" && a.kind == argStatic:
			return -1, nil
		case strings.HasPrefix(s, "--") && !strings.Contains(s, "="):
			name := s[2:]
			if a.hasMark(name) {
				return 0, fmt.Errorf("flag %s: %w", a.src, errDynamic)
			}
			if f, ok := c.flags[name]; !ok || f.value {
				i++ // cobra assumes an unknown long flag takes the next word
			}
		case strings.HasPrefix(s, "-") && !strings.Contains(s, "=") && len(s) == 2:
			if f, ok := c.shorts[s[1]]; !ok || f.value {
				i++
			}
		case strings.HasPrefix(s, "-"+dynMark):
			return 0, fmt.Errorf("flag %s: %w", a.src, errDynamic)
		case s != "" && !strings.HasPrefix(s, "-"):
			return i, nil
		}
	}
	return -1, nil
}

// parseFlags parses the arguments of a resolved command like pflag with
// interspersed flags.
func parseFlags(c *command, args []arg) (parsedCall, error) {
	p := parsedCall{cmd: c}
	for len(args) > 0 {
		a := args[0]
		args = args[1:]
		s := a.text
		if a.kind == argWild {
			p.wild = true
			continue
		}
		if len(s) < 2 || s[0] != '-' {
			p.pos = append(p.pos, a)
			continue
		}
		if s == "--" && a.kind == argStatic {
			for _, r := range args {
				if r.kind == argWild {
					p.wild = true
					continue
				}
				p.pos = append(p.pos, r)
			}
			return p, nil
		}
		var err error
		if s[1] == '-' {
			args, err = p.parseLong(c, a, args)
		} else {
			args, err = p.parseShorts(c, a, args)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

// parseLong parses one --name or --name=value argument.
func (p *parsedCall) parseLong(c *command, a arg, args []arg) ([]arg, error) {
	body := a.text[2:]
	if body == "" || body[0] == '-' || body[0] == '=' {
		return args, &ArgError{Arg: a.src, Msg: "bad flag syntax"}
	}
	name, value, hasValue := strings.Cut(body, "=")
	if a.hasMark(name) {
		return args, fmt.Errorf("flag %s: %w", a.src, errDynamic)
	}
	spec, ok := c.flags[name]
	if !ok {
		p.unknown = append(p.unknown, "--"+name)
		// bd would stop at this flag; nothing after it can be trusted to
		// parse the same way, but an unknown flag is refused anyway.
		return args, nil
	}
	use := flagUse{spec: spec, written: a.src}
	switch {
	case hasValue:
		use.value, use.dynamic = value, a.hasMark(value)
		if !spec.value && !use.dynamic {
			if _, err := strconv.ParseBool(value); err != nil {
				return args, &ArgError{Arg: a.src, Msg: "invalid boolean value"}
			}
		}
	case !spec.value:
		use.value = "true"
	case len(args) > 0:
		args = p.takeValue(&use, args)
	default:
		return args, &ArgError{Arg: a.src, Msg: "flag needs an argument"}
	}
	p.uses = append(p.uses, use)
	return args, nil
}

// parseShorts parses one argument of shorthand flags such as -q, -p1, -qp 1
// or -p=1.
func (p *parsedCall) parseShorts(c *command, a arg, args []arg) ([]arg, error) {
	rest := a.text[1:]
	for rest != "" {
		if strings.HasPrefix(rest, dynMark) && a.kind == argDynamic {
			return args, fmt.Errorf("flag %s: %w", a.src, errDynamic)
		}
		ch := rest[0]
		rest = rest[1:]
		spec, ok := c.shorts[ch]
		if !ok {
			p.unknown = append(p.unknown, "-"+string(ch))
			return args, nil
		}
		use := flagUse{spec: spec, written: a.src}
		switch {
		case len(rest) > 1 && rest[0] == '=':
			use.value, use.dynamic = rest[1:], a.hasMark(rest[1:])
			rest = ""
			if !spec.value && !use.dynamic {
				if _, err := strconv.ParseBool(use.value); err != nil {
					return args, &ArgError{Arg: a.src, Msg: "invalid boolean value"}
				}
			}
		case !spec.value:
			use.value = "true"
		case rest != "":
			use.value, use.dynamic = rest, a.hasMark(rest)
			rest = ""
		case len(args) > 0:
			args = p.takeValue(&use, args)
		default:
			return args, &ArgError{Arg: a.src, Msg: "flag needs an argument"}
		}
		p.uses = append(p.uses, use)
	}
	return args, nil
}

// takeValue consumes the next argument as the value of use. pflag takes it
// whatever it looks like, even "--other".
func (p *parsedCall) takeValue(use *flagUse, args []arg) []arg {
	v := args[0]
	switch v.kind {
	case argWild:
		// The value and everything after it are unknown; keep the
		// wildcard so the caller sees it.
		use.dynamic = true
		p.wild = true
		return args[1:]
	case argDynamic:
		use.dynamic = strings.Contains(v.text, dynMark)
	}
	use.value = v.text
	return args[1:]
}

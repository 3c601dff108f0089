package guard

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep shell analysis bounded on any input.
const (
	maxShellDepth  = 8   // nested `bash -c`, `eval`, heredocs fed to shells
	maxBraceWords  = 256 // words one brace expansion may produce
	maxScriptBytes = 1 << 20
	maxHops        = 4096 // simple commands and wrapper programs per analysis
)

// shellCall is one call of a program the guard judges (bd, or a forge
// CLI: forgeProgs) found in shell text.
type shellCall struct {
	name string // the program it runs: "bd", "gh", "tea", …
	prog string // the program word as written: "bd", "/usr/local/bin/bd", "$BD"
	args []arg
	// heuristic marks a call found by scanning the arguments of a command
	// ralphd does not know (`strace -f bd delete x`) or behind a program
	// name computed at run time (`$(which bd) delete x`). It counts only
	// when the policy refuses it by a rule about a real bd command.
	heuristic bool
}

// argv renders the call as a plain argv: the program and each argument's
// value, or its shell source when it is only known at run time.
func (c shellCall) argv() []string {
	out := []string{c.prog}
	for _, a := range c.args {
		if a.kind == argStatic {
			out = append(out, a.text)
		} else {
			out = append(out, a.src)
		}
	}
	return out
}

// ExtractBDCalls finds every bd call in a shell command (bash syntax), the
// way the shell would run it: in lists, pipes, subshells, command and
// process substitutions, background jobs, functions and loops; behind env,
// command, exec, time, nice, nohup, timeout, stdbuf, setsid, sudo, doas,
// taskset, flock, xargs, find -exec and watch; inside bash/sh -c strings,
// eval, su -c, script -c, heredocs and echo/printf piped into a shell; and
// by absolute or relative path (/usr/bin/bd, ./bd). Brace expansion is
// applied, quotes and escapes are removed.
//
// Each call is an argv whose first element is the program as written; pass
// call[1:] to Decide. A word whose value is only known at run time is given
// as its shell source ("$id", "$(cat f)"). An error means the text is not
// valid shell or too deeply nested to analyse.
func ExtractBDCalls(command string) ([][]string, error) {
	calls, err := extractCalls(command)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, c := range calls {
		if !c.heuristic && c.name == "bd" {
			out = append(out, c.argv())
		}
	}
	return out, nil
}

// extractCalls parses a shell script and returns all the calls of bd and
// of the forge CLIs in it, including heuristic ones.
func extractCalls(script string) ([]shellCall, error) {
	x := &extractor{}
	if err := x.script(script, 0); err != nil {
		return nil, err
	}
	return x.calls, nil
}

type extractor struct {
	calls []shellCall
	// vars holds every static value assigned to each variable anywhere in
	// the script, so that `B=bd; $B delete x` is recognised.
	vars map[string][]string
	// hops counts wrapper programs unwrapped so far (env, nice, xargs, …),
	// to bound the work on pathological input.
	hops int
}

// script parses and walks one piece of shell text.
func (x *extractor) script(text string, depth int) error {
	if depth > maxShellDepth {
		return fmt.Errorf("shell commands nested more than %d deep", maxShellDepth)
	}
	if len(text) > maxScriptBytes {
		return fmt.Errorf("shell command longer than %d bytes", maxScriptBytes)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	if err != nil {
		return fmt.Errorf("parse shell command: %w", err)
	}
	x.collectAssigns(f)
	var walkErr error
	syntax.Walk(f, func(n syntax.Node) bool {
		if walkErr != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			if call, ok := n.Cmd.(*syntax.CallExpr); ok {
				walkErr = x.callExpr(call, n.Redirs, depth)
			}
		case *syntax.BinaryCmd:
			walkErr = x.pipeIntoShell(n, depth)
		}
		return walkErr == nil
	})
	return walkErr
}

// collectAssigns records the static values assigned to variables in f.
func (x *extractor) collectAssigns(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		a, ok := n.(*syntax.Assign)
		if !ok || a.Name == nil || a.Value == nil || a.Array != nil {
			return true
		}
		as, err := wordArgs(a.Value)
		if err != nil || len(as) != 1 || as[0].kind != argStatic {
			return true
		}
		if x.vars == nil {
			x.vars = map[string][]string{}
		}
		x.vars[a.Name.Value] = append(x.vars[a.Name.Value], as[0].text)
		return true
	})
}

// callExpr analyses one simple command.
func (x *extractor) callExpr(call *syntax.CallExpr, redirs []*syntax.Redirect, depth int) error {
	var words []arg
	for _, w := range call.Args {
		as, err := wordArgs(w)
		if err != nil {
			return err
		}
		words = append(words, as...)
	}
	return x.command(words, redirs, depth)
}

// command analyses a command given as evaluated words, unwrapping the
// programs that run another program.
func (x *extractor) command(words []arg, redirs []*syntax.Redirect, depth int) error {
	if len(words) == 0 {
		return nil
	}
	x.hops++
	if x.hops > maxHops {
		return fmt.Errorf("more than %d commands and wrappers to analyse", maxHops)
	}
	name := words[0]
	rest := words[1:]
	if name.kind != argStatic {
		if progs := x.couldBe(name); len(progs) > 0 {
			for _, p := range progs {
				x.calls = append(x.calls, shellCall{name: p, prog: name.src, args: rest, heuristic: true})
			}
			return nil
		}
		// A computed program may be a wrapper ("$SUDO bd delete x").
		x.scanWords(rest)
		return nil
	}
	base := path.Base(name.text)
	if judged(base) {
		x.calls = append(x.calls, shellCall{name: base, prog: name.src, args: rest})
		return nil
	}
	if next, ok := unwrap(base, rest); ok {
		return x.command(next, redirs, depth)
	}
	switch base {
	case "command":
		next, lookupOnly := skipCommandOpts(rest)
		if lookupOnly {
			return nil
		}
		return x.command(next, redirs, depth)
	case "xargs":
		return x.command(xargsCommand(rest), nil, depth)
	case "find":
		for _, cmd := range findExecCommands(rest) {
			if err := x.command(cmd, nil, depth); err != nil {
				return err
			}
		}
		return nil
	case "eval":
		return x.script(joinText(rest), depth+1)
	case "alias":
		// With expand_aliases a script runs an alias's text as a command:
		// judge it where it is defined.
		for _, a := range rest {
			if _, value, ok := strings.Cut(a.text, "="); ok && a.kind == argStatic {
				if err := x.script(value, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	case "watch":
		cmd, direct := watchCommand(rest)
		if direct {
			return x.command(cmd, nil, depth)
		}
		return x.script(joinText(cmd), depth+1)
	case "su", "runuser", "script":
		if s, ok := optionValue(rest, "-c", "--command"); ok {
			return x.script(s.text, depth+1)
		}
		return x.scan(name, rest)
	case "flock":
		cmd, script, ok := flockCommand(rest)
		if !ok {
			return nil
		}
		if script != nil {
			return x.script(script.text, depth+1)
		}
		return x.command(cmd, nil, depth)
	}
	if isShell(base) {
		return x.shell(rest, redirs, depth)
	}
	return x.scan(name, rest)
}

// scan looks for a bd (or forge CLI) word among the arguments of a command
// ralphd does not know, as in `strace -f bd delete x` or `ssh host gh pr
// merge 1`.
func (x *extractor) scan(name arg, rest []arg) error {
	if !notExecuting[path.Base(name.text)] {
		x.scanWords(rest)
	}
	return nil
}

// scanWords records a heuristic call for every word in words that names
// bd or a forge CLI.
func (x *extractor) scanWords(words []arg) {
	for i, w := range words {
		if base := path.Base(w.text); w.kind == argStatic && judged(base) {
			x.calls = append(x.calls, shellCall{name: base, prog: w.src, args: words[i+1:], heuristic: true})
		}
	}
}

// judged reports whether a program name is one whose calls the guard
// judges: bd, or a forge CLI of forgeVerbs.
func judged(base string) bool {
	return base == "bd" || forgeProg(base)
}

// notExecuting lists common commands that take "bd" as data, not as a
// program to run, so the heuristic scan skips them.
var notExecuting = map[string]bool{
	"echo": true, "printf": true, "git": true, "grep": true, "egrep": true, "fgrep": true, "rg": true,
	"ag": true, "ack": true, "man": true, "which": true, "type": true, "whereis": true, "whatis": true,
	"apropos": true, "help": true, "ls": true, "cat": true, "less": true, "more": true, "head": true,
	"tail": true, "wc": true, "sed": true, "awk": true, "jq": true, "test": true, "[": true, "[[": true,
	"read": true, "alias": true, "unalias": true, "hash": true, "complete": true, "compgen": true,
	"declare": true, "local": true, "export": true, "readonly": true, "unset": true, "touch": true,
	"mkdir": true, "rm": true, "cp": true, "mv": true, "ln": true, "chmod": true, "chown": true, "stat": true,
	"file": true, "readlink": true, "realpath": true, "basename": true, "dirname": true, "tee": true,
}

// shell analyses a shell interpreter call: `bash -c '…'`, or a script fed
// on stdin by a heredoc or here-string.
func (x *extractor) shell(args []arg, redirs []*syntax.Redirect, depth int) error {
	script, scriptFile := shellScriptArg(args)
	if script != nil {
		return x.script(script.text, depth+1)
	}
	if scriptFile {
		return nil // a script file: the guard on PATH sees its bd calls
	}
	return x.stdinScripts(redirs, depth)
}

// stdinScripts analyses the text a shell reads as its script from
// stdin: each here-document (<<EOF, <<-EOF) and here-string (<<<) in
// redirs.
func (x *extractor) stdinScripts(redirs []*syntax.Redirect, depth int) error {
	for _, r := range redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if err := x.script(heredocText(r), depth+1); err != nil {
				return err
			}
		case syntax.WordHdoc:
			as, err := wordArgs(r.Word)
			if err != nil {
				return err
			}
			if err := x.script(joinText(as), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// pipeIntoShell analyses `echo '…' | bash` and `printf '…' | sh`: static
// text piped into a shell that reads its script from stdin.
func (x *extractor) pipeIntoShell(b *syntax.BinaryCmd, depth int) error {
	if b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
		return nil
	}
	sink, ok := b.Y.Cmd.(*syntax.CallExpr)
	if !ok || len(sink.Args) == 0 {
		return nil
	}
	sinkWords, err := wordArgs(sink.Args[0])
	if err != nil || len(sinkWords) == 0 || sinkWords[0].kind != argStatic {
		return err
	}
	if !isShell(path.Base(sinkWords[0].text)) {
		return nil
	}
	var shArgs []arg
	for _, w := range sink.Args[1:] {
		as, err := wordArgs(w)
		if err != nil {
			return err
		}
		shArgs = append(shArgs, as...)
	}
	if script, file := shellScriptArg(shArgs); script != nil || file {
		return nil // not reading stdin; callExpr handles it
	}
	src := b.X
	for {
		inner, ok := src.Cmd.(*syntax.BinaryCmd)
		if !ok {
			break
		}
		src = inner.Y
	}
	producer, ok := src.Cmd.(*syntax.CallExpr)
	if !ok {
		return nil
	}
	if len(producer.Args) == 1 && producer.Args[0].Lit() == "cat" {
		return x.stdinScripts(src.Redirs, depth) // cat <<EOF | bash: the heredoc is the script
	}
	var words []arg
	for _, w := range producer.Args {
		as, err := wordArgs(w)
		if err != nil {
			return err
		}
		words = append(words, as...)
	}
	if len(words) == 0 || words[0].kind != argStatic {
		return nil
	}
	switch path.Base(words[0].text) {
	case "echo":
		rest := words[1:]
		for len(rest) > 0 && rest[0].kind == argStatic && (rest[0].text == "-n" || rest[0].text == "-e" || rest[0].text == "-E") {
			rest = rest[1:]
		}
		return x.script(joinText(rest), depth+1)
	case "printf":
		rest := words[1:]
		if len(rest) == 0 {
			return nil
		}
		text := joinText(rest)
		if allStatic(rest) {
			vals := make([]string, len(rest)-1)
			for i, a := range rest[1:] {
				vals[i] = a.text
			}
			if s, _, err := expand.Format(&expand.Config{}, rest[0].text, vals); err == nil {
				text = s
			}
		}
		return x.script(text, depth+1)
	}
	return nil
}

// unwrap handles the programs that run their arguments as a command after
// some options: env, exec, builtin, time, nice, ionice, timeout, nohup,
// stdbuf, setsid, sudo, doas, taskset, busybox. It returns the wrapped
// command's words.
func unwrap(base string, args []arg) ([]arg, bool) {
	switch base {
	case "env":
		return envCommand(args), true
	case "exec":
		return skipOpts(args, "-a", "", 0), true
	case "builtin", "nohup", "busybox", "unbuffer", "caffeinate":
		return skipOpts(args, "", "", 0), true
	case "time":
		return skipOpts(args, "-f -o", "--format --output", 0), true
	case "nice": // its old "-5" form is an option like any other
		return skipOpts(args, "-n", "--adjustment", 0), true
	case "ionice":
		return skipOpts(args, "-c -n -p", "--class --classdata --pid", 0), true
	case "timeout":
		return skipOpts(args, "-s -k", "--signal --kill-after", 1), true
	case "stdbuf":
		return skipOpts(args, "-i -o -e", "--input --output --error", 0), true
	case "setsid":
		return skipOpts(args, "", "", 0), true
	case "sudo":
		return skipOpts(args, "-u -g -h -p -C -D -r -t -T -U",
			"--user --group --host --prompt --close-from --chdir --role --type --command-timeout --other-user", 0), true
	case "doas":
		return skipOpts(args, "-u -C", "", 0), true
	case "taskset":
		return skipOpts(args, "", "", 1), true
	}
	return nil, false
}

// skipOpts skips leading options (shortVal and longVal list the options
// that take a separate value), an optional "--", and then `positionals`
// leading positional words (like timeout's duration), and returns the rest.
func skipOpts(args []arg, shortVal, longVal string, positionals int) []arg {
	takes := map[string]bool{}
	for _, o := range strings.Fields(shortVal + " " + longVal) {
		takes[o] = true
	}
	i := 0
	for i < len(args) {
		a := args[i]
		if a.kind != argStatic || len(a.text) < 2 || a.text[0] != '-' {
			break
		}
		i++
		if a.text == "--" {
			break
		}
		if takes[a.text] && i < len(args) {
			i++ // the option's value
		}
	}
	for n := 0; n < positionals && i < len(args); n++ {
		i++
	}
	return tail(args, i)
}

// tail returns args[i:], or nothing when an option consumed past the end.
func tail(args []arg, i int) []arg {
	if i >= len(args) {
		return nil
	}
	return args[i:]
}

// envCommand skips env's options and NAME=VALUE words. The words of
// `-S "…"` are split and put in front of the command.
func envCommand(args []arg) []arg {
	i := 0
	var split []arg
	for i < len(args) {
		a := args[i]
		if a.kind != argStatic {
			break
		}
		s := a.text
		switch {
		case s == "--":
			i++
			return append(split, tail(args, i)...)
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir":
			i += 2
			continue
		case s == "-S" || s == "--split-string":
			if i+1 < len(args) {
				split = append(split, splitWords(args[i+1])...)
			}
			i += 2
			continue
		case strings.HasPrefix(s, "--split-string="):
			split = append(split, splitWords(arg{text: strings.TrimPrefix(s, "--split-string="), kind: argStatic})...)
		case strings.HasPrefix(s, "-S"):
			split = append(split, splitWords(arg{text: s[2:], kind: argStatic})...)
		case strings.HasPrefix(s, "-"):
		case strings.Contains(s, "="):
		default:
			return append(split, tail(args, i)...)
		}
		i++
	}
	return append(split, tail(args, i)...)
}

// splitWords splits env -S's string into words with shell quoting rules.
// Text that does not parse is kept as one run-time word.
func splitWords(a arg) []arg {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(a.text), "")
	if err != nil || len(f.Stmts) != 1 {
		return []arg{{text: dynMark, kind: argDynamic, src: a.text}}
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		return []arg{{text: dynMark, kind: argDynamic, src: a.text}}
	}
	var out []arg
	for _, w := range call.Args {
		as, err := wordArgs(w)
		if err != nil {
			return []arg{{text: dynMark, kind: argDynamic, src: a.text}}
		}
		out = append(out, as...)
	}
	return out
}

// skipCommandOpts skips the options of the `command` builtin. With -v or -V
// it only looks the name up.
func skipCommandOpts(args []arg) ([]arg, bool) {
	i := 0
	for i < len(args) && args[i].kind == argStatic && strings.HasPrefix(args[i].text, "-") && len(args[i].text) > 1 {
		s := args[i].text
		i++
		if s == "--" {
			break
		}
		if strings.ContainsAny(s[1:], "vV") {
			return nil, true
		}
	}
	return tail(args, i), false
}

// xargsCommand returns the command xargs runs. Without -I/-i its input is
// appended as extra arguments, modelled as a wildcard; with a replace
// string, the words holding it are only known at run time.
func xargsCommand(args []arg) []arg {
	withValue := map[string]bool{"-a": true, "-d": true, "-E": true, "-I": true, "-L": true, "-n": true,
		"-P": true, "-s": true, "--arg-file": true, "--delimiter": true, "--eof": true, "--replace": true,
		"--max-lines": true, "--max-args": true, "--max-procs": true, "--max-chars": true, "--process-slot-var": true}
	replace := ""
	i := 0
	for i < len(args) {
		a := args[i]
		if a.kind != argStatic || len(a.text) < 2 || a.text[0] != '-' {
			break
		}
		s := a.text
		i++
		if s == "--" {
			break
		}
		switch {
		case s == "-I" || s == "--replace":
			if i < len(args) {
				replace = args[i].text
			}
			i++
			continue
		case strings.HasPrefix(s, "--replace="):
			replace = strings.TrimPrefix(s, "--replace=")
		case strings.HasPrefix(s, "-I"):
			replace = s[2:]
		case s == "-i":
			replace = "{}"
		case strings.HasPrefix(s, "-i"):
			replace = s[2:]
		case withValue[s]:
			i++
		}
	}
	cmd := slices.Clone(tail(args, i))
	if len(cmd) == 0 {
		return nil
	}
	if replace == "" {
		return append(cmd, arg{text: dynMark, kind: argWild, src: "<xargs input>"})
	}
	for j, a := range cmd {
		if strings.Contains(a.text, replace) {
			cmd[j] = arg{text: strings.ReplaceAll(a.text, replace, dynMark), kind: argDynamic, src: a.src}
		}
	}
	return cmd
}

// findExecCommands returns the commands of find's -exec, -execdir, -ok and
// -okdir actions; "{}" is only known at run time.
func findExecCommands(args []arg) [][]arg {
	var out [][]arg
	for i := 0; i < len(args); i++ {
		switch args[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		var cmd []arg
		j := i + 1
		for ; j < len(args); j++ {
			t := args[j].text
			if args[j].kind == argStatic && (t == ";" || t == "+") {
				break
			}
			a := args[j]
			if strings.Contains(t, "{}") {
				a = arg{text: strings.ReplaceAll(t, "{}", dynMark), kind: argDynamic, src: a.src}
			}
			cmd = append(cmd, a)
		}
		out = append(out, cmd)
		i = j
	}
	return out
}

// watchCommand returns the command watch runs and whether it is run
// directly (-x) rather than through `sh -c`.
func watchCommand(args []arg) ([]arg, bool) {
	direct := false
	i := 0
	for i < len(args) {
		a := args[i]
		if a.kind != argStatic || len(a.text) < 2 || a.text[0] != '-' {
			break
		}
		i++
		switch a.text {
		case "--":
			return tail(args, i), direct
		case "-x", "--exec":
			direct = true
		case "-n", "--interval", "-q", "--equexit":
			i++
		}
	}
	return tail(args, i), direct
}

// flockCommand returns what flock runs: a command, or a -c script.
// ok is false when flock only locks a file descriptor.
func flockCommand(args []arg) (cmd []arg, script *arg, ok bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if a.kind != argStatic || len(a.text) < 2 || a.text[0] != '-' {
			break
		}
		i++
		switch {
		case a.text == "--":
			i = len(args) + 1
		case a.text == "-c" || a.text == "--command":
			if i < len(args) {
				s := args[i]
				script = &s
			}
			i++
		case strings.HasPrefix(a.text, "--command="):
			s := arg{text: strings.TrimPrefix(a.text, "--command="), kind: a.kind, src: a.src}
			script = &s
		case a.text == "-w" || a.text == "--timeout" || a.text == "-E" || a.text == "--conflict-exit-code":
			i++
		}
	}
	if i > len(args) {
		i = len(args)
	}
	if i >= len(args) {
		return nil, script, script != nil
	}
	rest := args[i+1:] // args[i] is the lock file or descriptor
	if script == nil {
		if s, found := optionValue(rest, "-c", "--command"); found {
			script = &s
		}
	}
	if script != nil {
		return nil, script, true
	}
	return rest, nil, len(rest) > 0
}

// optionValue finds `-c VALUE`, `--command VALUE` or `--command=VALUE`
// among args.
func optionValue(args []arg, short, long string) (arg, bool) {
	for i, a := range args {
		if a.kind != argStatic {
			continue
		}
		if (a.text == short || a.text == long) && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a.text, long+"="); ok {
			return arg{text: v, kind: argStatic, src: a.src}, true
		}
	}
	return arg{}, false
}

// isShell reports whether a program name is a shell that runs `-c` text.
func isShell(base string) bool {
	switch base {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "fish", "rbash":
		return true
	}
	return false
}

// shellScriptArg finds a shell's `-c` command string. scriptFile reports a
// script file argument instead (no -c).
func shellScriptArg(args []arg) (script *arg, scriptFile bool) {
	sawC, sawS := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		s := a.text
		if a.kind == argStatic && s == "--" {
			i++
			if i < len(args) {
				if sawC {
					return &args[i], false
				}
				return nil, !sawS
			}
			return nil, false
		}
		if a.kind == argStatic && len(s) > 1 && (s[0] == '-' || s[0] == '+') {
			if strings.HasPrefix(s, "--") {
				if s == "--rcfile" || s == "--init-file" {
					i++
				}
				continue
			}
			for _, ch := range s[1:] {
				switch ch {
				case 'c':
					sawC = true
				case 's':
					sawS = true
				case 'o', 'O':
					i++ // -o option-name
				}
			}
			continue
		}
		if sawC {
			return &args[i], false
		}
		return nil, !sawS
	}
	return nil, false
}

// heredocText returns a heredoc's body as shell text. A quoted delimiter
// keeps the body literal; otherwise the body's expansions are only known
// at run time.
func heredocText(r *syntax.Redirect) string {
	if r.Hdoc == nil {
		return ""
	}
	quoted := false
	if r.Word != nil {
		for _, p := range r.Word.Parts {
			lit, ok := p.(*syntax.Lit)
			if !ok || strings.Contains(lit.Value, `\`) {
				quoted = true
			}
		}
	}
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		if lit, ok := p.(*syntax.Lit); ok {
			if quoted {
				b.WriteString(lit.Value)
			} else {
				b.WriteString(unescape(lit.Value, quoteHeredoc))
			}
			continue
		}
		b.WriteString(dynMark)
	}
	return b.String()
}

// joinText joins words with spaces, keeping run-time parts as dynMark.
func joinText(args []arg) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		parts = append(parts, a.text)
	}
	return strings.Join(parts, " ")
}

func allStatic(args []arg) bool {
	for _, a := range args {
		if a.kind != argStatic {
			return false
		}
	}
	return true
}

// couldBe returns the judged programs (bd, the forge CLIs) a program word
// computed at run time may be: those its source mentions ("$BD", "$(which
// gh)"), those the script assigns to its variable anywhere, and those its
// glob matches.
func (x *extractor) couldBe(a arg) []string {
	var out []string
	src := strings.ToLower(a.src)
	for _, name := range judgedNames() {
		ok := strings.Contains(src, name)
		for _, v := range x.vars[a.param] {
			ok = ok || path.Base(v) == name
		}
		if a.glob && !strings.Contains(a.text, dynMark) {
			m, err := path.Match(path.Base(a.text), name)
			ok = ok || (err == nil && m)
		}
		if ok {
			out = append(out, name)
		}
	}
	return out
}

// quote levels for unescaping literal text.
type quoteLevel uint8

const (
	quoteNone quoteLevel = iota
	quoteDouble
	quoteHeredoc
)

// wordArgs evaluates one shell word into arguments: brace expansion may
// produce several; quotes and escapes are removed; parameters, command
// substitutions, arithmetic and globs make the word dynamic; "$@" and
// friends make it a wildcard.
func wordArgs(w *syntax.Word) ([]arg, error) {
	src := printNode(w)
	// SplitBraces rewrites the word; work on a copy so that syntax.Walk,
	// which is still walking the tree, never meets a BraceExp.
	split := *w
	if syntax.SplitBraces(&split) {
		var out []arg
		for bw, err := range expand.BracesSeq(nil, &split) {
			if err != nil || len(out) >= maxBraceWords {
				return nil, errors.New("brace expansion too large to analyse")
			}
			a := evalWord(bw)
			a.src = printNode(bw)
			out = append(out, a)
		}
		if len(out) == 1 {
			out[0].src = src
		}
		return out, nil
	}
	a := evalWord(w)
	a.src = src
	return []arg{a}, nil
}

// evalWord evaluates a word without brace expansion.
func evalWord(w *syntax.Word) arg {
	e := wordEval{}
	for _, p := range w.Parts {
		e.part(p, quoteNone)
	}
	a := arg{text: e.b.String(), kind: argStatic, param: simpleParam(w), glob: e.glob}
	switch {
	case e.wild:
		a.kind = argWild
	case e.dyn:
		a.kind = argDynamic
	}
	return a
}

type wordEval struct {
	b    strings.Builder
	dyn  bool
	wild bool
	glob bool
}

func (e *wordEval) part(p syntax.WordPart, q quoteLevel) {
	switch p := p.(type) {
	case *syntax.Lit:
		v := p.Value
		if q == quoteNone && hasGlob(v) {
			// A glob expands to file names (never to nothing, without
			// nullglob); its text is kept but its value is not known.
			e.dyn, e.glob = true, true
		}
		v = unescape(v, q)
		if strings.Contains(v, dynMark) {
			e.dyn = true
		}
		e.b.WriteString(v)
	case *syntax.SglQuoted:
		v := p.Value
		if p.Dollar {
			s, _, err := expand.Format(&expand.Config{}, v, nil)
			if err != nil {
				e.dyn = true
				s = dynMark
			}
			v, _, _ = strings.Cut(s, "\x00")
		}
		if strings.Contains(v, dynMark) {
			e.dyn = true
		}
		e.b.WriteString(v)
	case *syntax.DblQuoted:
		for _, inner := range p.Parts {
			e.part(inner, quoteDouble)
		}
	case *syntax.ParamExp:
		e.dyn = true
		if isListParam(p) {
			e.wild = true
		}
		e.b.WriteString(dynMark)
	default:
		// Command and process substitutions, arithmetic, extended globs
		// and anything newer: only known at run time.
		e.dyn = true
		e.b.WriteString(dynMark)
	}
}

// simpleParam returns NAME when the word is just $NAME, ${NAME} or "$NAME".
func simpleParam(w *syntax.Word) string {
	if len(w.Parts) != 1 {
		return ""
	}
	part := w.Parts[0]
	if dq, ok := part.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
		part = dq.Parts[0]
	}
	p, ok := part.(*syntax.ParamExp)
	if !ok || p.Param == nil || p.Excl || p.Length || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Exp != nil || p.Names != 0 || p.NestedParam != nil {
		return ""
	}
	return p.Param.Value
}

// isListParam reports whether a parameter expansion yields a list of words:
// $@, $*, ${a[@]}, ${!prefix@}.
func isListParam(p *syntax.ParamExp) bool {
	if p.Names != 0 {
		return true
	}
	if p.Param != nil && (p.Param.Value == "@" || p.Param.Value == "*") && !p.Length {
		return true
	}
	if p.Index != nil {
		s := printNode(p.Index)
		return s == "@" || s == "*"
	}
	return false
}

// hasGlob reports whether unquoted literal text holds an unescaped glob
// metacharacter.
func hasGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// unescape removes backslash escapes from literal text as the shell does
// at quote level q.
func unescape(s string, q quoteLevel) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++ // line continuation
		case q == quoteNone:
			i++
			b.WriteByte(next)
		case next == '$' || next == '`' || next == '\\' || (next == '"' && q == quoteDouble):
			i++
			b.WriteByte(next)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// printNode renders a syntax node back to shell source.
func printNode(n syntax.Node) string {
	var buf bytes.Buffer
	if err := syntax.NewPrinter().Print(&buf, n); err != nil {
		return "?"
	}
	return buf.String()
}

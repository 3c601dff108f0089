package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The docs show ralphd command lines in fenced code blocks. TestDocCommands
// runs each one as ralphd would parse it, in parse-only mode (app.parseOnly),
// so a renamed flag, a dropped argument or a new usage rule fails here and
// not in a reader's terminal.

// minDocCommands is the fewest ralphd command lines the docs show. Fewer
// found means the extraction broke, not that the docs shrank.
const minDocCommands = 35

// placeholders are the parts of documented command lines that stand for
// something the reader fills in, with what the test puts there. A
// placeholder with several values makes one line into several.
var placeholders = []struct {
	text   string
	values []string
}{
	{"ID... | --all", []string{"t-1 t-2", "--all"}},   // reset: issue IDs, or every issue
	{"[RUN]", []string{"last"}},                       // logs, report: a run
	{"<counting bd>", []string{"$WORK/countbd"}},      // benchmarks: a bd that counts its calls
	{"--agent-cmd ...", []string{"--agent-cmd true"}}, // benchmarks: the agent command, elided
}

// docLine is one command line shown in a fenced code block.
type docLine struct {
	at      string // file:line
	text    string // as shown, without leading blanks
	section string // the ## heading it is under
}

// docPages returns README.md, CONTRIBUTING.md and docs/*.md, relative to
// the repository root.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md")}, pages...)
}

// shellBlocks returns the lines of a Markdown page's fenced code blocks
// that hold shell: ```sh, ```bash, ```shell, ```console, and plain ```.
func shellBlocks(name string, page []byte) []docLine {
	var out []docLine
	fenced, shell, section := false, false, ""
	for i, line := range strings.Split(string(page), "\n") {
		trimmed := strings.TrimSpace(line)
		if lang, ok := strings.CutPrefix(trimmed, "```"); ok {
			fenced = !fenced
			shell = fenced && slices.Contains([]string{"", "sh", "bash", "shell", "console"}, lang)
			continue
		}
		if !fenced {
			if h, ok := strings.CutPrefix(line, "## "); ok {
				section = h
			}
			continue
		}
		if shell && trimmed != "" {
			out = append(out, docLine{at: fmt.Sprintf("%s:%d", name, i+1), text: trimmed, section: section})
		}
	}
	return out
}

// expand returns the command lines a shown line stands for, its
// placeholders filled in, and marks the placeholders it used.
func expand(text string, used map[string]bool) []string {
	lines := []string{text}
	for _, p := range placeholders {
		var next []string
		for _, l := range lines {
			if !strings.Contains(l, p.text) {
				next = append(next, l)
				continue
			}
			used[p.text] = true
			for _, v := range p.values {
				next = append(next, strings.ReplaceAll(l, p.text, v))
			}
		}
		lines = next
	}
	return lines
}

// errShellSyntax is a line shellWords does not read.
var errShellSyntax = errors.New("shell syntax this test does not read (a pipe, redirection, list or substitution); give it a placeholder")

// shellWords splits a command line into words as sh does, for the plain
// lines docs show: blanks, quotes, backslashes, and a trailing # comment.
// $VARS stay as written. Any other shell syntax is errShellSyntax.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			end()
			continue
		case c == '#' && !inWord:
			return words, nil
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			for i++; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
					i++
				case line[i] == '`' || strings.HasPrefix(line[i:], "$("):
					return nil, errShellSyntax
				}
				w.WriteByte(line[i])
			}
			if i == len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
		case strings.IndexByte("|&;<>()`", c) >= 0 || strings.HasPrefix(line[i:], "$("):
			return nil, errShellSyntax
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	end()
	return words, nil
}

// commandWords returns a line's words without the prompt and the
// environment assignments before the command.
func commandWords(text string) ([]string, error) {
	words, err := shellWords(strings.TrimPrefix(text, "$ "))
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:]
	}
	return words, err
}

func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// envPrefix matches what may come before the command on a line: a
// prompt and environment assignments.
const envPrefix = `^(\$ )?([A-Za-z_][A-Za-z0-9_]*=\S* +)*`

// runsRalphd and runsScript match the lines that run ralphd and a script
// of the repository.
var (
	runsRalphd = regexp.MustCompile(envPrefix + `(ralphd|go run \./cmd/ralphd)( |$)`)
	runsScript = regexp.MustCompile(envPrefix + `scripts/`)
)

// ralphdArgs returns the arguments of a line runsRalphd matches, as
// words: those after `ralphd` or `go run ./cmd/ralphd`.
func ralphdArgs(words []string) []string {
	if words[0] == "go" {
		return words[3:]
	}
	return words[1:]
}

// parseOnly runs ralphd with args in parse-only mode and returns the exit
// code, stderr, and whether the command reached its parsedOnly step. Its
// environment is empty but for home, XDG and state dirs under scratch,
// so a command that acts by mistake acts there.
func parseOnly(ctx context.Context, scratch string, args []string) (code int, stderr string, parsed bool) {
	env := map[string]string{
		"HOME": scratch, "XDG_CONFIG_HOME": filepath.Join(scratch, "config"),
		"XDG_STATE_HOME": filepath.Join(scratch, "state"), "RALPH_STATE_DIR": filepath.Join(scratch, "state", "ralph"),
	}
	var out, errb bytes.Buffer
	a := &app{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return env[k] }, argv0: "ralphd", parseOnly: true,
	}
	code = a.dispatch(ctx, args)
	return code, errb.String(), a.parsed
}

// checkRalphd reports how ralphd args does not parse, or nil.
func checkRalphd(scratch string, args []string) error {
	code, stderr, parsed := parseOnly(context.Background(), scratch, args)
	switch {
	case code != exitOK:
		return fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr))
	case !parsed && !asksHelp(args):
		return errors.New("ended without reaching its parse-only stop")
	}
	return nil
}

// asksHelp reports whether args ask for help or the version, which
// ralphd answers before any command parses.
func asksHelp(args []string) bool {
	return slices.ContainsFunc(args, func(s string) bool { return s == "-h" || s == "-help" || s == "--help" }) ||
		len(args) == 1 && (args[0] == "-v" || args[0] == "--version")
}

// checkScript reports how a scripts/X line names no runnable script, or a
// --flag its text never mentions (a shell script has no parser to ask).
func checkScript(root string, words []string) error {
	path := filepath.Join(root, filepath.FromSlash(words[0]))
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", words[0])
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, w := range words[1:] {
		if flag, _, _ := strings.Cut(w, "="); strings.HasPrefix(flag, "--") && len(flag) > 2 && !bytes.Contains(src, []byte(flag)) {
			return fmt.Errorf("%s never mentions %s", words[0], flag)
		}
	}
	return nil
}

// checkPaths reports the first word of a line that names a repository
// path (./x, or a relative x/y) that does not exist.
func checkPaths(root string, words []string) error {
	for _, w := range words {
		if !strings.Contains(w, "/") || strings.ContainsAny(w, "$~:@=") || strings.HasPrefix(w, "/") || strings.HasPrefix(w, "-") {
			continue // not a repository path: absolute, a URL, a module, a flag
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(w))); err != nil {
			return fmt.Errorf("%s is not in the repository", w)
		}
	}
	return nil
}

// TestDocCommands checks every ralphd command line in a fenced code block
// of README.md, CONTRIBUTING.md and docs/*.md: the command exists and its
// flags and arguments parse as ralphd parses them. A scripts/X line must
// name an executable script that knows its --flags, and the README's
// Install and Development blocks may name only paths the repository has.
func TestDocCommands(t *testing.T) {
	const root = "../.."
	scratch := t.TempDir()
	used := map[string]bool{}
	checked, scripts, paths, filled := 0, 0, 0, 0
	for _, page := range docPages(t, root) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, l := range shellBlocks(name, data) {
			texts := expand(l.text, used)
			if len(texts) > 1 || texts[0] != l.text {
				filled++
			}
			for _, text := range texts {
				words, err := commandWords(text)
				switch {
				case runsRalphd.MatchString(text):
					checked++
					if err == nil {
						err = checkRalphd(scratch, ralphdArgs(words))
					}
				case runsScript.MatchString(text):
					scripts++
					if err == nil {
						err = checkScript(root, words)
					}
				case name == "README.md" && (l.section == "Install" || l.section == "Development"):
					paths++
					if err == nil {
						err = checkPaths(root, words)
					}
				default:
					continue // not a command line the docs vouch for
				}
				if err != nil {
					t.Errorf("%s: `%s`: %v", l.at, text, err)
				}
			}
		}
	}
	for _, p := range placeholders {
		if !used[p.text] {
			t.Errorf("no doc line has the placeholder %q any more: remove it from the table", p.text)
		}
	}
	t.Logf("checked %d ralphd command lines (%d shown lines had placeholders filled in), %d scripts/ lines and %d other Install/Development lines; skipped none",
		checked, filled, scripts, paths)
	if checked < minDocCommands {
		t.Errorf("found %d ralphd command lines, want at least %d: is the extraction broken?", checked, minDocCommands)
	}
	if paths == 0 {
		t.Error("found no other line in the README's Install and Development blocks: is the section matching broken?")
	}
}

// TestDocCommandsCatchMistakes plants mistakes in copies of doc lines and
// expects the checks above to find each one.
func TestDocCommandsCatchMistakes(t *testing.T) {
	scratch := t.TempDir()
	for _, tt := range []struct{ line, want string }{
		{"ralphd build 50 --no-such-flag", "has no flag --no-such-flag"},
		{"ralphd build 50 --agent nosuch", `"nosuch" is not allowed`},
		{"ralphd build fifty", "N must be a whole number"},
		{"ralphd status extra", "unexpected arguments"},
		{"ralphd logs last --raw --worker w2", "--worker filters the rendered log"},
		{"ralphd reset", "name the issues to reset"},
		{"ralphd notify", "want: ralphd notify test"},
		{"ralphd service start", `unknown subcommand "start"`},
		{"ralphd help nosuch", "no help for unknown command"},
		{"ralphd nosuch", `unknown command "nosuch"`},
		{"ralphd bd-guard list", `unknown command "bd-guard"`}, // ralphd's own entry point
		{"go run ./cmd/ralphd demo --workers 9", "--workers must be between 1 and 8"},
		{"RALPH_LOG=1 ralphd plan --workers 2", "PLANNING runs alone"},
		{"RALPH_LOG=1 ralphd status | less", errShellSyntax.Error()},
		{`ralphd daemon --notify-cmd "echo $(date)"`, errShellSyntax.Error()},
		{"ralphd policy check --mode nosuch -- list", `parse mode "nosuch"`},
		{"ralphd service install --project /tmp extra", "unexpected arguments"},
	} {
		if !runsRalphd.MatchString(tt.line) {
			t.Fatalf("%q is not a ralphd line", tt.line)
		}
		words, err := commandWords(tt.line)
		if err == nil {
			err = checkRalphd(scratch, ralphdArgs(words))
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("`%s`: got %v, want an error with %q", tt.line, err, tt.want)
		}
	}
	for _, words := range [][]string{
		{"scripts/nosuch"},             // no such script
		{"scripts/deadcode-allow"},     // not executable
		{"scripts/bench", "--no-such"}, // a flag the script never mentions
	} {
		if checkScript("../..", words) == nil {
			t.Errorf("%q passed; it should not", words)
		}
	}
	if checkPaths("../..", []string{"go", "install", "./cmd/ralphd", "./cmd/nosuch"}) == nil {
		t.Error("a go install of a missing package passed")
	}
}

// TestDocCommandsSeam checks that every command stops at its parse-only
// step: with a valid command line it ends there (exit 0) without acting,
// and with an unknown flag it is a usage error. A command that lacks the
// step fails here, after acting once in an empty directory, with a
// cancelled context and scratch home and state dirs.
func TestDocCommandsSeam(t *testing.T) {
	// minimal is the shortest valid command line of each command that
	// needs arguments; more lists subcommands with their own parse-only
	// step.
	minimal := map[string][]string{
		"reset":   {"--all"},
		"notify":  {"test"},
		"service": {"print"},
		"hook":    {"pre-tool-use"},
	}
	more := [][]string{
		{"service", "install"},
		{"service", "uninstall"},
		{"policy", "check", "--", "list"},
		{"help", "build"},
	}
	var lines [][]string
	for _, c := range commands() {
		lines = append(lines, append([]string{c.name}, minimal[c.name]...))
	}
	lines = append(lines, more...)

	scratch := t.TempDir()
	t.Chdir(scratch)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range lines {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			is := is.New(t)
			code, stderr, parsed := parseOnly(ctx, scratch, args)
			if !parsed || code != exitOK {
				t.Fatalf("exit %d, stderr %q: it did not stop at a.parsedOnly, which a command calls once its "+
					"flags and arguments are checked and before it acts (or this is no valid command line: "+
					"give the command its shortest valid arguments in minimal)", code, stderr)
			}
			is.Equal(stderr, "") // a valid command line parses quietly

			bad := append(slices.Clone(args), "--no-such-flag")
			if i := slices.Index(args, "--"); i >= 0 {
				bad = slices.Insert(slices.Clone(args), i, "--no-such-flag")
			}
			code, stderr, parsed = parseOnly(ctx, scratch, bad)
			is.Equal(code, exitUsage)                                   // an unknown flag is a usage error
			is.True(strings.Contains(stderr, "no flag --no-such-flag")) // the flag parser said so
			is.True(!parsed)                                            // and the command did not go on
		})
	}
}

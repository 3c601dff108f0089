package guard

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// helpText is what one recorded `bd … --help` says about a command.
type helpText struct {
	path     []string // the command as typed, e.g. ["dep", "add"] or ["stats"]
	flags    []flagSpec
	global   []flagSpec
	aliases  []string // including the name itself
	children []string
}

var flagLine = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)(?: (\w+))?\s`)

func parseHelp(t *testing.T, text string) helpText {
	t.Helper()
	var h helpText
	lines := strings.Split(text, "\n")
	section := ""
	for i, line := range lines {
		if line == "=== COMMAND ===" && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			h.path = f[1 : len(f)-1] // drop "bd" and "--help"
			continue
		}
		switch line {
		case "Flags:", "Global Flags:", "Aliases:", "Available Commands:":
			section = line
			continue
		case "":
			section = ""
			continue
		}
		switch section {
		case "Flags:", "Global Flags:":
			m := flagLine.FindStringSubmatch(line)
			if m == nil || m[2] == "help" {
				continue
			}
			f := flagSpec{long: m[2], value: m[3] != ""}
			if m[1] != "" {
				f.short = m[1][0]
			}
			if section == "Flags:" {
				h.flags = append(h.flags, f)
			} else {
				h.global = append(h.global, f)
			}
		case "Aliases:":
			for _, a := range strings.Split(line, ",") {
				h.aliases = append(h.aliases, strings.TrimSpace(a))
			}
		case "Available Commands:":
			if f := strings.Fields(line); len(f) > 0 {
				h.children = append(h.children, f[0])
			}
		}
	}
	if h.path == nil {
		t.Fatal("help text without a command")
	}
	return h
}

// TestGrammarMatchesHelp checks the grammar table against bd 1.0.5's own
// help texts: flag names, shorthands, which flags take a value, aliases
// and subcommands. A wrong "takes a value" bit would let an argv parse
// differently from bd, so every recorded command is checked.
func TestGrammarMatchesHelp(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "help", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no help fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			is := is.New(t)
			h := parseHelp(t, string(readTestdata(t, filepath.Join("help", filepath.Base(f)))))
			c := grammar
			for _, name := range h.path {
				next, ok := c.children[name]
				is.True(ok) // the command resolves
				c = next
			}
			is.True(c.modelled) // recorded commands are modelled
			if c == grammar {
				// The root lists its persistent flags with its own.
				is.Equal(allFlagsBut(c, "help"), sortedFlags(h.flags))
				is.Equal(sortedFlags(parseFlagList(globalFlags)), withoutHelp(sortedFlags(h.flags), "version"))
			} else {
				is.Equal(localFlags(c), sortedFlags(h.flags))
				var inherited []flagSpec // global flags not shadowed by a local one
				for _, f := range parseFlagList(globalFlags) {
					if !c.local[f.long] {
						inherited = append(inherited, f)
					}
				}
				is.Equal(sortedFlags(inherited), withoutHelp(sortedFlags(h.global), ""))
			}
			if len(h.aliases) > 0 {
				parent := lookup(parentOf(c.path))
				for _, a := range h.aliases {
					is.True(parent.children[a] == c) // alias resolves to the command
				}
			}
			for _, child := range h.children {
				_, ok := c.children[child]
				is.True(ok) // every listed subcommand is in the grammar
			}
			if len(h.children) > 0 && c != grammar {
				is.Equal(c.names, sortedStrings(h.children)) // and no others
			}
		})
	}
}

// localFlags returns a command's own flags.
func localFlags(c *command) []flagSpec {
	var out []flagSpec
	for name := range c.local {
		out = append(out, c.flags[name])
	}
	return sortedFlags(out)
}

func allFlagsBut(c *command, drop string) []flagSpec {
	var out []flagSpec
	for _, f := range c.flags {
		if f.long != drop {
			out = append(out, f)
		}
	}
	return sortedFlags(out)
}

func withoutHelp(fs []flagSpec, drop string) []flagSpec {
	out := []flagSpec{{long: "help", short: 'h'}}
	for _, f := range fs {
		if f.long != drop {
			out = append(out, f)
		}
	}
	return sortedFlags(out)
}

func sortedFlags(fs []flagSpec) []flagSpec {
	out := slices.Clone(fs)
	sort.Slice(out, func(i, j int) bool { return out[i].long < out[j].long })
	if out == nil {
		out = []flagSpec{}
	}
	return out
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// TestPolicyMatchesGrammar checks that the policy only names commands,
// flags and rules that exist, and that every command BUILD may run has a
// complete flag model (otherwise its flags could not be checked).
func TestPolicyMatchesGrammar(t *testing.T) {
	ruleIDs := map[string]bool{}
	for _, r := range Rules() {
		ruleIDs[r.ID] = true
	}
	seen := map[string]bool{}
	for _, p := range policy {
		t.Run("bd "+p.path, func(t *testing.T) {
			is := is.New(t)
			is.True(!seen[p.path]) // listed once
			seen[p.path] = true
			c := lookup(p.path)
			is.True(c != nil)         // the command exists
			is.True(c.path == p.path) // by its canonical name
			is.True(ruleIDs[p.rule])  // its rule exists
			if !p.allow {
				return
			}
			is.True(c.modelled) // allowed commands have a complete flag model
			if p.flags != allFlags {
				for _, f := range strings.Fields(p.flags) {
					_, ok := c.flags[f]
					is.True(ok) // allowed flag exists
				}
			}
			for f, rule := range p.refuse {
				_, ok := c.flags[f]
				is.True(ok)            // refused flag exists
				is.True(ruleIDs[rule]) // and its rule
			}
			for f := range p.values {
				_, ok := c.flags[f]
				is.True(ok)
			}
			for _, f := range p.require {
				_, ok := c.flags[f]
				is.True(ok)
			}
		})
	}
}

// TestEveryRootCommandKnown checks that every command bd 1.0.5 lists is in
// the grammar, so that aliases and names resolve as bd resolves them.
func TestEveryRootCommandKnown(t *testing.T) {
	is := is.New(t)
	text := string(readTestdata(t, filepath.Join("help", "help.txt")))
	inList := false
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			inList = line != "Flags:" && line != "Usage:"
			continue
		}
		f := strings.Fields(line)
		if !inList || len(f) < 2 || !strings.HasPrefix(line, "  ") || strings.HasPrefix(f[0], "-") {
			continue
		}
		_, ok := grammar.children[f[0]]
		is.True(ok) // listed command is in the grammar
		n++
	}
	is.True(n > 90)
}

func TestParseFlagList(t *testing.T) {
	is := is.New(t)
	is.Equal(parseFlagList("-p,--priority= --claim --x= bogus -y --"), []flagSpec{
		{long: "priority", short: 'p', value: true},
		{long: "claim"},
		{long: "x", value: true},
	})
}

package standin

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestParseFlags(t *testing.T) {
	root := buildTree()
	ready, _, _ := lookup(root, []string{"ready"})
	fs := newFlagSet(ready.local, root.local)
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		wantArgs []string
		check    func(is *is.I, v *flagValues)
	}{
		{name: "interspersed", args: []string{"a", "--json", "b", "-n", "3"}, wantArgs: []string{"a", "b"},
			check: func(is *is.I, v *flagValues) { is.True(v.boolean("json")); is.Equal(v.integer("limit"), 3) }},
		{name: "equals", args: []string{"--limit=0", "--sort=oldest"},
			check: func(is *is.I, v *flagValues) { is.Equal(v.integer("limit"), 0); is.Equal(v.str("sort"), "oldest") }},
		{name: "attached short value", args: []string{"-n2"},
			check: func(is *is.I, v *flagValues) { is.Equal(v.integer("limit"), 2) }},
		{name: "combined bools", args: []string{"-qv"},
			check: func(is *is.I, v *flagValues) { is.True(v.boolean("quiet")); is.True(v.boolean("verbose")) }},
		{name: "default", args: nil,
			check: func(is *is.I, v *flagValues) { is.Equal(v.integer("limit"), 100); is.Equal(v.str("sort"), "priority") }},
		{name: "repeated strings", args: []string{"-l", "a,b", "--label", "c"},
			check: func(is *is.I, v *flagValues) { is.Equal(strings.Join(v.list("label"), " "), "a b c") }},
		{name: "double dash", args: []string{"--", "--json"}, wantArgs: []string{"--json"}},
		{name: "value that looks like a flag", args: []string{"--actor", "-x"},
			check: func(is *is.I, v *flagValues) { is.Equal(v.str("actor"), "-x") }},
		{name: "unknown long", args: []string{"--bogus-flag"}, wantErr: "unknown flag: --bogus-flag"},
		{name: "unknown short", args: []string{"-z"}, wantErr: "unknown shorthand flag: 'z' in -z"},
		{name: "missing value", args: []string{"--sort"}, wantErr: "flag needs an argument: --sort"},
		{name: "missing short value", args: []string{"-n"}, wantErr: "flag needs an argument: 'n' in -n"},
		{name: "bad int", args: []string{"-n", "x"}, wantErr: `invalid argument "x" for "-n, --limit" flag: strconv.ParseInt: parsing "x": invalid syntax`},
		{name: "bad bool", args: []string{"--json=maybe"}, wantErr: `invalid argument "maybe" for "--json" flag: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{name: "bad syntax", args: []string{"---x"}, wantErr: "bad flag syntax: ---x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			v, _, err := parseFlags(fs, tt.args)
			if tt.wantErr != "" {
				is.True(err != nil)
				is.Equal(err.Error(), tt.wantErr)
				return
			}
			is.NoErr(err)
			is.Equal(fmt.Sprint(v.args), fmt.Sprint(tt.wantArgs))
			if tt.check != nil {
				tt.check(is, v)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	root := buildTree()
	tests := []struct {
		args    []string
		path    string
		unknown string
	}{
		{[]string{"ready", "--json"}, "ready", ""},
		{[]string{"--actor", "x", "dep", "add", "a", "b"}, "dep add", ""},
		{[]string{"--json", "label", "add", "a", "l"}, "label add", ""},
		{[]string{"stats"}, "status", ""},
		{[]string{"done", "x"}, "close", ""},
		{[]string{"dep", "rm", "a", "b"}, "dep remove", ""},
		{[]string{"--no-daemon", "ready", "--json"}, "", ""}, // the unknown flag swallows "ready", as in cobra
		{[]string{"frobnicate"}, "", "frobnicate"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			cmd, _, unknown := lookup(root, tt.args)
			is.Equal(unknown, tt.unknown)
			is.Equal(cmd.path(), tt.path)
		})
	}
}

// TestFlagUsagesRoundTrip renders every recorded Flags section from the
// parsed flags and expects real bd's text back, which also validates the
// renderer used for commands the contract did not record.
func TestFlagUsagesRoundTrip(t *testing.T) {
	entries, err := helpFS.ReadDir("help")
	if err != nil {
		t.Fatalf("read help: %v", err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".txt")
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			h := recordedHelp(name)
			for _, header := range []string{"Flags:", "Global Flags:"} {
				i := strings.Index(h, "\n"+header+"\n")
				if i < 0 {
					continue
				}
				section := h[i+len(header)+2:]
				if j := strings.Index(section, "\n\n"); j >= 0 {
					section = section[:j]
				}
				section = strings.TrimRight(section, "\n")
				is.Equal(flagUsages(parseFlagSection(h, header)), section) // rendered flags match the recording
			}
		})
	}
}

func TestSuggestionsAndUnsupported(t *testing.T) {
	s := newScratch(t)
	tests := []struct {
		args       []string
		code       int
		stderrPart string
	}{
		{[]string{"redy"}, 1, "Error: unknown command \"redy\" for \"bd\"\n\nDid you mean this?\n\tready\n\trepo\n\nRun 'bd --help' for usage.\n"},
		{[]string{"assign", "x", "y"}, 1, `"bd assign" is a bd 1.0.5 command the bd stand-in does not implement`},
		{[]string{"ready", "--gated"}, 1, `flag --gated of "bd ready" is not implemented by the bd stand-in`},
		{[]string{"dep", "cycles"}, 1, `"bd dep cycles" is a bd 1.0.5 command`},
		{[]string{"--global", "ready"}, 1, "flag --global is not implemented"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			r := s.bd(s.repo, tt.args...)
			is.Equal(r.code, tt.code)
			is.True(strings.Contains(r.stderr, tt.stderrPart)) // loud, specific failure
		})
	}
}

func TestHelp(t *testing.T) {
	s := newScratch(t)
	is := is.New(t)
	r := s.bd(s.repo, "help", "ready")
	is.Equal(r.code, 0)
	is.Equal(r.stdout, recordedHelp("ready"))
	r = s.bd(s.repo, "where", "--help")
	is.Equal(r.code, 0)
	is.True(strings.Contains(r.stdout, "Usage:\n  bd where [flags]\n\nFlags:\n  -h, --help   help for where\n\nGlobal Flags:\n"))
	r = s.bd(s.repo, "label")
	is.Equal(r.code, 0) // cobra prints help for a command group
	is.Equal(r.stdout, recordedHelp("label"))
	r = s.bd(s.repo, "-V")
	is.Equal(r.stdout, "bd version 1.0.5 (6a3f515: v1.0.5@6a3f515ced18)\n")
}

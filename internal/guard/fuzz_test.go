package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ralphd/ralphd/internal/state"
)

// argvSep joins argv elements in fuzz inputs; it cannot occur in a real
// argument.
const argvSep = "\x00"

func argvSeeds(t testing.TB) []string {
	var seeds []string
	for _, argv := range bdCommandLines(t) {
		seeds = append(seeds, strings.Join(argv, argvSep))
	}
	for _, tc := range decideCases {
		seeds = append(seeds, strings.Join(tc.argv, argvSep))
	}
	return seeds
}

func splitArgv(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, argvSep)
}

func FuzzParseArgs(f *testing.F) {
	for _, s := range argvSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv := splitArgv(s)
		call, err := ParseArgs(argv)
		if err != nil {
			return
		}
		c := lookup(call.Command())
		if c == nil {
			t.Fatalf("ParseArgs(%q) path %q is not in the grammar", argv, call.Command())
		}
		for name := range call.Flags {
			if _, ok := c.flags[name]; !ok {
				t.Fatalf("ParseArgs(%q) reports flag %q that `bd %s` does not have", argv, name, call.Command())
			}
		}
		if len(call.Positionals)+len(call.Path) > len(argv) {
			t.Fatalf("ParseArgs(%q) invents arguments: %+v", argv, call)
		}
		again, err := ParseArgs(argv)
		if err != nil || !equalCalls(call, again) {
			t.Fatalf("ParseArgs(%q) is not deterministic", argv)
		}
	})
}

func equalCalls(a, b Call) bool {
	if !slices.Equal(a.Path, b.Path) || !slices.Equal(a.Positionals, b.Positionals) ||
		!slices.Equal(a.Unknown, b.Unknown) || a.Modelled != b.Modelled || len(a.Flags) != len(b.Flags) {
		return false
	}
	for k, v := range a.Flags {
		if !slices.Equal(v, b.Flags[k]) {
			return false
		}
	}
	return true
}

// Independent of the policy table: what BUILD must never be able to do.
var (
	neverInBuild = []string{"delete", "dep remove", "dep unrelate", "priority", "label remove", "edit", "sql",
		"import", "restore", "compact", "migrate", "config set", "config unset", "batch", "defer", "undefer"}
	updateNever = []string{"priority", "type", "acceptance", "title", "remove-label", "set-labels", "parent",
		"defer", "due"}
)

func FuzzDecide(f *testing.F) {
	for _, s := range argvSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv := splitArgv(s)
		if d := Decide(ModePlan, argv); !d.Allowed || d.Rule != RulePlanAll {
			t.Fatalf("PLAN refused %q: %+v", argv, d)
		}
		d := Decide(ModeBuild, argv)
		if d.Rule == "" || d.Reason == "" || d.Message() == "" {
			t.Fatalf("Decide(%q) gave an empty decision: %+v", argv, d)
		}
		if !d.Allowed {
			if d.Instead == "" {
				t.Fatalf("refusal of %q has no advice", argv)
			}
			return
		}
		// Property: anything BUILD allows is well-formed, known, and holds
		// no forbidden command, flag or value.
		call, err := ParseArgs(argv)
		if err != nil {
			t.Fatalf("BUILD allowed malformed %q: %v", argv, err)
		}
		if len(call.Unknown) > 0 || !call.Modelled {
			t.Fatalf("BUILD allowed %q with unknown flags %v", argv, call.Unknown)
		}
		if len(call.Path) == 0 && len(call.Positionals) > 0 {
			t.Fatalf("BUILD allowed unknown command %q", argv)
		}
		if slices.Contains(neverInBuild, call.Command()) {
			t.Fatalf("BUILD allowed forbidden command %q", argv)
		}
		switch call.Command() {
		case "update":
			for _, f := range updateNever {
				if _, ok := call.Flags[f]; ok {
					t.Fatalf("BUILD allowed `bd update --%s` in %q", f, argv)
				}
			}
			for _, v := range call.Flags["status"] {
				if v != "open" && v != "in_progress" && v != "blocked" {
					t.Fatalf("BUILD allowed status %q in %q", v, argv)
				}
			}
		case "close":
			if _, ok := call.Flags["force"]; ok {
				t.Fatalf("BUILD allowed close --force in %q", argv)
			}
			reasons := call.Flags["reason"]
			if len(reasons) == 0 || slices.ContainsFunc(reasons, func(r string) bool { return strings.TrimSpace(r) == "" }) {
				t.Fatalf("BUILD allowed close without a reason in %q", argv)
			}
		case "dep", "dep add":
			if _, ok := call.Flags["no-cycle-check"]; ok {
				t.Fatalf("BUILD allowed --no-cycle-check in %q", argv)
			}
		}
	})
}

func shellSeeds(t testing.TB) []string {
	var seeds []string
	for _, tc := range shellCases {
		seeds = append(seeds, tc.cmd)
	}
	seeds = append(seeds, streamCommands(t)...)
	seeds = append(seeds, strings.Split(string(readTestdata(t, "bd-commands.txt")), "\n")...)
	return seeds
}

func FuzzExtractBDCalls(f *testing.F) {
	for _, s := range shellSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		calls, err := ExtractBDCalls(cmd)
		if err != nil {
			return
		}
		for _, c := range calls {
			if len(c) == 0 {
				t.Fatalf("ExtractBDCalls(%q) returned an empty call", cmd)
			}
			_ = Decide(ModeBuild, c[1:])
		}
	})
}

func FuzzHook(f *testing.F) {
	for _, s := range shellSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		in, err := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash",
			"tool_input": map[string]any{"command": cmd}})
		if err != nil {
			t.Skip()
		}
		var stdout, stderr bytes.Buffer
		code := Hook(context.Background(), ModeBuild, bytes.NewReader(in), &stdout, &stderr)
		if code != HookAllow && code != HookBlock {
			t.Fatalf("hook returned %d for %q", code, cmd)
		}
		if code == HookBlock && stderr.Len() == 0 {
			t.Fatalf("hook blocked %q without a reason", cmd)
		}
		// JSON encoding replaces invalid UTF-8; check what the hook saw.
		var seen struct {
			ToolInput struct {
				Command string `json:"command"`
			} `json:"tool_input"`
		}
		if err := json.Unmarshal(in, &seen); err != nil {
			t.Fatal(err)
		}
		cmd = seen.ToolInput.Command
		calls, err := ExtractBDCalls(cmd)
		if err != nil && code != HookBlock {
			t.Fatalf("hook allowed %q which it cannot parse: %v", cmd, err)
		}
		// Property: the hook never lets through a plain bd call that the
		// policy refuses.
		for _, c := range calls {
			if code == HookAllow && !Decide(ModeBuild, c[1:]).Allowed && allLiteral(c) {
				t.Fatalf("hook allowed %q with refused call %q", cmd, c)
			}
		}
	})
}

// allLiteral reports whether none of the call's words came from shell
// expansions, so that Decide sees exactly what bd would.
func allLiteral(call []string) bool {
	for _, w := range call {
		if strings.ContainsAny(w, "$`*?[{}<>") || strings.Contains(w, dynMark) {
			return false
		}
	}
	return true
}

func FuzzHookInput(f *testing.F) {
	f.Add(readTestdata(f, "claude-hook-pretooluse-input.json"))
	f.Add(readTestdata(f, "claude-hook-stop-input.json"))
	f.Add(readTestdata(f, "claude-hook-pretooluse-deny-output.json"))
	f.Add([]byte(`{"tool_name":"Bash","tool_input":{"command":["bd","delete","x"]}}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var stdout, stderr bytes.Buffer
		code := Hook(context.Background(), ModeBuild, bytes.NewReader(in), &stdout, &stderr)
		if code != HookAllow && code != HookBlock {
			t.Fatalf("hook returned %d", code)
		}
		if !json.Valid(in) && code != HookBlock {
			t.Fatalf("hook allowed invalid JSON %q", in)
		}
	})
}

// FuzzReadAudit checks the audit file reader on any content a killed
// guard (or an agent) can leave: it never panics, and a call the guard
// appends after that content is read back, last and whole.
func FuzzReadAudit(f *testing.F) {
	for _, argv := range bdCommandLines(f) {
		b, _ := json.Marshal(state.BDCall{Argv: argv, Mode: "build", Allowed: true})
		f.Add(append(b, '\n'))
	}
	f.Add([]byte(`{"argv":["close","x"],"allowed":tr`)) // a guard killed mid-write
	f.Add([]byte("null\n[]\n{}\n\n\x00\n"))
	f.Fuzz(func(t *testing.T, left []byte) {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		if err := os.WriteFile(path, left, 0o600); err != nil {
			t.Fatal(err)
		}
		before := readAudit(path)
		call := state.BDCall{Argv: []string{"close", "t-1", "--reason", "done\n{"}, Mode: "build", Allowed: true, ExitCode: 0}
		if err := appendAudit(path, call); err != nil {
			t.Fatal(err)
		}
		after := readAudit(path)
		if len(after) != len(before)+1 || !reflect.DeepEqual(after[len(after)-1], call) {
			t.Fatalf("after %q the appended call reads back as %+v (before: %d calls)", left, after, len(before))
		}
	})
}

// FuzzParseMode checks the guard's mode (from its environment): only
// build and plan parse, and a parsed mode parses back to itself.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"build", "plan", "planning", " BUILD\n", "", "buildx", "PLAN\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			if m != "" {
				t.Fatalf("%q: error with mode %q", s, m)
			}
			return
		}
		if !m.Valid() {
			t.Fatalf("%q parsed as invalid mode %q", s, m)
		}
		if again, err := ParseMode(string(m)); err != nil || again != m {
			t.Fatalf("%q: %q parses back as %q, %v", s, m, again, err)
		}
	})
}

package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// shellCases lists shell commands with the bd calls ExtractBDCalls must
// find (calls, program word first) and whether the BUILD hook blocks the
// command. A nil calls means no bd call is expected; heuristic finds (an
// unknown wrapper, a computed program name) block without being reported.
var shellCases = []struct {
	name    string
	cmd     string
	calls   [][]string
	blocked bool
}{
	{"plain read", "bd ready --json", [][]string{{"bd", "ready", "--json"}}, false},
	{"after &&", "go test ./... && bd dep remove bd-1 bd-2", [][]string{{"bd", "dep", "remove", "bd-1", "bd-2"}}, true},
	{"after ||", "go test ./... || bd update bd-1 --status blocked", [][]string{{"bd", "update", "bd-1", "--status", "blocked"}}, false},
	{"after ;", "echo ok; bd update x --status=closed", [][]string{{"bd", "update", "x", "--status=closed"}}, true},
	{"bash -c", "bash -c 'bd delete x'", [][]string{{"bd", "delete", "x"}}, true},
	{"sh -c double quotes", `sh -c "bd update x -p 0"`, [][]string{{"bd", "update", "x", "-p", "0"}}, true},
	{"bash -lc fixture", `bash -lc 'bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"'`,
		[][]string{{"bd", "close", "bd-a1b2", "--reason", "Implemented retry backoff; tests pass"}}, false},
	{"nested shells", `bash -c 'sh -c "bd delete x"'`, [][]string{{"bd", "delete", "x"}}, true},
	{"busybox sh", "busybox sh -c 'bd delete x'", [][]string{{"bd", "delete", "x"}}, true},
	{"xargs refused", "echo bd-1 | xargs bd delete", [][]string{{"bd", "delete", "<xargs input>"}}, true},
	{"xargs read", "echo bd-1 | xargs bd show --json", [][]string{{"bd", "show", "--json", "<xargs input>"}}, false},
	{"xargs input could add flags", "echo bd-1 | xargs bd update", [][]string{{"bd", "update", "<xargs input>"}}, true},
	{"xargs replace string", "ls | xargs -I{} bd update {} --status in_progress",
		[][]string{{"bd", "update", "{}", "--status", "in_progress"}}, false},
	{"env", "env bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"env with options and assignments", "env -i FOO=1 -u BAR BAZ=2 bd update x --type bug",
		[][]string{{"bd", "update", "x", "--type", "bug"}}, true},
	{"env split string", `env -S "bd delete x"`, [][]string{{"bd", "delete", "x"}}, true},
	{"command builtin", "command bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"command -v is a lookup", "command -v bd", nil, false},
	{"exec", "exec bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"absolute path", "/usr/local/bin/bd delete x", [][]string{{"/usr/local/bin/bd", "delete", "x"}}, true},
	{"relative path", "./bd dep rm a b", [][]string{{"./bd", "dep", "rm", "a", "b"}}, true},
	{"subshell", "(cd sub && bd delete x)", [][]string{{"bd", "delete", "x"}}, true},
	{"brace group", "{ bd delete x; }", [][]string{{"bd", "delete", "x"}}, true},
	{"command substitution", "echo $(bd delete x)", [][]string{{"bd", "delete", "x"}}, true},
	{"backticks", "echo `bd delete x`", [][]string{{"bd", "delete", "x"}}, true},
	{"process substitution", "diff <(bd delete x) y", [][]string{{"bd", "delete", "x"}}, true},
	{"background", "bd delete x &", [][]string{{"bd", "delete", "x"}}, true},
	{"time keyword", "time bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"time program", "/usr/bin/time -f %e bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"nice", "nice -n 10 bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"nice old form", "nice -5 bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"nice long", "nice --adjustment 3 -- bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"timeout", "timeout 5 bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"timeout with signal", "timeout -s KILL 5s bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"nohup", "nohup bd delete x > /dev/null 2>&1 &", [][]string{{"bd", "delete", "x"}}, true},
	{"stdbuf", "stdbuf -oL bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"sudo", "sudo -u me bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"setsid", "setsid -w bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"flock command", "flock /tmp/lock bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"flock -c", "flock /tmp/lock -c 'bd delete x'", [][]string{{"bd", "delete", "x"}}, true},
	{"su -c", `su -c "bd delete x" me`, [][]string{{"bd", "delete", "x"}}, true},
	{"watch", "watch -n 5 bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"eval", `eval "bd delete x"`, [][]string{{"bd", "delete", "x"}}, true},
	{"alias", "shopt -s expand_aliases; alias d='bd delete x' e=ls\nd", [][]string{{"bd", "delete", "x"}}, true},
	{"find -exec", `find . -name '*.id' -exec bd delete {} \;`, [][]string{{"bd", "delete", "{}"}}, true},
	{"pipe read", "bd list --json | jq length", [][]string{{"bd", "list", "--json"}}, false},
	{"loop read", `cat ids | while read -r id; do bd show "$id"; done`, [][]string{{"bd", "show", `"$id"`}}, false},
	{"loop refused", "for id in a b; do bd update $id --priority 0; done",
		[][]string{{"bd", "update", "$id", "--priority", "0"}}, true},
	{"backslash escape", `\bd delete x`, [][]string{{`\bd`, "delete", "x"}}, true},
	{"quoted program", `"bd" delete x`, [][]string{{`"bd"`, "delete", "x"}}, true},
	{"split quotes", `b''d dep remove a b`, [][]string{{`b''d`, "dep", "remove", "a", "b"}}, true},
	{"ansi-c quoting", `$'\x62d' delete x`, [][]string{{`$'\x62d'`, "delete", "x"}}, true},
	{"brace expansion", "{bd,delete,x}", [][]string{{"bd", "delete", "x"}}, true},
	{"coproc", "coproc bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"negation", "! bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"comment after", "bd update x -p 0 # bump", [][]string{{"bd", "update", "x", "-p", "0"}}, true},
	{"global flags before command", "bd -C /tmp --actor x delete y", [][]string{{"bd", "-C", "/tmp", "--actor", "x", "delete", "y"}}, true},
	{"heredoc into bash", "bash <<'EOF'\nbd delete x\nEOF", [][]string{{"bd", "delete", "x"}}, true},
	{"heredoc through cat", "cat <<EOF | sh\nbd delete x\nEOF", [][]string{{"bd", "delete", "x"}}, true},
	{"here-string", `bash <<< "bd delete x"`, [][]string{{"bd", "delete", "x"}}, true},
	{"echo into bash", "echo 'bd delete x' | bash", [][]string{{"bd", "delete", "x"}}, true},
	{"printf into sh", `printf 'bd %s x\n' delete | sh`, [][]string{{"bd", "delete", "x"}}, true},
	{"heredoc as bd input", "bd create 'x' --stdin <<EOF\nbd delete y\nEOF", [][]string{{"bd", "create", "x", "--stdin"}}, false},
	{"dynamic subcommand", `bd $CMD x`, [][]string{{"bd", "$CMD", "x"}}, true},
	{"dynamic id", `bd update "$ID" --status in_progress`, [][]string{{"bd", "update", `"$ID"`, "--status", "in_progress"}}, false},
	{"dynamic status", `bd update x --status "$S"`, [][]string{{"bd", "update", "x", "--status", `"$S"`}}, true},
	{"dynamic notes", `bd update x --notes "$(cat notes.md)"`, [][]string{{"bd", "update", "x", "--notes", `"$(cat notes.md)"`}}, false},
	{"reason with literal text", `bd close x --reason "done: $(git log -1 --format=%h)"`,
		[][]string{{"bd", "close", "x", "--reason", `"done: $(git log -1 --format=%h)"`}}, false},
	{"stuck label, computed id", `bd label add "$ID" ralph:stuck`, [][]string{{"bd", "label", "add", `"$ID"`, "ralph:stuck"}}, true},
	{"label computed", `bd label add x "$L"`, [][]string{{"bd", "label", "add", "x", `"$L"`}}, true},
	{"label literal, id computed", `bd label add "$ID" needs-review`, [][]string{{"bd", "label", "add", `"$ID"`, "needs-review"}}, false},
	{"add-label computed", `bd update x --add-label "$L"`, [][]string{{"bd", "update", "x", "--add-label", `"$L"`}}, true},
	{"stuck label from a variable", `L=ralph:stuck; bd tag x "$L"`, [][]string{{"bd", "tag", "x", `"$L"`}}, true},
	{"reason only computed", `bd close x --reason "$R"`, [][]string{{"bd", "close", "x", "--reason", `"$R"`}}, true},
	{"dynamic flag name", `bd update x --$F 0`, [][]string{{"bd", "update", "x", "--$F", "0"}}, true},
	{"all arguments forwarded", `f() { bd "$@"; }; f delete x`, [][]string{{"bd", `"$@"`}}, true},
	{"glob flag", "bd update x --stat* closed", [][]string{{"bd", "update", "x", "--stat*", "closed"}}, true},
	{"unknown wrapper", "strace -f bd delete x", nil, true},
	{"computed wrapper", "$SUDO bd delete x", nil, true},
	{"wrappers stacked", "env nice -n 1 timeout 9 nohup bd delete x", [][]string{{"bd", "delete", "x"}}, true},
	{"unknown wrapper, read", "strace -f bd show x", nil, false},
	{"computed program", "$(which bd) delete x", nil, true},
	{"program in a variable", "B=bd; $B delete x", nil, true},
	{"glob program", "/usr/local/bin/b? delete x", nil, true},
	{"echoed text", `echo "bd delete x"`, nil, false},
	{"echoed words", `echo bd delete x`, nil, false},
	{"commit message", `git commit -m "guard refuses bd delete x"`, nil, false},
	{"other tool with delete", "kubectl delete pod x", nil, false},
	{"dynamic script is not visible", `bash -c "$CMD"`, nil, false},
	{"script file", "bash ./scripts/test.sh", nil, false},
	{"empty", "", nil, false},
}

func TestExtractBDCalls(t *testing.T) {
	if len(shellCases) < 25 {
		t.Fatalf("want at least 25 shell cases, have %d", len(shellCases))
	}
	for _, tc := range shellCases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got, err := ExtractBDCalls(tc.cmd)
			is.NoErr(err)
			is.Equal(got, tc.calls) // calls found
		})
	}
}

func TestHookShellCases(t *testing.T) {
	for _, tc := range shellCases {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			code, stderr := runHook(t, ModeBuild, hookJSON(t, tc.cmd))
			if tc.blocked {
				is.Equal(code, HookBlock)
				is.True(strings.Contains(stderr, "ralphd blocked this command")) // explains the block
				is.True(strings.Contains(stderr, "Instead:"))                    // says what to do
			} else {
				is.Equal(code, HookAllow)
				is.Equal(stderr, "")
			}
			code, _ = runHook(t, ModePlan, hookJSON(t, tc.cmd))
			is.Equal(code, HookAllow) // PLAN allows everything
		})
	}
}

func TestExtractBDCallsErrors(t *testing.T) {
	for _, tc := range []struct{ name, cmd string }{
		{"unterminated quote", "bd delete 'x"},
		{"dangling operator", "bd update x && "},
		{"unterminated substitution", "echo $("},
		{"broken inner script", `bash -c 'bd delete "x'`},
		{"nested too deep", nestedShells(maxShellDepth + 2)},
		{"brace expansion too large", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}"},
		{"too many commands", strings.Repeat("true; ", maxHops+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			cmd := tc.cmd
			_, err := ExtractBDCalls(cmd)
			is.True(err != nil) // fails instead of guessing
			code, stderr := runHook(t, ModeBuild, hookJSON(t, cmd))
			is.Equal(code, HookBlock) // the hook fails closed
			is.True(strings.Contains(stderr, "cannot analyse"))
		})
	}
}

// nestedShells returns `bd delete x` wrapped in n levels of `eval`.
func nestedShells(n int) string {
	s := "bd delete x"
	for range n {
		s = "eval " + bashQuote(s)
	}
	return s
}

func TestHookFixture(t *testing.T) {
	is := is.New(t)
	in := readTestdata(t, "claude-hook-pretooluse-input.json")
	code, stderr := runHook(t, ModeBuild, in)
	is.Equal(code, HookBlock)
	is.True(strings.Contains(stderr, "refused `bd update bd-a1b2 --priority 0`"))
	is.True(strings.Contains(stderr, "(rule build-priority)"))
	is.True(strings.Contains(stderr, "`bd update bd-a1b2 --append-notes"))

	// The fixture's deny output gives the reason the model should see; the
	// hook's stderr carries the same substance.
	var deny struct {
		HookSpecificOutput struct {
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	is.NoErr(json.Unmarshal(readTestdata(t, "claude-hook-pretooluse-deny-output.json"), &deny))
	is.True(strings.Contains(deny.HookSpecificOutput.PermissionDecisionReason, "--priority"))
	is.True(strings.Contains(stderr, "--priority"))

	code, _ = runHook(t, ModePlan, in)
	is.Equal(code, HookAllow)
}

func TestHookInputs(t *testing.T) {
	stop := string(readTestdata(t, "claude-hook-stop-input.json"))
	tests := []struct {
		name  string
		mode  Mode
		input string
		code  int
		want  string // substring of stderr
	}{
		{"stop event is not a tool call", ModeBuild, stop, HookAllow, ""},
		{"allowed command", ModeBuild, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"bd ready --json"}}`, HookAllow, ""},
		{"no bd at all", ModeBuild, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."}}`, HookAllow, ""},
		{"other tool", ModeBuild, `{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/x"}}`, HookAllow, ""},
		{"argv array", ModeBuild, `{"tool_name":"shell","tool_input":{"command":["bd","dep","rm","a","b"]}}`, HookBlock, "build-dep-remove"},
		{"argv array through bash", ModeBuild, `{"tool_name":"shell","tool_input":{"command":["bash","-lc","bd delete x"]}}`, HookBlock, "build-delete"},
		{"several refused calls", ModeBuild, `{"tool_name":"Bash","tool_input":{"command":"bd delete a; bd dep rm a b"}}`, HookBlock, "2 calls"},
		{"not json", ModeBuild, `{"tool_name":`, HookBlock, "not valid JSON"},
		{"bash without command", ModeBuild, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`, HookBlock, "no command"},
		{"bash without tool_input", ModeBuild, `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`, HookBlock, "no command"},
		{"command of the wrong type", ModeBuild, `{"tool_name":"Bash","tool_input":{"command":42}}`, HookBlock, "neither a string"},
		{"tool_input not an object", ModeBuild, `{"tool_name":"Bash","tool_input":"bd delete x"}`, HookBlock, "not an object"},
		{"unparseable shell", ModeBuild, `{"tool_name":"Bash","tool_input":{"command":"bd delete 'x"}}`, HookBlock, "cannot analyse"},
		{"unknown mode", Mode(""), `{"tool_name":"Bash","tool_input":{"command":"bd ready"}}`, HookBlock, "neither build nor plan"},
		{"plan, refused in build", ModePlan, `{"tool_name":"Bash","tool_input":{"command":"bd delete x --force"}}`, HookAllow, ""},
		{"plan, bad json still blocks", ModePlan, `nope`, HookBlock, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			code, stderr := runHook(t, tc.mode, []byte(tc.input))
			is.Equal(code, tc.code)
			is.True(strings.Contains(stderr, tc.want)) // stderr explains
			if code == HookAllow {
				is.Equal(stderr, "")
			}
		})
	}
}

func TestHookCancelledContext(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := Hook(ctx, ModeBuild, strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"bd ready"}}`), &stdout, &stderr)
	is.Equal(code, HookBlock)
}

// TestStreamCommands runs the extractor over the shell commands recorded in
// the agent-stream fixtures, as the lead's audit does.
func TestStreamCommands(t *testing.T) {
	is := is.New(t)
	cmds := streamCommands(t)
	is.True(len(cmds) >= 5)
	var deletes, closes int
	for _, c := range cmds {
		calls, err := ExtractBDCalls(c)
		is.NoErr(err)
		for _, call := range calls {
			d := Decide(ModeBuild, call[1:])
			switch d.Command {
			case "delete":
				deletes++
				is.True(!d.Allowed) // the fixture's `bd delete --force` is a violation in BUILD
			case "close":
				closes++
				is.True(d.Allowed) // closes with a reason are fine
			}
		}
	}
	is.True(deletes > 0)
	is.True(closes > 0)
}

func runHook(t *testing.T, mode Mode, input []byte) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Hook(context.Background(), mode, bytes.NewReader(input), &stdout, &stderr)
	if stdout.Len() != 0 {
		t.Errorf("hook wrote to stdout: %q", stdout.String())
	}
	return code, stderr.String()
}

func hookJSON(t *testing.T, command string) []byte {
	t.Helper()
	in := map[string]any{
		"session_id":      "s",
		"hook_event_name": "PreToolUse",
		"tool_name":       "Bash",
		"tool_input":      map[string]any{"command": command},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

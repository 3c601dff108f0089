package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		want    string // backend name; empty when an error is expected
		errText string
	}{
		{name: "claude", want: "claude"},
		{name: "command", opts: []Option{WithAgentCmd("./agent.sh")}, want: "command"},
		{name: "command", errText: "--agent-cmd"},
		{name: "command", opts: []Option{WithAgentCmd("   ")}, errText: "--agent-cmd"},
		{name: "codex", want: "codex"},
		{name: "opencode", want: "opencode"},
		{name: "gemini", want: "gemini"},
		{name: "amp", want: "amp"},
		{name: "gpt-9", errText: `unknown agent "gpt-9": choose one of claude, command, codex, opencode, gemini, amp`},
		{name: "", errText: "choose one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name+tt.errText, func(t *testing.T) {
			is := is.New(t)
			b, err := Lookup(tt.name, tt.opts...)
			if tt.errText != "" {
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), tt.errText)) // error names the fix
				return
			}
			is.NoErr(err)
			is.Equal(b.Name(), tt.want)
			is.True(b.NewParser() != nil)
		})
	}
}

func TestLookupOptions(t *testing.T) {
	is := is.New(t)
	b, err := Lookup("claude", WithBin("/opt/claude"), WithClock(clock))
	is.NoErr(err)
	is.Equal(b.Binary(), "/opt/claude")
	c, ok := b.(Claude)
	is.True(ok)
	is.Equal(c.Now(), fixedNow)

	b, err = Lookup("command", WithAgentCmd("echo hi"))
	is.NoErr(err)
	is.Equal(b.Binary(), "sh")
	spec, err := b.Command(Invocation{Mode: "build", IssueID: "bd-1", Iteration: 2, Attempt: 3, Prompt: "go"})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"sh", "-c", "echo hi"})
	is.Equal(spec.Stdin, "go")
	is.Equal(spec.Env, []string{"RALPH_MODE=build", "RALPH_ISSUE_ID=bd-1", "RALPH_ITERATION=2", "RALPH_ATTEMPT=3"})
}

func TestNames(t *testing.T) {
	is := is.New(t)
	names := Names()
	is.Equal(names[0], "claude") // the default first
	is.Equal(len(names), len(registry()))
	for _, n := range names {
		if n == "command" {
			continue // needs a command line
		}
		b, err := Lookup(n)
		is.NoErr(err)
		is.Equal(b.Name(), n) // the registry name is the backend's name
		is.Equal(b.Binary(), n)
		_, hint := b.(InstallHinter)
		is.True(hint) // every backend says how to install it
		v, ok := b.(Versioner)
		is.True(ok) // every agent CLI can print its version
		is.Equal(v.VersionArgs(), []string{"--version"})

		b, err = Lookup(n, WithBin("/opt/"+n))
		is.NoErr(err)
		is.Equal(b.Binary(), "/opt/"+n) // WithBin reaches every backend
	}
	b, err := Lookup("command", WithAgentCmd("x"))
	is.NoErr(err)
	_, ok := b.(Versioner)
	is.True(!ok) // the command backend has no version of its own
}

// WithBin overrides the backend's executable.
func WithBin(path string) Option { return func(c *Config) { c.Bin = path } }

// WithClock sets the clock used for reset times.
func WithClock(now func() time.Time) Option { return func(c *Config) { c.Now = now } }

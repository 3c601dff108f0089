package agent

import (
	"slices"
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

// TestEveryBackendAnswersForItself holds the promise that adding a
// backend is one file and one registry line: every registered backend
// answers, on its own, every question the rest of ralphd asks of an
// agent CLI (doctor, the sandbox, the egress proxy, `ralphd agents`,
// scripts/install-agents), so none of them needs to know it by name.
// Only the command backend, which runs anything, may answer "unknown".
func TestEveryBackendAnswersForItself(t *testing.T) {
	home := Home{Dir: "/h", Getenv: func(string) string { return "" }}
	seen := map[string]bool{}
	for _, e := range registry() {
		b := e.proto
		name := b.Name()
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			is.True(name != "" && !seen[name]) // a name of its own
			seen[name] = true
			made, err := e.make(Config{AgentCmd: "true"})
			is.NoErr(err)
			is.Equal(made.Name(), name)   // the registry line makes this backend
			is.True(b.Binary() != "")     // it names its executable
			is.True(b.NewParser() != nil) // and parses its own stream
			_, hint := b.(InstallHinter)
			is.True(hint) // it says how to install what it needs
			spec, err := made.Command(Invocation{Mode: "build", Prompt: "p"})
			is.NoErr(err)
			is.True(len(spec.Argv) > 0) // it builds its own argv
			v := b.Verified()
			is.True(v.Version != "" || v.Why != "") // a pinned version, or why there is none
			if name == "command" {
				is.Equal(len(b.Hosts(home.Getenv)), 0)  // anything: no hosts known
				is.True(!b.Credentials(home).Checkable) // nor credentials
				return
			}
			is.True(v.Package != "") // the package its CLI is installed from
			_, versioned := b.(Versioner)
			is.True(versioned) // its CLI prints its version for `ralphd agents`
			hosts := b.Hosts(home.Getenv)
			is.True(len(hosts) > 0) // the model API hosts it talks to
			for _, h := range hosts {
				is.True(h != "" && !strings.Contains(h, "/")) // a host, not a URL
			}
			is.True(b.Credentials(home).Checkable) // doctor can tell whether it is logged in
			dirs, files := b.Writable(home)
			is.True(len(nonEmpty(append(dirs, files...))) > 0) // the sandbox leaves its own dirs writable
			for _, p := range nonEmpty(append(dirs, files...)) {
				is.True(strings.HasPrefix(p, "/h/")) // under the home it was given
			}
			is.True(len(b.Guarded(home).Paths) > 0) // what of them configures its CLI, which BUILD may not change
			for _, k := range b.ScrubEnv() {
				is.True(slices.Contains(scrubbedEnv(), k)) // what it sets never reaches an agent
			}
		})
	}
}

package agent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"
)

// closeCmd is the bd command every success fixture runs.
const closeCmd = `bd close bd-a1b2 --reason "Implemented retry backoff; tests pass"`

// promiseText is the final text of every success fixture.
const promiseText = "Closed bd-a1b2. All tasks in the plan are done.\n\n<promise>COMPLETE</promise>"

// parseFixture feeds a testdata file to a fresh parser of b.
func parseFixture(t *testing.T, b Backend, name string, exit int, stderr string) (Outcome, []Event) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := b.NewParser()
	var evs []Event
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		evs = append(evs, p.Line(line)...)
	}
	return p.Finish(exit, stderr), evs
}

// fixtureCase is the expected Outcome of one fixture.
type fixtureCase struct {
	file   string
	exit   int
	want   Outcome
	reason string // a substring of Outcome.Reason
	events []EventKind
}

// checkFixtures runs every case with b and checks that every fixture
// matching glob has a case.
func checkFixtures(t *testing.T, b Backend, glob string, tests []fixtureCase) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", glob))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures match %s", glob)
	}
	for _, f := range files {
		if !slices.ContainsFunc(tests, func(tt fixtureCase) bool { return tt.file == filepath.Base(f) }) {
			t.Errorf("fixture %s has no expected outcome", f)
		}
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			got, evs := parseFixture(t, b, tt.file, tt.exit, "")
			is.Equal(got.Status, tt.want.Status)
			is.True(strings.Contains(got.Reason, tt.reason)) // reason
			is.Equal(got.ResultText, tt.want.ResultText)
			if tt.want.CostUSD == nil {
				is.True(got.CostUSD == nil) // no cost invented
			} else {
				is.True(got.CostUSD != nil)
				is.Equal(*got.CostUSD, *tt.want.CostUSD)
			}
			is.Equal(got.Usage, tt.want.Usage)
			is.Equal(got.Turns, tt.want.Turns)
			is.Equal(got.SessionID, tt.want.SessionID)
			is.True(got.ResetAt.Equal(tt.want.ResetAt)) // reset time
			is.Equal(got.Commands, tt.want.Commands)
			is.Equal(got.ToolCalls, tt.want.ToolCalls)
			is.Equal(got.Denials, tt.want.Denials)
			is.Equal(got.ExitCode, tt.want.ExitCode)
			is.Equal(got.Transient, tt.want.Transient)
			is.Equal(kinds(evs), tt.events)
		})
	}
}

// classCase is a crafted stream and the verdict it must get.
type classCase struct {
	name      string
	lines     []string
	exit      int
	stderr    string
	status    Status
	reason    string
	transient bool
	resetAt   time.Time
}

// checkClasses runs every crafted stream through a fresh parser of b.
func checkClasses(t *testing.T, b Backend, tests []classCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := feed(b.NewParser(), tt.exit, tt.stderr, tt.lines...)
			is.Equal(got.Status, tt.status)
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", got.Reason, tt.reason)
			}
			is.Equal(got.Transient, tt.transient)
			if !got.ResetAt.Equal(tt.resetAt) {
				t.Errorf("reset at %v, want %v", got.ResetAt, tt.resetAt)
			}
			is.Equal(got.ExitCode, tt.exit)
		})
	}
}

// fuzzParser seeds f with every fixture (whole and line by line) plus
// extra lines, and checks that the parser never panics, always returns a
// known status with a reason, and never invents a cost when costless.
func fuzzParser(f *testing.F, newParser func() Parser, costless bool, extra ...string) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, 0, "")
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(line, 1, "Error: rate limit")
		}
	}
	for _, l := range extra {
		f.Add([]byte(l), 1, "")
	}
	valid := []Status{StatusOK, StatusAgentError, StatusRateLimited, StatusFatal, StatusCrashed}
	f.Fuzz(func(t *testing.T, data []byte, exit int, stderr string) {
		p := newParser()
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			for _, ev := range p.Line(line) {
				if ev.Kind == "" {
					t.Fatalf("event without kind from %q", line)
				}
			}
		}
		out := p.Finish(exit, stderr)
		if !slices.Contains(valid, out.Status) {
			t.Fatalf("status %q", out.Status)
		}
		if out.Reason == "" {
			t.Fatal("empty reason")
		}
		if costless && out.CostUSD != nil {
			t.Fatal("a cost was invented")
		}
		if out.ToolCalls < len(out.Commands) {
			t.Fatalf("%d commands but %d tool calls", len(out.Commands), out.ToolCalls)
		}
	})
}

func TestClassifyText(t *testing.T) {
	tests := []struct {
		text string
		want textClass
	}{
		{"", classUnknown},
		{"unexpected status 401 Unauthorized: Missing bearer", classAuth},
		{"API key not valid. Please pass a valid API key.", classAuth},
		{"Error: Not logged in · Please run /login", classAuth},
		{"Your refresh token was already used; please log out and sign in again", classAuth},
		{"The model `gpt-9` does not exist or you do not have access to it.", classModel},
		{"ProviderModelNotFoundError: model not found", classModel},
		{"You've hit your usage limit. Try again in 4 days 20 hours.", classLimit},
		{"exceeded retry limit, last status: 429 Too Many Requests", classLimit},
		{"RESOURCE_EXHAUSTED: Quota exceeded for metric", classLimit},
		{"stream disconnected before completion", classTransient},
		{"[API Error: got status: 503 Service Unavailable]", classTransient},
		{"Overloaded", classTransient},
		{"the sandbox denied writing to /etc/passwd", classUnknown},
		{"bd-401 is blocked", classUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			is := is.New(t)
			is.Equal(classifyText(tt.text), tt.want)
		})
	}
}

func TestResetFromText(t *testing.T) {
	tests := []struct {
		text string
		want time.Time
	}{
		{`{"type":"usage_limit_reached","resets_in_seconds":3600}`, fixedNow.Add(time.Hour)},
		{`usage_limit_reached (resets_at: 1795366800)`, time.Unix(1795366800, 0)},
		{"Quota exceeded. Please retry in 32.5s.", fixedNow.Add(32500 * time.Millisecond)},
		{"Your quota will reset after 17h36m21s.", fixedNow.Add(17*time.Hour + 36*time.Minute + 21*time.Second)},
		{"Try again in 4 days 20 hours.", fixedNow.Add(116 * time.Hour)},
		{"try again at 3:04 PM.", time.Date(2026, 11, 21, 15, 4, 0, 0, time.UTC)},
		{"Too Many Requests", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			is := is.New(t)
			got, _, ok := resetFromText(tt.text, fixedNow)
			is.Equal(ok, !tt.want.IsZero())
			is.True(got.Equal(tt.want)) // reset time
		})
	}
}

func TestDenyPrefixes(t *testing.T) {
	is := is.New(t)
	is.Equal(denyPrefixes([]string{" bd  delete ", "", "bd delete", "bd dep\tremove"}), []string{"bd delete", "bd dep remove"})
	is.Equal(denyPrefixes(nil), []string(nil))
	is.Equal(denyMessage("build", "bd delete", nil),
		"ralphd: `bd delete` is not allowed in build mode (separation of powers); leave it to a planning iteration")
	is.True(strings.Contains(denyMessage("", "bd x", nil), "in this mode"))
}

// FuzzQuoteRule checks the quoting of what goes into Gemini CLI's policy
// and Codex's rules: a word is refused only for a control character, and
// a quoted one is a single line that reads back as the word (Go's
// double-quoted syntax reads \" and \\ as TOML and Starlark do).
func FuzzQuoteRule(f *testing.F) {
	for _, p := range []string{"bd delete", "bd dep remove", `bd "x"`, `a\b`, "é€😀", "tab\there", "\x7f", "\xff\xfe", `\"`} {
		f.Add(p)
		f.Add(denyMessage("build", p, nil))
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := quoteRule(s)
		control := strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
		if (err != nil) != control {
			t.Fatalf("%q: error %v, control character %v", s, err, control)
		}
		if err != nil {
			return
		}
		if strings.ContainsAny(q, "\n\r") {
			t.Fatalf("%q quoted over several lines: %q", s, q)
		}
		back, uerr := strconv.Unquote(q)
		if uerr != nil || (utf8.ValidString(s) && back != s) {
			t.Fatalf("%q quoted as %q reads back as %q, %v", s, q, back, uerr)
		}
	})
}

func TestToolTracker(t *testing.T) {
	is := is.New(t)
	var tr toolTracker
	is.True(tr.first("a", "ls"))
	is.True(!tr.first("a", "ls")) // the same call twice counts once
	is.True(tr.first("", "pwd"))  // calls without id always count
	is.True(tr.first("", ""))
	is.Equal(tr.calls, 3)
	is.Equal(tr.commands, []string{"ls", "pwd"})
	tr.deny(Denial{Tool: "bash", ToolID: "a", Command: "ls"})
	tr.deny(Denial{Tool: "bash", ToolID: "a", Command: "ls"})
	tr.deny(Denial{Tool: "bash", Command: "x"})
	tr.deny(Denial{Tool: "bash", Command: "x"})
	is.Equal(len(tr.denials), 2)
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// benchParser measures one backend's parser on a fixture.
func benchParser(b *testing.B, be Backend, fixture string) {
	data, err := os.ReadFile(filepath.Join("testdata", fixture))
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(data, []byte("\n"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		p := be.NewParser()
		for _, l := range lines {
			p.Line(l)
		}
		p.Finish(0, "")
	}
}

// TestCommandModel: the command backend gets the model it is asked for
// as RALPH_MODEL, and nothing when none is.
func TestCommandModel(t *testing.T) {
	is := is.New(t)
	spec, err := Command{Line: "x"}.Command(Invocation{Mode: "build", Model: "fast"})
	is.NoErr(err)
	is.True(slices.Contains(spec.Env, "RALPH_MODEL=fast")) // the agents entry command:fast
	spec, err = Command{Line: "x"}.Command(Invocation{Mode: "build"})
	is.NoErr(err)
	is.True(!slices.ContainsFunc(spec.Env, func(e string) bool { return strings.HasPrefix(e, "RALPH_MODEL=") })) // no model, no variable
}

// TestDenyWhyReachesEveryBackend: a prefix refused with a message of its
// own (the forge verbs ralphd refuses in every mode) reaches each
// backend's own permission layer, with that message where the layer shows
// one, and the other prefixes keep the separation of powers' message.
func TestDenyWhyReachesEveryBackend(t *testing.T) {
	const forge = "ralphd: `gh pr merge` is refused in every mode (rule forge-merge): a person merges"
	inv := func() Invocation {
		return Invocation{Mode: "plan", Prompt: "p", ScratchDir: t.TempDir(),
			DenyBash: []string{"bd delete", "gh pr merge"}, DenyWhy: map[string]string{"gh pr merge": forge}}
	}
	t.Run("codex", func(t *testing.T) {
		is := is.New(t)
		in := inv()
		_, err := Codex{Home: t.TempDir()}.Command(in)
		is.NoErr(err)
		rules, err := os.ReadFile(filepath.Join(in.ScratchDir, CodexHomeDir, "rules", CodexRulesFile))
		is.NoErr(err)
		is.True(strings.Contains(string(rules), "# "+forge+"\nprefix_rule(\n    pattern = [\"gh\", \"pr\", \"merge\"]"))
		is.True(strings.Contains(string(rules), "`bd delete` is not allowed in plan mode"))
	})
	t.Run("gemini", func(t *testing.T) {
		is := is.New(t)
		in := inv()
		_, err := Gemini{}.Command(in)
		is.NoErr(err)
		policy, err := os.ReadFile(filepath.Join(in.ScratchDir, GeminiPolicyFile))
		is.NoErr(err)
		is.True(strings.Contains(string(policy), "commandPrefix = \"gh pr merge\"\ndecision = \"deny\"\npriority = 999\ndenyMessage = \""+forge+"\""))
		is.True(strings.Contains(string(policy), "`bd delete` is not allowed in plan mode"))
	})
	t.Run("claude", func(t *testing.T) {
		is := is.New(t)
		spec, err := Claude{}.Command(inv())
		is.NoErr(err)
		is.True(slices.Contains(spec.Argv, "--disallowedTools=Bash(bd delete:*),Bash(gh pr merge:*)"))
	})
	t.Run("opencode", func(t *testing.T) {
		is := is.New(t)
		cfg, err := opencodeConfig(inv().DenyBash)
		is.NoErr(err)
		is.True(strings.Contains(string(cfg), `"gh pr merge *":"deny"`))
	})
}

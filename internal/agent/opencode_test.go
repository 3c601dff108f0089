package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"
)

func TestOpencodeParserFixtures(t *testing.T) {
	checkFixtures(t, Opencode{Now: clock}, "opencode-*.jsonl", []fixtureCase{
		{
			file: "opencode-success.jsonl",
			want: Outcome{
				Status:     StatusOK,
				ResultText: promiseText,
				CostUSD:    ptr(0.0214 + 0.0097),
				Usage:      Usage{InputTokens: 1203 + 152, OutputTokens: 118 + 37, CacheReadTokens: 17112 + 18412},
				Turns:      2,
				SessionID:  "ses_7a1b2c3d4e5fXyZaBcDeFgHi",
				Commands:   []string{closeCmd},
				ToolCalls:  1,
			},
			reason: "finished",
			events: []EventKind{EventInit, EventToolCall, EventToolResult, EventText, EventResult},
		},
	})
}

func TestOpencodeParserEventDetails(t *testing.T) {
	is := is.New(t)
	_, evs := parseFixture(t, Opencode{Now: clock}, "opencode-success.jsonl", 0, "")
	is.Equal(evs[0].SessionID, "ses_7a1b2c3d4e5fXyZaBcDeFgHi")
	is.Equal(evs[1].Tool, "bash")
	is.Equal(evs[1].ToolID, "call_Qm9vQmFyQmF6MDAx")
	is.Equal(evs[1].Command, closeCmd)
	is.Equal(evs[2].Text, "✓ Closed bd-a1b2: Implemented retry backoff; tests pass\n")
	is.Equal(evs[4].Text, promiseText)
}

func TestOpencodeParserClassification(t *testing.T) {
	const step = `{"type":"step_finish","sessionID":"s1","part":{"type":"step-finish","reason":"stop","cost":0.01,"tokens":{"input":1,"output":1}}}`
	errLine := func(e string) string { return `{"type":"error","timestamp":1,"sessionID":"s1","error":` + e + `}` }
	checkClasses(t, Opencode{Now: clock}, []classCase{
		{name: "429 with retry-after", exit: 1, lines: []string{errLine(
			`{"name":"APIError","data":{"message":"Too Many Requests","statusCode":429,"isRetryable":true,"responseHeaders":{"retry-after":"120"}}}`)},
			status: StatusRateLimited, reason: "rate limited", resetAt: fixedNow.Add(2 * time.Minute)},
		{name: "429 with retry-after-ms", exit: 1, lines: []string{errLine(
			`{"name":"APIError","data":{"message":"slow down","statusCode":429,"responseHeaders":{"retry-after-ms":"1500"}}}`)},
			status: StatusRateLimited, resetAt: fixedNow.Add(1500 * time.Millisecond)},
		{name: "quota text without status", exit: 1, lines: []string{errLine(
			`{"name":"UnknownError","data":{"message":"You exceeded your current quota, please check your plan"}}`)},
			status: StatusRateLimited, reason: "quota"},
		{name: "provider auth", exit: 1, lines: []string{errLine(
			`{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"credentials expired"}}`)},
			status: StatusFatal, reason: "opencode auth login"},
		{name: "401", exit: 1, lines: []string{errLine(`{"name":"APIError","data":{"message":"nope","statusCode":401}}`)},
			status: StatusFatal, reason: "cannot authenticate"},
		{name: "model not found", exit: 1, lines: []string{errLine(
			`{"name":"ProviderModelNotFoundError","data":{"providerID":"openai","modelID":"gpt-9"}}`)},
			status: StatusFatal, reason: "rejected the model"},
		{name: "server error", exit: 1, lines: []string{errLine(`{"name":"APIError","data":{"message":"upstream","statusCode":502,"isRetryable":true}}`)},
			status: StatusRateLimited, transient: true, resetAt: fixedNow.Add(DefaultTransientBackoff)},
		{name: "retryable without status", exit: 1, lines: []string{errLine(`{"name":"APIError","data":{"message":"hiccup","isRetryable":true}}`)},
			status: StatusRateLimited, transient: true, resetAt: fixedNow.Add(DefaultTransientBackoff)},
		{name: "bad request is the agent's", exit: 1, lines: []string{step, errLine(
			`{"name":"APIError","data":{"message":"prompt is too long","statusCode":400,"isRetryable":false}}`)},
			status: StatusAgentError, reason: "opencode error APIError: prompt is too long"},
		{name: "aborted", exit: 1, lines: []string{errLine(`{"name":"MessageAbortedError","data":{"message":"Aborted"}}`)},
			status: StatusCrashed, reason: "aborted"},
		{name: "bare error string", exit: 1, lines: []string{errLine(`"boom"`)},
			status: StatusAgentError, reason: "boom"},
		{name: "steps and exit 0 without done", lines: []string{step}, status: StatusOK},
		{name: "steps then a non-zero exit", exit: 1, lines: []string{step}, stderr: "Error: session failed\n",
			status: StatusAgentError, reason: "exited with code 1: Error: session failed"},
		{name: "no prompt", exit: 1, stderr: "Error: You must provide a message or a command\n",
			status: StatusFatal, reason: "no prompt"},
		{name: "no api key on stderr", exit: 1, stderr: "Error: No API key found for provider anthropic\n",
			status: StatusFatal, reason: "cannot authenticate"},
		{name: "too old for the command line", exit: 1, stderr: "Unknown argument: format\n",
			status: StatusFatal, reason: "npm install -g opencode-ai@latest"},
		{name: "killed before any step", exit: -1, lines: []string{`{"type":"step_start","sessionID":"s1","part":{}}`},
			status: StatusCrashed, reason: "killed by a signal"},
		{name: "garbage", exit: 2, lines: []string{"x", `{"type":"future"}`, `{"type":"tool_use","part":7}`},
			status: StatusCrashed, reason: "exit code 2"},
	})
}

func TestOpencodeParserTools(t *testing.T) {
	is := is.New(t)
	tool := func(id, name, status, input, extra string) string {
		return `{"type":"tool_use","sessionID":"s1","part":{"type":"tool","callID":"` + id + `","tool":"` + name +
			`","state":{"status":"` + status + `","input":` + input + extra + `}}}`
	}
	got := feed(Opencode{Now: clock}.NewParser(), 0, "",
		tool("c1", "bash", "error", `{"command":"bd delete bd-1"}`,
			`,"error":"The user has specified a rule which prevents you from using this specific tool call."`),
		tool("c1", "bash", "error", `{"command":"bd delete bd-1"}`, `,"error":"again"`), // the same call again
		tool("c2", "read", "completed", `{"filePath":"a.go"}`, `,"output":"package a"`),
		tool("c3", "bash", "error", `{"command":"false"}`, `,"error":"exit 1"`),
		`{"type":"step_finish","sessionID":"s1","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":5,"cache":{"read":6,"write":7}}}}`,
	)
	is.Equal(got.Status, StatusOK)
	is.Equal(got.Commands, []string{"bd delete bd-1", "false"})
	is.Equal(got.ToolCalls, 3)
	is.Equal(got.Denials, []Denial{{Tool: "bash", ToolID: "c1", Command: "bd delete bd-1"}})
	is.Equal(got.Usage, Usage{InputTokens: 3, OutputTokens: 9, CacheReadTokens: 6, CacheWriteTokens: 7})
	is.True(got.CostUSD == nil) // no step reported a cost
	is.Equal(got.SessionID, "s1")
}

func TestOpencodeCommand(t *testing.T) {
	is := is.New(t)
	inv := Invocation{Mode: "build", IssueID: "bd-1", Iteration: 1, Attempt: 1, Prompt: "go", Model: "anthropic/claude-sonnet-4-5",
		DenyBash: []string{"bd delete", "bd  dep remove", "bd delete"}}
	spec, err := Opencode{}.Command(inv)
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"opencode", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5"})
	is.Equal(spec.Stdin, "go")
	is.Equal(spec.Env[:4], []string{"RALPH_MODE=build", "RALPH_ISSUE_ID=bd-1", "RALPH_ITERATION=1", "RALPH_ATTEMPT=1"})
	is.Equal(len(spec.Env), 5)
	cfg, ok := strings.CutPrefix(spec.Env[4], OpencodeConfigEnv+"=")
	is.True(ok)
	var parsed struct {
		Permission struct{ Bash map[string]string }
		Snapshot   *bool
	}
	is.NoErr(json.Unmarshal([]byte(cfg), &parsed))
	is.True(parsed.Snapshot != nil && !*parsed.Snapshot) // its snapshot repos stay read-only: not used
	is.Equal(parsed.Permission.Bash, map[string]string{
		"bd delete": "deny", "bd delete *": "deny", "bd dep remove": "deny", "bd dep remove *": "deny",
	})

	// opencode takes its project directory from $PWD: the run's
	// directory is passed there, so ralphd's own PWD never leaks in.
	dir := t.TempDir()
	inv.Dir = dir
	spec, err = Opencode{}.Command(inv)
	is.NoErr(err)
	is.True(slices.Contains(spec.Env, "PWD="+dir))

	// Nothing denied: no config.
	spec, err = Opencode{Bin: "/opt/opencode"}.Command(Invocation{Mode: "plan", Prompt: "p"})
	is.NoErr(err)
	is.Equal(spec.Argv, []string{"/opt/opencode", "run", "--format", "json"})
	is.True(!slices.ContainsFunc(spec.Env, func(kv string) bool { return strings.HasPrefix(kv, OpencodeConfigEnv) }))
}

func FuzzOpencodeParser(f *testing.F) {
	fuzzParser(f, func() Parser { return Opencode{Now: clock}.NewParser() }, false,
		`{"type":"error","error":{"name":"APIError","data":{"statusCode":429,"responseHeaders":{"retry-after":"1e300"}}}}`,
		`{"type":"step_finish","part":{"cost":"x","tokens":{"input":-5}}}`,
	)
}

func BenchmarkOpencodeParser(b *testing.B) {
	benchParser(b, Opencode{Now: clock}, "opencode-success.jsonl")
}

// TestOpencodeUnpricedCost: opencode 1.18.33 writes "cost":0 on every
// step for a model without a price (a custom provider, as in the
// end-to-end tests): tokens were spent, so the cost is unknown, not $0.
func TestOpencodeUnpricedCost(t *testing.T) {
	is := is.New(t)
	p := Opencode{Now: clock}.NewParser()
	p.Line([]byte(`{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"total":111,"input":100,"output":11,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}`))
	o := p.Finish(0, "")
	is.True(o.CostUSD == nil)                 // absent, not invented
	is.Equal(o.Usage.InputTokens, int64(100)) // tokens are still read
	is.Equal(o.Usage.OutputTokens, int64(11))

	p = Opencode{Now: clock}.NewParser()
	p.Line([]byte(`{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":100,"output":11},"cost":0.25}}`))
	o = p.Finish(0, "")
	is.True(o.CostUSD != nil && *o.CostUSD == 0.25) // a priced run keeps its cost
}

// opencodeHome is a home dir for the opencode session tests, and the dir
// of ralphd's databases below it.
func opencodeHome(t *testing.T) (Home, string) {
	t.Helper()
	home := t.TempDir()
	return Home{Dir: home, Getenv: func(string) string { return "" }}, filepath.Join(home, ".local", "share", "opencode", "ralphd")
}

// specEnv returns the last value of key in spec's environment.
func specEnv(spec Spec, key string) string {
	v := ""
	for _, kv := range spec.Env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

func TestOpencodeSavesAndResumesASession(t *testing.T) {
	is := is.New(t)
	h, dir := opencodeHome(t)
	var o Opencode
	is.True(CanResume(o))
	inv := Invocation{Mode: "build", IssueID: "e2e-a", Dir: "/w/repo", Home: h, Prompt: "work"}

	// A fresh run: its own database, old copies (and a link in the
	// database's place) removed, the link's target left alone.
	is.NoErr(os.MkdirAll(dir, 0o700))
	secret := filepath.Join(h.Dir, "secret")
	is.NoErr(os.WriteFile(secret, []byte("keep"), 0o600))
	db := filepath.Join(dir, "issue-e2e-a.db")
	is.NoErr(os.Symlink(secret, db))
	is.NoErr(os.WriteFile(db+"-wal", []byte("old"), 0o600))
	is.NoErr(os.MkdirAll(filepath.Join(db+"-shm", "x"), 0o700))
	spec, err := o.Command(inv)
	is.NoErr(err)
	is.Equal(specEnv(spec, OpencodeDBEnv), db)
	is.True(!slices.Contains(spec.Argv, "--session"))
	is.True(!slices.Contains(spec.Argv, "--continue"))
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		_, err := os.Lstat(p)
		is.True(errors.Is(err, fs.ErrNotExist))
	}
	got, err := os.ReadFile(secret)
	is.NoErr(err)
	is.Equal(string(got), "keep")

	// opencode writes its database and -wal; ralphd keeps both.
	is.NoErr(os.WriteFile(db, []byte("SQLite format 3\x00 main"), 0o600))
	is.NoErr(os.WriteFile(db+"-wal", []byte("wal "+testOpencodeSession), 0o600))
	is.NoErr(os.WriteFile(db+"-shm", []byte("shm"), 0o600))
	s, err := o.SaveSession(inv, testOpencodeSession)
	is.NoErr(err)
	is.Equal(s.ID, testOpencodeSession)
	is.Equal(len(s.Files), 2)
	is.Equal(s.Files[0].Rel, testOpencodeSession+".db")
	is.Equal(s.Files[1].Rel, testOpencodeSession+".db-wal")

	// Before the resume the agent rewrites the database it knows of,
	// links its -wal to a file of the user's, and plants a -shm and a
	// -journal. The session goes back under the issue's own name.
	resumed := db
	is.NoErr(os.WriteFile(resumed, []byte("planted"), 0o600))
	is.NoErr(os.Remove(resumed + "-wal"))
	is.NoErr(os.Symlink(secret, resumed+"-wal"))
	is.NoErr(os.WriteFile(resumed+"-shm", []byte("planted"), 0o600))
	is.NoErr(os.Symlink(secret, resumed+"-journal"))
	inv.Resume, inv.Prompt = &s, "go on"
	spec, err = o.Command(inv)
	is.NoErr(err)
	is.Equal(specEnv(spec, OpencodeDBEnv), resumed)
	i := slices.Index(spec.Argv, "--session")
	is.True(i > 0)
	is.Equal(spec.Argv[i+1], testOpencodeSession)
	is.True(!slices.Contains(spec.Argv, "--continue"))
	is.Equal(spec.Stdin, "go on")
	for _, f := range s.Files {
		got, err := os.ReadFile(filepath.Join(dir, strings.Replace(f.Rel, testOpencodeSession, "issue-e2e-a", 1)))
		is.NoErr(err)
		is.Equal(string(got), string(f.Data))
	}
	got, err = os.ReadFile(secret)
	is.NoErr(err)
	is.Equal(string(got), "keep") // the link was replaced, not written through
	for _, p := range []string{resumed + "-shm", resumed + "-journal", filepath.Join(dir, testOpencodeSession+".db")} {
		_, err := os.Lstat(p)
		is.True(errors.Is(err, fs.ErrNotExist))
	}

	// A session kept without a -wal: a -wal planted beside the resumed
	// database would be replayed over it, so it goes.
	s.Files = s.Files[:1]
	s.Files[0].Data = []byte("db " + testOpencodeSession)
	is.NoErr(os.WriteFile(resumed+"-wal", []byte("planted"), 0o600))
	_, err = o.Command(inv)
	is.NoErr(err)
	_, err = os.Lstat(resumed + "-wal")
	is.True(errors.Is(err, fs.ErrNotExist))

	// XDG_DATA_HOME moves the databases; a relative one is ignored.
	data := t.TempDir()
	h.Getenv = func(k string) string {
		if k == "XDG_DATA_HOME" {
			return data
		}
		return ""
	}
	spec, err = o.Command(Invocation{Mode: "build", IssueID: "e2e-a", Home: h})
	is.NoErr(err)
	is.Equal(specEnv(spec, OpencodeDBEnv), filepath.Join(data, "opencode", "ralphd", "issue-e2e-a.db"))

	// PLANNING keeps opencode's own database.
	spec, err = o.Command(Invocation{Mode: "plan", Home: h})
	is.NoErr(err)
	is.Equal(specEnv(spec, OpencodeDBEnv), "")
}

func TestOpencodeDBName(t *testing.T) {
	is := is.New(t)
	is.Equal(opencodeDBName("e2e-a"), "issue-e2e-a.db")
	is.Equal(opencodeDBName("bd-1_x"), "issue-bd-1_x.db")
	seen := map[string]bool{}
	for _, id := range []string{"../../x", "a/b", "a.b", ".", "x\x00", strings.Repeat("a", 65), "-", "--session"} {
		n := opencodeDBName(id)
		is.True(!strings.ContainsAny(strings.TrimSuffix(n, ".db"), "/.\x00")) // one plain name
		is.True(strings.HasPrefix(n, "issue-") || strings.HasPrefix(n, "hash-"))
		is.True(!seen[n])
		seen[n] = true
	}
}

// The agent's tries at making ralphd keep something other than its run's
// database: each leaves nothing to resume.
func TestOpencodeSaveSessionRefusesPlants(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, h Home, dir string)
		id    string
	}{
		{"database is a link to a secret", func(t *testing.T, h Home, dir string) {
			secret := filepath.Join(h.Dir, "secret")
			_ = os.WriteFile(secret, []byte(testOpencodeSession), 0o600)
			_ = os.Remove(filepath.Join(dir, "issue-e2e-a.db"))
			_ = os.Symlink(secret, filepath.Join(dir, "issue-e2e-a.db"))
		}, testOpencodeSession},
		{"database is a hard link", func(t *testing.T, h Home, dir string) {
			_ = os.Link(filepath.Join(dir, "issue-e2e-a.db"), filepath.Join(h.Dir, "other"))
		}, testOpencodeSession},
		{"-wal is a link", func(t *testing.T, h Home, dir string) {
			secret := filepath.Join(h.Dir, "secret")
			_ = os.WriteFile(secret, []byte("secret"), 0o600)
			_ = os.Symlink(secret, filepath.Join(dir, "issue-e2e-a.db-wal"))
		}, testOpencodeSession},
		{"ralphd's dir is a link", func(t *testing.T, h Home, dir string) {
			elsewhere := filepath.Join(h.Dir, "elsewhere")
			_ = os.Rename(dir, elsewhere)
			_ = os.Symlink(elsewhere, dir)
		}, testOpencodeSession},
		{"a second database holds the session, the run's does not", func(t *testing.T, h Home, dir string) {
			_ = os.WriteFile(filepath.Join(dir, "issue-e2e-a.db"), []byte("SQLite format 3"), 0o600)
			_ = os.WriteFile(filepath.Join(dir, testOpencodeSession+".db"), []byte(testOpencodeSession), 0o600)
		}, testOpencodeSession},
		{"the run's database is gone", func(t *testing.T, h Home, dir string) {
			_ = os.Remove(filepath.Join(dir, "issue-e2e-a.db"))
			_ = os.WriteFile(filepath.Join(dir, "issue-other.db"), []byte(testOpencodeSession), 0o600)
		}, testOpencodeSession},
		{"database too large", func(t *testing.T, h Home, dir string) {
			_ = os.WriteFile(filepath.Join(dir, "issue-e2e-a.db-wal"), bytes.Repeat([]byte("x"), MaxSessionBytes), 0o600)
		}, testOpencodeSession},
		{"a UUID", func(t *testing.T, h Home, dir string) {}, testSession},
		{"a path as id", func(t *testing.T, h Home, dir string) {}, "ses_../../../../../../../etc"},
		{"an option as id", func(t *testing.T, h Home, dir string) {}, "--continue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			h, dir := opencodeHome(t)
			is.NoErr(os.MkdirAll(dir, 0o700))
			is.NoErr(os.WriteFile(filepath.Join(dir, "issue-e2e-a.db"), []byte("db "+testOpencodeSession), 0o600))
			c.plant(t, h, dir)
			_, err := Opencode{}.SaveSession(Invocation{Mode: "build", IssueID: "e2e-a", Home: h}, c.id)
			is.True(err != nil)
		})
	}
}

// Sessions that are not opencode's, or not ralphd's copy of one, are not
// put back.
func TestOpencodeCommandRefusesForeignSessions(t *testing.T) {
	db := func(id string) SessionFile { return SessionFile{Rel: id + ".db", Data: []byte("db")} }
	for _, c := range []struct {
		name string
		s    Session
		mode string
	}{
		{"a UUID session", Session{ID: testSession, Files: []SessionFile{db(testSession)}}, "build"},
		{"a bad id", Session{ID: "ses_../../x", Files: []SessionFile{db("ses_../../x")}}, "build"},
		{"no database", Session{ID: testOpencodeSession, Files: []SessionFile{{Rel: testOpencodeSession + ".db-wal", Data: []byte("w")}}}, "build"},
		{"a second database", Session{ID: testOpencodeSession, Files: []SessionFile{db(testOpencodeSession), {Rel: "x-" + testOpencodeSession + ".db", Data: []byte("d")}}}, "build"},
		{"a -shm", Session{ID: testOpencodeSession, Files: []SessionFile{db(testOpencodeSession), {Rel: testOpencodeSession + ".db-shm", Data: []byte("s")}}}, "build"},
		{"a file in a subdir", Session{ID: testOpencodeSession, Files: []SessionFile{{Rel: "../" + testOpencodeSession + ".db", Data: []byte("d")}}}, "build"},
		{"in PLANNING", Session{ID: testOpencodeSession, Files: []SessionFile{db(testOpencodeSession)}}, "plan"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			h, dir := opencodeHome(t)
			_, err := Opencode{}.Command(Invocation{Mode: c.mode, IssueID: "e2e-a", Home: h, Resume: &c.s})
			is.True(err != nil)
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				is.True(!strings.HasPrefix(e.Name(), "ses_")) // nothing was written
			}
		})
	}
}

// A resume opencode refuses (1.18.33: "Error: Session not found" on
// stderr, exit 1, nothing on stdout) ends before any tool ran, which the
// loop takes as a failed resume and falls back to a fresh session.
func TestOpencodeResumeRefused(t *testing.T) {
	is := is.New(t)
	p := Opencode{Now: clock}.NewParser()
	out := p.Finish(1, "\x1b[91m\x1b[1mError: \x1b[0mSession not found\n")
	is.Equal(out.Status, StatusCrashed)
	is.Equal(out.ToolCalls, 0)
	is.True(strings.Contains(out.Reason, "Session not found"))
}

// TestOpencodeDropsAnIssuesDatabase checks DropSessionFiles: the issue's
// database and sidecars go, whatever made them (a fresh run or a
// resume), the other issues' stay, and no link is followed.
func TestOpencodeDropsAnIssuesDatabase(t *testing.T) {
	is := is.New(t)
	h, dir := opencodeHome(t)
	var o Opencode
	// Nothing there yet: no error, nothing made.
	is.NoErr(o.DropSessionFiles(h, "e2e-a"))
	_, err := os.Lstat(dir)
	is.True(errors.Is(err, fs.ErrNotExist))

	// A resume puts the session under the issue's name.
	s := Session{ID: testOpencodeSession, Files: []SessionFile{
		{Rel: testOpencodeSession + ".db", Data: []byte("db " + testOpencodeSession)},
		{Rel: testOpencodeSession + ".db-wal", Data: []byte("wal")},
	}}
	_, err = o.Command(Invocation{Mode: "build", IssueID: "e2e-a", Home: h, Resume: &s})
	is.NoErr(err)
	secret := filepath.Join(h.Dir, "secret")
	is.NoErr(os.WriteFile(secret, []byte("keep"), 0o600))
	is.NoErr(os.Symlink(secret, filepath.Join(dir, "issue-e2e-a.db-shm")))     // a link: removed, not followed
	is.NoErr(os.MkdirAll(filepath.Join(dir, "issue-e2e-a.db-journal"), 0o700)) // a dir in a sidecar's place
	is.NoErr(os.Symlink(secret, filepath.Join(dir, "issue-e2e-a.db-journal", "x")))
	other := filepath.Join(dir, "issue-e2e-b.db")
	is.NoErr(os.WriteFile(other, []byte("b"), 0o600))
	is.NoErr(os.WriteFile(other+"-wal", []byte("b"), 0o600))

	is.NoErr(DropSessionFiles(h, "e2e-a")) // through the registry
	ents, err := os.ReadDir(dir)
	is.NoErr(err)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	is.Equal(left, []string{"issue-e2e-b.db", "issue-e2e-b.db-wal"})
	got, err := os.ReadFile(secret)
	is.NoErr(err)
	is.Equal(string(got), "keep")

	// An issue id that is no plain name: its hashed database goes.
	_, err = o.Command(Invocation{Mode: "build", IssueID: "a/../b", Home: h})
	is.NoErr(err)
	hashed := filepath.Join(dir, opencodeDBName("a/../b"))
	is.NoErr(os.WriteFile(hashed, []byte("x"), 0o600))
	is.NoErr(o.DropSessionFiles(h, "a/../b"))
	_, err = os.Lstat(hashed)
	is.True(errors.Is(err, fs.ErrNotExist))

	// opencode/ralphd replaced by a link to elsewhere: refused, and
	// nothing there is touched.
	elsewhere := t.TempDir()
	is.NoErr(os.WriteFile(filepath.Join(elsewhere, "issue-e2e-b.db"), []byte("b"), 0o600))
	is.NoErr(os.RemoveAll(dir))
	is.NoErr(os.Symlink(elsewhere, dir))
	is.True(o.DropSessionFiles(h, "e2e-b") != nil)
	_, err = os.Stat(filepath.Join(elsewhere, "issue-e2e-b.db"))
	is.NoErr(err)
}

// TestOpencodePrunesOldDatabases checks PruneSessionFiles: a set goes
// when none of its files changed since the cutoff, unless its issue is
// kept; names ralphd does not give are left alone.
func TestOpencodePrunesOldDatabases(t *testing.T) {
	h, dir := opencodeHome(t)
	now := time.Now()
	old, fresh := now.Add(-10*24*time.Hour), now.Add(-time.Minute)
	cutoff := now.Add(-7 * 24 * time.Hour)
	type file struct {
		name string
		at   time.Time
	}
	for _, c := range []struct {
		name  string
		files []file
		keep  []string
		gone  bool
	}{
		{"an old database and its sidecars", []file{{"issue-a.db", old}, {"issue-a.db-wal", old}, {"issue-a.db-shm", old}}, nil, true},
		{"a fresh database", []file{{"issue-a.db", fresh}}, nil, false},
		{"an old database with a fresh -wal (a run in progress)", []file{{"issue-a.db", old}, {"issue-a.db-wal", fresh}}, nil, false},
		{"an old database of a running issue", []file{{"issue-a.db", old}, {"issue-a.db-wal", old}}, []string{"a"}, false},
		{"another issue running", []file{{"issue-a.db", old}}, []string{"b"}, true},
		{"stray sidecars", []file{{"issue-a.db-wal", old}, {"issue-a.db-journal", old}}, nil, true},
		{"an old hashed database", []file{{opencodeDBName("a/b"), old}}, nil, true},
		{"a hashed one running", []file{{opencodeDBName("a/b"), old}}, []string{"a/b"}, false},
		{"an old resumed database of an earlier release", []file{{testOpencodeSession + ".db", old}, {testOpencodeSession + ".db-wal", old}}, nil, true},
		{"a name ralphd does not give", []file{{"notes.db", old}, {"issue-.db", old}, {"ses_x.db", old}, {"issue-a.sqlite", old}}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			is.NoErr(os.RemoveAll(dir))
			is.NoErr(os.MkdirAll(dir, 0o700))
			for _, f := range c.files {
				p := filepath.Join(dir, f.name)
				is.NoErr(os.WriteFile(p, []byte("x"), 0o600))
				is.NoErr(os.Chtimes(p, f.at, f.at))
			}
			n, err := PruneSessionFiles(h, cutoff, c.keep)
			is.NoErr(err)
			left, err := os.ReadDir(dir)
			is.NoErr(err)
			if c.gone {
				is.Equal(n, 1)
				is.Equal(len(left), 0)
			} else {
				is.Equal(n, 0)
				is.Equal(len(left), len(c.files))
			}
		})
	}

	t.Run("links and dirs are removed, never followed", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(os.RemoveAll(dir))
		is.NoErr(os.MkdirAll(filepath.Join(dir, "issue-a.db"), 0o700))
		target := filepath.Join(h.Dir, "target")
		is.NoErr(os.MkdirAll(target, 0o700))
		is.NoErr(os.WriteFile(filepath.Join(target, "f"), []byte("keep"), 0o600))
		is.NoErr(os.Symlink(target, filepath.Join(dir, "issue-a.db", "in")))
		is.NoErr(os.Symlink(target, filepath.Join(dir, "issue-a.db-wal")))
		is.NoErr(os.Chtimes(filepath.Join(dir, "issue-a.db"), old, old))
		// A link's own time is what counts: the fresh target does not keep it.
		is.NoErr(lchtimes(filepath.Join(dir, "issue-a.db-wal"), old))
		n, err := PruneSessionFiles(h, cutoff, nil)
		is.NoErr(err)
		is.Equal(n, 1)
		left, err := os.ReadDir(dir)
		is.NoErr(err)
		is.Equal(len(left), 0)
		got, err := os.ReadFile(filepath.Join(target, "f"))
		is.NoErr(err)
		is.Equal(string(got), "keep")
	})

	t.Run("no dir", func(t *testing.T) {
		is := is.New(t)
		h, _ := opencodeHome(t)
		n, err := PruneSessionFiles(h, now, nil)
		is.NoErr(err)
		is.Equal(n, 0)
	})
}

// lchtimes sets the times of the link at path itself.
func lchtimes(path string, at time.Time) error {
	ts := unix.NsecToTimespec(at.UnixNano())
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}

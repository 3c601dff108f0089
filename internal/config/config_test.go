package config

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/mergeq"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLayering(t *testing.T) {
	dir := t.TempDir()
	global := writeFile(t, dir, "global.json", `{"max_stuck": 5, "iteration_timeout": "10m", "log": true, "model": "g"}`)
	project := writeFile(t, dir, "project.json", `{"max_stuck": 4, "verify": "go test ./...", "model": "p"}`)

	tests := []struct {
		name      string
		env       map[string]string
		flags     []string
		key, want string
		source    string
	}{
		{"default", nil, nil, "poll", "60s", "default"},
		{"global file", nil, nil, "iteration_timeout", "10m", global},
		{"project beats global", nil, nil, "max_stuck", "4", project},
		{"env beats project", map[string]string{"RALPH_MAX_STUCK": "7"}, nil, "max_stuck", "7", "env RALPH_MAX_STUCK"},
		{"flag beats env", map[string]string{"RALPH_MAX_STUCK": "7"}, []string{"--max-stuck", "9"}, "max_stuck", "9", "flag --max-stuck"},
		{"bool env", map[string]string{"RALPH_LOG": "0"}, nil, "log", "false", "env RALPH_LOG"},
		{"bool flag", nil, []string{"--log"}, "log", "true", "flag --log"},
		{"flag alias", nil, []string{"--timeout", "2h"}, "run_timeout", "2h", "flag --timeout"},
		{"empty env is unset", map[string]string{"RALPH_MODEL": ""}, nil, "model", "p", project},
		{"agent_cmd implies command", nil, []string{"--agent-cmd", "true"}, "agent", "command", "flag --agent-cmd (implied)"},
		{"explicit agent wins over implication", map[string]string{"RALPH_AGENT": "claude"}, []string{"--agent-cmd", "true"}, "agent", "claude", "env RALPH_AGENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			BindFlags(fs)
			is.NoErr(fs.Parse(tt.flags))
			c, err := Load(Loader{GlobalFile: global, ProjectFile: project, Getenv: envOf(tt.env), Flags: fs})
			is.NoErr(err)
			is.Equal(c.Value(tt.key), tt.want)    // effective value
			is.Equal(c.Source(tt.key), tt.source) // provenance
		})
	}
}

func TestTypedValues(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	p := writeFile(t, dir, "c.json", `{"iteration_timeout": "90s", "max_cost_usd": 2.5, "failure_branches": false}`)
	c, err := Load(Loader{ProjectFile: p})
	is.NoErr(err)
	is.Equal(c.IterationTimeout, 90*time.Second)
	is.Equal(c.MaxCostUSD, 2.5)
	is.Equal(c.FailureBranches, false)
	is.Equal(c.MaxStuck, 3)                       // default
	is.Equal(c.MaxCreates, 10)                    // default: a BUILD iteration may create 10 issues
	is.Equal(c.Integrate, mergeq.DefaultStrategy) // default: ff
	is.Equal(c.Agent, "claude")
	is.Equal(c.Network, "allowlist") // a sandboxed agent's network is filtered unless asked otherwise
	is.Equal(len(c.NetworkAllow), 0)

	c, err = Load(Loader{Getenv: envOf(map[string]string{"RALPH_NETWORK_ALLOW": " registry.npmjs.org,,*.golang.org:443 "})})
	is.NoErr(err)
	is.Equal(c.NetworkAllow, []string{"registry.npmjs.org", "*.golang.org:443"})
}

// TestAgents reads the agents list from each source, and the one-agent
// form it stands for when unset.
func TestAgents(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		file string
		env  map[string]string
		want []AgentSpec
	}{
		{"unset: agent and model", `{"agent": "codex", "model": "gpt-5"}`, nil, []AgentSpec{{"codex:gpt-5", "codex", "gpt-5"}}},
		{"unset: the default agent", `{}`, nil, []AgentSpec{{"claude", "claude", ""}}},
		{"a JSON array", `{"agents": ["claude", "codex:gpt-5", "gemini"]}`, nil,
			[]AgentSpec{{"claude", "claude", ""}, {"codex:gpt-5", "codex", "gpt-5"}, {"gemini", "gemini", ""}}},
		{"a comma-separated string", `{"agents": "claude, codex"}`, nil, []AgentSpec{{"claude", "claude", ""}, {"codex", "codex", ""}}},
		{"env beats the file, and agent", `{"agents": ["claude"], "agent": "amp"}`, map[string]string{"RALPH_AGENTS": "gemini,claude:opus"},
			[]AgentSpec{{"gemini", "gemini", ""}, {"claude:opus", "claude", "opus"}}},
		{"one backend under two models", `{"agents": ["claude:opus", "claude:sonnet"]}`, nil,
			[]AgentSpec{{"claude:opus", "claude", "opus"}, {"claude:sonnet", "claude", "sonnet"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".json", tt.file)
			c, err := Load(Loader{ProjectFile: p, Getenv: envOf(tt.env)})
			is.NoErr(err)
			is.Equal(c.Agents, tt.want) // the agents, in order
		})
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		file     string
		env      map[string]string
		wantKey  string
		contains string
	}{
		{"unknown key", `{"max_stuk": 3}`, nil, "max_stuk", `:1:2: max_stuk: unknown key; did you mean "max_stuck"?`},
		{"unknown far key", `{"zzzzzz": 3}`, nil, "zzzzzz", "unknown key; `ralphd config` lists the known keys"},
		{"bare number duration", `{"iteration_timeout": 5}`, nil, "iteration_timeout", `with its unit, such as "90s", "45m" or "2h" (units: ms, s, m, h), got 5`},
		{"bare number duration text", `{"poll": "5"}`, nil, "poll", `"5" has no unit`},
		{"bare number duration env", ``, map[string]string{"RALPH_POLL": "30"}, "poll", `"30" has no unit`},
		{"syntax: trailing comma", "{\"max_stuck\": 5,\n", nil, "", "c.json:1:16: not valid JSON"},
		{"syntax: bad byte", "{\n  \"max_stuck\" 5\n}", nil, "", ":2:15: not valid JSON: expected colon after object key"},
		{"key twice", "{\"max_stuck\": 5,\n \"max_stuck\": 6}", nil, "", `:2:2: "max_stuck" is given twice (first at 1:2); keep one`},
		{"trailing data", `{} {}`, nil, "", ":1:4: more after the JSON object"},
		{"empty file", ` `, nil, "", "the file is empty"},
		{"bad type", `{"max_stuck": "three"}`, nil, "max_stuck", "want an integer"},
		{"bad enum", `{"agent": "gpt"}`, nil, "agent", `"gpt" is not allowed; use one of: claude, command`},
		{"unknown integration strategy", `{"integrate": "squash"}`, nil, "integrate", `"squash" is not allowed; use one of: ` + strings.Join(mergeq.StrategyNames(), ", ")},
		{"unknown integration strategy env", ``, map[string]string{"RALPH_INTEGRATE": "merge"}, "integrate", `"merge" is not allowed; use one of: ff`},
		{"bad duration env", ``, map[string]string{"RALPH_ITERATION_TIMEOUT": "soon"}, "iteration_timeout", "want a duration"},
		{"zero stuck", `{"max_stuck": 0}`, nil, "max_stuck", "at least 1"},
		{"negative retention env", ``, map[string]string{"RALPH_LOG_RETENTION": "-1"}, "log_retention", `want a whole number of at least 1, got "-1"`},
		{"zero retention env", ``, map[string]string{"RALPH_LOG_RETENTION": "0"}, "log_retention", `want a whole number of at least 1, got "0"`},
		{"garbage retention env", ``, map[string]string{"RALPH_LOG_RETENTION": "garbage"}, "log_retention", `want a whole number of at least 1, got "garbage"`},
		{"huge retention env", ``, map[string]string{"RALPH_LOG_RETENTION": "99999999999999999999"}, "log_retention", `want a whole number of at least 1`},
		{"negative workers", `{"workers": -1}`, nil, "workers", `want a whole number from 1 to 64, got "-1"`},
		{"no workers", `{"workers": 0}`, nil, "workers", `want a whole number from 1 to 64, got "0"`},
		{"too many workers env", ``, map[string]string{"RALPH_WORKERS": "65"}, "workers", `want a whole number from 1 to 64, got "65"`},
		{"garbage workers env", ``, map[string]string{"RALPH_WORKERS": "many"}, "workers", `want a whole number from 1 to 64, got "many"`},
		{"negative create cap", `{"max_creates": -1}`, nil, "max_creates", `want a whole number of at least 0, got "-1"`},
		{"command without cmd", `{"agent": "command"}`, nil, "agent", "needs agent_cmd"},
		{"not an object", `[1,2]`, nil, "", "not a JSON object"},
		{"unknown agent in agents", `{"agents": ["claude", "gpt:4"]}`, nil, "agents", `"gpt" is not an agent; use one of: claude, command`},
		{"agent listed twice", ``, map[string]string{"RALPH_AGENTS": "codex, codex"}, "agents", `"codex" is listed twice`},
		{"agents not strings", `{"agents": [1]}`, nil, "agents", "want a string or an array of strings"},
		{"command agent without cmd", `{"agents": "claude,command"}`, nil, "agents", "needs agent_cmd"},
		{"bad network", `{"network": "none"}`, nil, "network", `"none" is not allowed; use one of: allowlist, open`},
		{"bad network_allow", `{"network_allow": "registry.npmjs.org, https://proxy.golang.org"}`, nil, "network_allow", `"https://proxy.golang.org": want a host name`},
		{"bad network_allow port env", ``, map[string]string{"RALPH_NETWORK_ALLOW": "example.com:99999"}, "network_allow", `port "99999" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := ""
			if tt.file != "" {
				p = writeFile(t, dir, strings.NewReplacer(" ", "_", ":", "").Replace(tt.name)+"c.json", tt.file)
			}
			_, err := Load(Loader{ProjectFile: p, Getenv: envOf(tt.env)})
			var ce *Error
			is.True(errors.As(err, &ce)) // a config error, mapped to exit 2
			is.Equal(ce.Key, tt.wantKey)
			if !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("error %q does not say %q", err, tt.contains)
			}
			if p != "" && tt.env == nil {
				is.True(strings.Contains(err.Error(), p)) // names the file
			}
		})
	}
}

// TestKeepGoing checks that a broken file does not hide the rest of the
// configuration from `ralphd config` and `status`: its good keys apply, the
// other layers too, and the error names the file.
func TestKeepGoing(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	global := writeFile(t, dir, "global.json", `{"max_stuck": 7, "log": true}`)
	broken := writeFile(t, dir, "broken.json", `{"max_stuck": 5,`)
	c, err := Load(Loader{GlobalFile: global, ProjectFile: broken, KeepGoing: true})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), broken+":1:16:")) // the broken file is the source
	is.Equal(c.MaxStuck, 7)                                 // the global file still applies
	is.Equal(c.Source("max_stuck"), global)
	_, err = Load(Loader{GlobalFile: global, ProjectFile: broken})
	is.True(err != nil) // without KeepGoing a broken file stops Load

	partly := writeFile(t, dir, "partly.json", `{"max_stuk": 4, "log_retention": 3}`)
	c, err = Load(Loader{ProjectFile: partly, KeepGoing: true})
	is.True(err != nil)
	is.Equal(c.LogRetention, 3) // the good key of a partly bad file applies
}

func TestMissingFilesAreFine(t *testing.T) {
	is := is.New(t)
	c, err := Load(Loader{GlobalFile: "/nonexistent/a.json", ProjectFile: "/nonexistent/b.json"})
	is.NoErr(err)
	is.Equal(len(c.Entries()), len(Fields()))
}

// FuzzLoadFile checks a config file on any input: what loads is valid
// (max_stuck at least 1), and a file written back from the loaded values
// loads the same values. Seeds include a file with every key at its
// default.
func FuzzLoadFile(f *testing.F) {
	f.Add(`{"max_stuck": 4}`)
	f.Add(`{"iteration_timeout": "1h", "log": true}`)
	f.Add(`{"agent": "command", "agent_cmd": "x"}`)
	f.Add(`nonsense`)
	f.Add(`{"agent": "gpt"}`)
	f.Add(`{"max_budget_usd": 1e2, "workers": 8, "poll": "0"}`)
	defaults := map[string]json.RawMessage{}
	for _, fl := range Fields() {
		defaults[fl.Key] = fileValue(fl, fl.Default)
	}
	all, _ := json.Marshal(defaults)
	f.Add(string(all))
	f.Fuzz(func(t *testing.T, body string) {
		p := filepath.Join(t.TempDir(), "c.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Loader{ProjectFile: p})
		if err != nil {
			return
		}
		if c.MaxStuck < 1 {
			t.Fatalf("accepted max_stuck %d", c.MaxStuck)
		}
		back := map[string]json.RawMessage{}
		for _, fl := range Fields() {
			if c.Source(fl.Key) != "default" {
				back[fl.Key] = fileValue(fl, c.Value(fl.Key))
			}
		}
		data, _ := json.Marshal(back)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c2, err := Load(Loader{ProjectFile: p})
		if err != nil {
			t.Fatalf("%s loaded, but its values written back do not: %s: %v", body, data, err)
		}
		for _, fl := range Fields() {
			if c.Value(fl.Key) != c2.Value(fl.Key) {
				t.Fatalf("%s: %q, written back as %s, loads as %q", fl.Key, c.Value(fl.Key), data, c2.Value(fl.Key))
			}
		}
	})
}

// fileValue is v as config.json writes a value of f's kind.
func fileValue(f Field, v string) json.RawMessage {
	switch f.kind {
	case kindBool, kindInt, kindFloat:
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

func TestTokenIsNeverPrinted(t *testing.T) {
	is := is.New(t)
	c, err := Load(Loader{Getenv: envOf(map[string]string{"RALPH_HTTP_TOKEN": "s3cret-token"})})
	is.NoErr(err)
	is.Equal(c.HTTPToken, "s3cret-token")
	var b strings.Builder
	c.WriteTable(&b)
	is.True(!strings.Contains(b.String(), "s3cret")) // `ralphd config` shows that it is set, not what it is
	is.True(strings.Contains(b.String(), "(set, not shown)"))
}

// FuzzParseObject checks the config file reader on any input: it never
// panics, and an error it returns points inside the file.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{"max_stuck": 5,`, "{\n \"a\" 5}", `{"a":1,"a":2}`, `{} {}`, ``, `[`, `{"a":{"b":[1,2,{}]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		data := []byte(body)
		_, err := parseObject("c.json", data)
		var ce *Error
		if err == nil || !errors.As(err, &ce) || ce.Source == "c.json" {
			return
		}
		var line, col int
		if _, serr := fmt.Sscanf(strings.TrimPrefix(ce.Source, "c.json:"), "%d:%d", &line, &col); serr != nil {
			t.Fatalf("source %q has no line:col", ce.Source)
		}
		if line < 1 || col < 1 || line > strings.Count(body, "\n")+1 {
			t.Fatalf("position %d:%d outside the file (%q)", line, col, body)
		}
	})
}

// Value returns the effective value of key as text.
func (c *Config) Value(key string) string { return c.values[key] }

// TestFileNotRegular: a config file that is not a regular file is a
// configuration error (exit 2) naming the file and what is there, and a
// FIFO never blocks the read. A symlink to a regular file is followed
// (dotfiles are often symlinks).
func TestFileNotRegular(t *testing.T) {
	tests := []struct {
		name     string
		make     func(t *testing.T, path string)
		contains string // "" means the file loads
	}{
		{"directory", func(t *testing.T, p string) { mustNoErr(t, os.Mkdir(p, 0o700)) }, "is a directory, not a JSON file"},
		{"FIFO", func(t *testing.T, p string) { mustNoErr(t, syscall.Mkfifo(p, 0o600)) }, "is a FIFO, not a JSON file"},
		{"symlink to /dev/zero", func(t *testing.T, p string) { mustNoErr(t, os.Symlink("/dev/zero", p)) }, "is a device, not a JSON file"},
		{"too large", func(t *testing.T, p string) {
			mustNoErr(t, os.WriteFile(p, []byte(`{"model": "`+strings.Repeat("x", maxConfigFile)+`"}`), 0o600))
		}, "is over 1 MiB"},
		{"symlink to a file", func(t *testing.T, p string) {
			mustNoErr(t, os.WriteFile(p+".real", []byte(`{"max_stuck": 5}`), 0o600))
			mustNoErr(t, os.Symlink(p+".real", p))
		}, ""},
		{"dangling symlink", func(t *testing.T, p string) { mustNoErr(t, os.Symlink("/nonexistent/x", p)) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.json")
			tt.make(t, p)
			done := make(chan error, 1)
			go func() {
				_, err := Load(Loader{ProjectFile: p})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load blocked")
			}
			if tt.contains == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Load error %v (%T) is not a config error (exit 2)", err, err)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("Load error %q does not name %s and say %q", err, p, tt.contains)
			}
		})
	}
}

func mustNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// describe returns the unconfigured backend called name, or fails.
func describe(t *testing.T, name string) Backend {
	t.Helper()
	b, ok := Describe(name)
	if !ok {
		t.Fatalf("no backend %q", name)
	}
	return b
}

func TestWritable(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		agent string
		env   map[string]string
		want  []string
	}{
		{"claude", nil, []string{"/h/.claude"}},
		{"claude", map[string]string{"CLAUDE_CONFIG_DIR": "/cc"}, []string{"/h/.claude", "/cc"}},
		{"codex", nil, []string{"/h/.codex"}},
		{"codex", map[string]string{"CODEX_HOME": "/ch"}, []string{"/ch"}},
		{"codex", map[string]string{"CODEX_HOME": "relative"}, []string{"/h/.codex"}},
		{"opencode", map[string]string{"XDG_CONFIG_HOME": "/xc"}, []string{"/xc/opencode", "/h/.local/share/opencode", "/h/.cache/opencode", "/h/.local/state/opencode"}},
		{"gemini", nil, []string{"/h/.gemini"}},
		{"amp", nil, []string{"/h/.config/amp", "/h/.local/share/amp"}},
		{"command", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.agent+strings.Join(slices.Sorted(mapsKeys(tt.env)), ","), func(t *testing.T) {
			env = tt.env
			dirs, files := Writable(describe(t, tt.agent), Home{Dir: "/h", Getenv: getenv})
			is.New(t).Equal(append(dirs, files...), tt.want)
		})
	}
}

// Every backend guards what configures its CLI inside the dirs it may
// write (never a path outside them, which the sandbox keeps read-only
// anyway, nor a dir as a whole, which the CLI needs writable), and
// GuardedAll holds them all.
func TestGuarded(t *testing.T) {
	is := is.New(t)
	h := Home{Dir: "/h", Getenv: func(k string) string { return map[string]string{"CLAUDE_CONFIG_DIR": "/cc"}[k] }}
	all := GuardedAll(h)
	for _, name := range Names() {
		b := describe(t, name)
		g := b.Guarded(h)
		dirs, _ := b.Writable(h)
		for _, p := range g.Paths {
			is.True(filepath.IsAbs(p))
			is.True(slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(p, d+"/") })) // inside a writable dir
			is.True(slices.Contains(all.Paths, p))
		}
		if name != "command" {
			is.True(len(g.Paths) > 0) // every CLI has settings of its own
		}
	}
	for _, want := range []string{"/h/.claude/settings.json", "/cc/settings.json", "/cc/plugins", "/h/.codex/config.toml",
		"/h/.gemini/settings.json", "/h/.gemini/.env", "/h/.config/opencode/plugin", "/h/.local/share/opencode/bin", "/h/.config/amp/settings.json"} {
		is.True(slices.Contains(all.Paths, want))
	}
	is.Equal(all.Copies, []string{"/h/.claude.json", "/h/.claude.json.backup"})
	is.Equal(GuardedAll(Home{}).Paths, nil) // no home: nothing known there
	dirs, files := ProjectConfig()
	is.Equal(dirs, []string{".claude", ".codex", ".opencode", ".gemini"})
	is.Equal(files, []string{".mcp.json", "opencode.json", "opencode.jsonc"})
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestCredentials(t *testing.T) {
	home := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".claude/.credentials.json", `{"claudeAiOauth":{}}`)
	write(".codex/auth.json", "") // empty: not logged in
	write(".gemini/oauth_creds.json", `{"a":1}`)
	tests := []struct {
		agent string
		env   map[string]string
		how   string
		known bool
	}{
		{"claude", nil, filepath.Join(home, ".claude/.credentials.json"), true},
		{"claude", map[string]string{"ANTHROPIC_API_KEY": "k"}, "$ANTHROPIC_API_KEY", true},
		{"codex", nil, "", true},
		{"codex", map[string]string{"OPENAI_API_KEY": "k"}, "$OPENAI_API_KEY", true},
		{"gemini", nil, filepath.Join(home, ".gemini/oauth_creds.json"), true},
		{"amp", nil, "", true},
		{"command", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			is := is.New(t)
			getenv := func(k string) string {
				if k == "HOME" {
					return home
				}
				return tt.env[k]
			}
			cred := describe(t, tt.agent).Credentials(Home{Dir: getenv("HOME"), Getenv: getenv})
			is.Equal(cred.Where, tt.how)
			is.Equal(cred.Checkable, tt.known)
		})
	}
}

// TestHosts: each backend names its model API's host, and its base-URL
// variable, when set, replaces it (with the port, which an egress proxy
// needs); a value that names no host is ignored.
func TestHosts(t *testing.T) {
	tests := []struct {
		agent string
		env   map[string]string
		want  []string
	}{
		{"claude", nil, []string{"api.anthropic.com"}},
		{"claude", map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}, []string{"127.0.0.1:8080"}},
		{"claude", map[string]string{"ANTHROPIC_BASE_URL": "not a url"}, []string{"api.anthropic.com"}},
		{"codex", nil, []string{"api.openai.com", "chatgpt.com"}},
		{"codex", map[string]string{"OPENAI_BASE_URL": "https://proxy.example/v1"}, []string{"proxy.example", "chatgpt.com"}},
		{"opencode", nil, []string{"api.anthropic.com", "api.openai.com"}},
		{"opencode", map[string]string{"OPENAI_BASE_URL": "https://o.example"}, []string{"api.anthropic.com", "o.example"}},
		{"gemini", nil, []string{"generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com"}},
		{"gemini", map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://localhost:9"}, []string{"localhost:9", "cloudcode-pa.googleapis.com"}},
		{"amp", nil, []string{"ampcode.com"}},
		{"amp", map[string]string{"AMP_URL": "https://amp.corp.example"}, []string{"amp.corp.example"}},
		{"command", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.agent+strings.Join(slices.Sorted(mapsKeys(tt.env)), ","), func(t *testing.T) {
			got := describe(t, tt.agent).Hosts(func(k string) string { return tt.env[k] })
			is.New(t).Equal(got, tt.want)
		})
	}
}

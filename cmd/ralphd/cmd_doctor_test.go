package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

func TestLoggedIn(t *testing.T) {
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
			how, known := loggedIn(tt.agent, getenv)
			is.Equal(how, tt.how)
			is.Equal(known, tt.known)
		})
	}
}

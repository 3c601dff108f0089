package sandbox

import (
	"strings"
	"testing"
)

// TestHiddenIn: the path an agent command's complaint names is the one
// BUILD's sandbox hides when it lies in /tmp, /var/tmp, /run or the
// runtime dir and in no dir on PATH (bound back); anything else is not.
func TestHiddenIn(t *testing.T) {
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "PATH": "/tmp/tools/bin:/usr/bin:relative"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		text, path, dir string
	}{
		{"sh: 0: cannot open /tmp/s12/agent.sh: No such file", "/tmp/s12/agent.sh", "/tmp"},
		{"bash: /var/tmp/a/agent.sh: No such file or directory", "/var/tmp/a/agent.sh", "/var/tmp"},
		{"sh: 1: /run/user/1000/agent: not found", "/run/user/1000/agent", "/run/user/1000"},
		{`exec: "/tmp/x/../y/claude": no such file`, "/tmp/y/claude", "/tmp"},
		{"sh: 1: /tmp/tools/bin/agent: not found", "", ""}, // on PATH: bound back
		{"sh: 1: /home/me/agent.sh: not found", "", ""},
		{"sh: 1: agent.sh: not found", "", ""},
		{"/tmpfoo/agent: not found", "", ""},
		{"", "", ""},
	} {
		path, dir := HiddenIn(tc.text, getenv)
		if path != tc.path || dir != tc.dir {
			t.Errorf("HiddenIn(%q) = %q, %q; want %q, %q", tc.text, path, dir, tc.path, tc.dir)
		}
	}
}

// FuzzHiddenIn: any text, any environment: no panic, and a path found is
// absolute, clean, in the dir returned, and named (before cleaning) in
// the text.
func FuzzHiddenIn(f *testing.F) {
	f.Add("sh: 0: cannot open /tmp/s12/agent.sh: No such file", "/run/user/1", "/tmp/bin")
	f.Add("bash: /var/tmp/../tmp/a: No such file or directory", "", "")
	f.Fuzz(func(t *testing.T, text, runtime, path string) {
		getenv := func(k string) string {
			if k == "PATH" {
				return path
			}
			return runtime
		}
		p, d := HiddenIn(text, getenv)
		if p == "" {
			if d != "" {
				t.Fatalf("no path, but dir %q", d)
			}
			return
		}
		if !strings.HasPrefix(p, "/") || !within(p, d) {
			t.Fatalf("path %q not absolute or not in %q", p, d)
		}
	})
}

package agent

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestBuildEnv(t *testing.T) {
	tests := []struct {
		name   string
		base   []string
		prefix string
		layers [][]string
		want   []string
	}{
		{
			name: "scrub and keep order",
			base: []string{"A=1", "CLAUDECODE=1", "B=2", "CLAUDE_CODE_ENTRYPOINT=cli", "GEMINI_CLI=1", "CODEX_SANDBOX=seatbelt"},
			want: []string{"A=1", "B=2"},
		},
		{
			name:   "later layers win in place",
			base:   []string{"A=1", "B=2"},
			layers: [][]string{{"A=x"}, {"C=3", "A=y"}},
			want:   []string{"A=y", "B=2", "C=3"},
		},
		{
			name:   "path prefix goes first once",
			base:   []string{"PATH=/usr/bin:/guard:/bin"},
			prefix: "/guard/",
			want:   []string{"PATH=/guard/:/usr/bin:/bin"},
		},
		{
			name:   "path prefix beats a layer's PATH",
			base:   []string{"PATH=/bin"},
			prefix: "/guard",
			layers: [][]string{{"PATH=/opt/bin"}},
			want:   []string{"PATH=/guard:/opt/bin"},
		},
		{
			name:   "no PATH at all",
			prefix: "/guard",
			want:   []string{"PATH=/guard:" + defaultPath},
		},
		{
			name: "malformed entries dropped",
			base: []string{"NOEQUALS", "=x", "OK=1"},
			want: []string{"OK=1"},
		},
		{
			name:   "stale ralph values replaced",
			base:   []string{"RALPH_ISSUE_ID=bd-old", RunMarkerEnv + "=old", "RALPH_SCOPE=epic"},
			layers: [][]string{{"RALPH_MODE=plan"}},
			want:   []string{"RALPH_SCOPE=epic", "RALPH_MODE=plan"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(buildEnv(tt.base, tt.prefix, tt.layers...), tt.want)
		})
	}
}

func TestScrubbedEnvVars(t *testing.T) {
	is := is.New(t)
	names := ScrubbedEnvVars()
	for _, k := range []string{"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT", RunMarkerEnv, "RALPH_HTTP_TOKEN"} {
		is.True(slices.Contains(names, k))
	}
	is.Equal(buildEnv([]string{"RALPH_HTTP_TOKEN=s3cret", "HOME=/h"}, ""), []string{"HOME=/h"}) // the dashboard token never reaches an agent
	// Nor a forge token, with which it could approve or merge its own
	// pull request (integrate = pr).
	is.Equal(buildEnv([]string{"GH_TOKEN=a", "GITHUB_TOKEN=b", "HOME=/h", "GH_ENTERPRISE_TOKEN=c", "GITHUB_ENTERPRISE_TOKEN=d"}, ""), []string{"HOME=/h"})
	names[0] = "changed"
	is.Equal(ScrubbedEnvVars()[0], "CLAUDECODE") // a copy
}

func TestLookPathIn(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	is.NoErr(os.MkdirAll(a, 0o755))
	is.NoErr(os.MkdirAll(b, 0o755))
	is.NoErr(os.WriteFile(filepath.Join(a, "tool"), nil, 0o644)) // not executable
	is.NoErr(os.WriteFile(filepath.Join(b, "tool"), nil, 0o755))
	is.NoErr(os.Mkdir(filepath.Join(a, "dirtool"), 0o755))

	got, err := lookPathIn("tool", a+":"+b, "")
	is.NoErr(err)
	is.Equal(got, filepath.Join(b, "tool")) // skips the non-executable one

	_, err = lookPathIn("tool", a, "")
	is.True(errors.Is(err, errNotExecutable))

	_, err = lookPathIn("dirtool", a, "")
	is.True(errors.Is(err, errNotExecutable))

	_, err = lookPathIn("missing", a+":"+b, "")
	is.True(errors.Is(err, exec.ErrNotFound))

	got, err = lookPathIn("b/tool", "", dir) // relative to the agent's dir
	is.NoErr(err)
	is.Equal(got, filepath.Join(b, "tool"))

	got, err = lookPathIn("tool", ":", b) // empty PATH entry: the agent's dir
	is.NoErr(err)
	is.Equal(got, filepath.Join(b, "tool"))

	got, err = lookPathIn("tool", "", "") // never a bare name exec would search
	is.True(err != nil || strings.Contains(got, "/"))
}

// ScrubbedEnvVars returns the names of the variables Run removes from the
// agent's inherited environment.
func ScrubbedEnvVars() []string { return scrubbedEnv() }

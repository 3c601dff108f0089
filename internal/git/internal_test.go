package git

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestParseDriverNames(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"filter.lfs.clean\x00filter.lfs.smudge\x00filter.lfs.process\x00filter.lfs.required\x00", []string{"lfs"}},
		{"filter.a.b.c.clean\x00", []string{"a.b.c"}},
		{"filter.a=b.clean\x00filter.X.smudge\x00", []string{"a=b", "X"}},
		{"filter.clean\x00", nil},    // no subsection: no driver
		{"filter..clean\x00", nil},   // empty name
		{"diff.x.textconv\x00", nil}, // not a filter
		{"filter.nl\nname.clean", []string{"nl\nname"}},
	}
	for _, c := range cases {
		is.New(t).Equal(parseDriverNames([]byte(c.in), "filter."), c.want)
	}
}

func TestParseMergeDriverNames(t *testing.T) {
	is := is.New(t)
	out := []byte("merge.evil.driver\x00merge.evil.name\x00filter.f.clean\x00merge.renormalize\x00")
	is.Equal(parseDriverNames(out, "merge."), []string{"evil"})
	is.Equal(parseDriverNames(out, "filter."), []string{"f"})
}

func FuzzParseDriverNames(f *testing.F) {
	f.Add([]byte("filter.lfs.clean\x00filter.a.b.smudge\x00"))
	f.Add([]byte("filter..\x00filter.\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		names := parseDriverNames(in, "filter.")
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || seen[n] {
				t.Fatalf("empty or repeated name %q in %q", n, names)
			}
			seen[n] = true
			// Every name came from a key "filter.<name>.<var>" in the input.
			if !bytes.Contains(in, []byte("filter."+n+".")) {
				t.Fatalf("name %q not in input", n)
			}
		}
	})
}

func TestSubcommandAndSafeFlags(t *testing.T) {
	cases := []struct {
		args []string
		sub  string
		want string
	}{
		{[]string{"diff", "--binary", "HEAD", "--", "."}, "diff", "diff --no-ext-diff --no-textconv --ignore-submodules=dirty --binary HEAD -- ."},
		{[]string{"-C", "x", "diff"}, "diff", "-C x diff --no-ext-diff --no-textconv --ignore-submodules=dirty"},
		{[]string{"-c", "a=b", "status", "-z"}, "status", "-c a=b status --ignore-submodules=dirty -z"},
		{[]string{"--no-optional-locks", "rev-parse", "HEAD"}, "rev-parse", "--no-optional-locks rev-parse HEAD"},
		{[]string{"branch", "diff"}, "branch", "branch diff"},
		{nil, "", ""},
	}
	for _, c := range cases {
		is := is.New(t)
		sub := subcommand(c.args)
		is.Equal(sub, c.sub)
		is.Equal(strings.Join(withSafeFlags(c.args, sub), " "), c.want)
	}
}

func TestConfigEnv(t *testing.T) {
	is := is.New(t)
	env := configEnv([]string{"A=1", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=x.y", "GIT_CONFIG_VALUE_0=z"},
		[][2]string{{"core.fsmonitor", "false"}, {"filter.a=b.clean", ""}})
	is.True(slices.Contains(env, "GIT_CONFIG_KEY_0=x.y"))
	is.True(slices.Contains(env, "GIT_CONFIG_KEY_1=core.fsmonitor"))
	is.True(slices.Contains(env, "GIT_CONFIG_VALUE_1=false"))
	is.True(slices.Contains(env, "GIT_CONFIG_KEY_2=filter.a=b.clean"))
	is.True(slices.Contains(env, "GIT_CONFIG_VALUE_2="))
	is.True(slices.Contains(env, "GIT_CONFIG_COUNT=3"))
	is.True(!slices.Contains(env, "GIT_CONFIG_COUNT=1"))
}

// TestNeedsDrivers: only the subcommands that read no content and merge
// nothing skip the drivers lookup; worktree only to list or prune.
func TestNeedsDrivers(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"for-each-ref", "refs/heads/"}, false},
		{[]string{"update-ref", "refs/heads/x", "HEAD"}, false},
		{[]string{"worktree", "list", "--porcelain"}, false},
		{[]string{"worktree", "prune"}, false},
		{[]string{"worktree", "add", "-q", "x"}, true},
		{[]string{"worktree", "remove", "--force", "x"}, true},
		{[]string{"worktree"}, true},
		{[]string{"hash-object", "f"}, true},
		{[]string{"hash-object", "--no-filters", "f"}, false},
		{[]string{"status"}, true},
		{[]string{"checkout", "-q", "x"}, true},
		{[]string{"rebase", "main"}, true},
		{[]string{"read-tree", "-m", "-u", "a", "b"}, true},
		{[]string{"-C", "d", "merge-base", "a", "b"}, false},
	} {
		if got := needsDrivers(subcommand(tc.args), tc.args); got != tc.want {
			t.Errorf("needsDrivers(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

package text

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"/usr/local/bin/ralphd", "/usr/local/bin/ralphd"},
		{"a=b,c:d@e%f+g", "a=b,c:d@e%f+g"},
		{"", "''"},
		{"two words", "'two words'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
		{"`x`", "'`x`'"},
		{"a\nb", "'a\nb'"},
		{"~", "'~'"},
		{"-", "-"},
		{"é", "'é'"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is.New(t).Equal(ShellQuote(tt.in), tt.want)
		})
	}
}

// FuzzQuote checks the quoting against a real shell: sh must split Join's
// output back into the same words.
func FuzzQuote(f *testing.F) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		f.Skip("no sh")
	}
	for _, s := range []string{"", "a b", "it's", "$(x)", "\\", "'\"", "a\nb", "*", "~x"} {
		f.Add(s, "second")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a+b) || strings.ContainsRune(a+b, 0) {
			t.Skip() // argv cannot hold NUL
		}
		out, err := exec.Command(sh, "-c", `for w in `+ShellJoin([]string{a, b})+`; do printf '%s\0' "$w"; done`).Output()
		if err != nil {
			t.Fatalf("sh: %v", err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(got) != 2 || got[0] != a || got[1] != b {
			t.Fatalf("ShellJoin(%q, %q) came back from sh as %q", a, b, got)
		}
	})
}

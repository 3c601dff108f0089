package beads

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

func TestTrimStderr(t *testing.T) {
	is := is.New(t)
	is.Equal(trimStderr("  Error: x\n\n"), "Error: x")

	// Long stderr keeps its head and tail, on rune boundaries.
	long := "Error: first line\n" + strings.Repeat("é", 3000) + "\nlast line"
	got := trimStderr(long)
	is.True(len(got) < len(long))
	is.True(strings.HasPrefix(got, "Error: first line"))
	is.True(strings.HasSuffix(got, "last line"))
	is.True(strings.Contains(got, "\n…\n"))
	is.True(utf8.ValidString(got))
}

func TestTruncate(t *testing.T) {
	is := is.New(t)
	is.Equal(truncate("short", 10), "short")
	is.Equal(truncate("abcdef", 3), "abc…")
	got := truncate("aé", 2) // cuts inside é
	is.Equal(got, "a…")
	is.Equal(validSuffix("\xa9bc"), "bc") // a continuation byte is dropped
}

func TestCommandLine(t *testing.T) {
	is := is.New(t)
	is.Equal(commandLine([]string{"show", "rt-1", "--json"}), "bd show rt-1 --json")
	is.Equal(commandLine([]string{"create", "Fix the parser", "--notes", ""}), `bd create "Fix the parser" --notes ""`)
	got := commandLine([]string{"update", "rt-1", "--append-notes", strings.Repeat("x", 100)})
	is.True(strings.HasSuffix(got, "…")) // long arguments are shortened
}

func TestStderrSummary(t *testing.T) {
	is := is.New(t)
	is.Equal(stderrSummary("Error: a\nUsage:\n  bd ready\nHint: b\n"), "Error: a; Hint: b")
	is.Equal(stderrSummary("one\ntwo\nthree\nfour\n"), "two; three; four")
	is.Equal(stderrSummary(""), "")
}

func TestErrorMessages(t *testing.T) {
	is := is.New(t)
	e := &ExitError{Args: []string{"ready", "--json"}, Code: -1}
	is.Equal(e.Error(), "bd ready --json was killed by a signal: no error message")
	e = &ExitError{Args: []string{"ready", "--json"}, Code: 2, Stderr: "weird\n"}
	is.Equal(e.Error(), "bd ready --json exited with code 2: weird")
	is.Equal((&ReportedError{Message: "boom"}).Error(), "bd reported an error: boom")
	ni := &NotInitializedError{}
	is.True(strings.Contains(ni.Error(), "the current directory"))
	is.Equal(ni.Unwrap(), nil)
	bj := &BadJSONError{Reason: "invalid JSON", Head: "oops"}
	is.True(strings.Contains(bj.Error(), `"oops"`))
}

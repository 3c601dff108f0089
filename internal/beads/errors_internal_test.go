package beads

import (
	"os"
	"path/filepath"
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

// FuzzStderr checks what an error keeps of bd's stderr: valid UTF-8 in
// gives valid UTF-8 out (no rune cut in two), the summary is bounded, and
// trimming keeps a short stderr whole and a long one to its head and tail.
func FuzzStderr(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, p := range paths { // the recorded bd outputs: their stderr section
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(data), "=== STDERR ===\n")
		stderr, _, _ := strings.Cut(rest, "=== END ===")
		f.Add(stderr)
	}
	f.Add("Error: x\nUsage:\n  bd ...\nHint: y\n")
	f.Add(strings.Repeat("é", 2000))
	f.Fuzz(func(t *testing.T, s string) {
		sum, trimmed := stderrSummary(s), trimStderr(s)
		if utf8.ValidString(s) && (!utf8.ValidString(sum) || !utf8.ValidString(trimmed)) {
			t.Fatalf("valid stderr, invalid message: %q / %q", sum, trimmed)
		}
		if len(sum) > 500+len("…") {
			t.Fatalf("summary of %d bytes", len(sum))
		}
		ts := strings.TrimSpace(s)
		if len(ts) <= stderrHead+stderrTail {
			if trimmed != ts {
				t.Fatalf("short stderr changed: %q -> %q", ts, trimmed)
			}
			return
		}
		head, tail, ok := strings.Cut(trimmed, "\n…\n")
		if !ok || !strings.HasPrefix(ts, head) || !strings.HasSuffix(ts, tail) || len(head) > stderrHead || len(tail) > stderrTail {
			t.Fatalf("long stderr trimmed to %d+%d bytes, not its head and tail", len(head), len(tail))
		}
	})
}

package judge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func sampleAttempt(t testing.TB, iteration int) Attempt {
	return Attempt{
		Iteration:      iteration,
		LastGate:       "verify",
		ExitCode:       1,
		Fingerprint:    Fingerprint("calc_test.go:11: Add(2, 2) = 0, want 4"),
		StuckCount:     iteration,
		StrategyShifts: 0,
		FilesModified:  []string{"calc.go", "dir with space/x.go"},
		Outputs: []Output{
			{Name: "verify", Command: "go test ./...", ExitCode: 1, Text: readFixture(t, "go-assert.txt")},
			{Name: "acceptance", Command: "grep -q `x` a | wc -l", ExitCode: 2, Text: "```\nnested fence\n````\n"},
		},
	}
}

func TestWriteReadRecordRoundTrip(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), "attempts") // created by WriteRecord
	a := sampleAttempt(t, 7)
	is.NoErr(WriteRecord(dir, "rt-2j9", a))

	got, err := ReadRecord(dir, "rt-2j9")
	is.NoErr(err)
	is.Equal(len(got), 1)
	want := a
	want.Outputs = []Output{a.Outputs[0], a.Outputs[1]}
	want.Outputs[0].Text = strings.TrimRight(a.Outputs[0].Text, "\n")
	want.Outputs[1].Text = "```\nnested fence\n````"
	is.Equal(got[0], want)

	data, err := os.ReadFile(filepath.Join(dir, "rt-2j9.md"))
	is.NoErr(err)
	text := string(data)
	is.True(strings.HasPrefix(text, "<!-- Written by ralphd"))
	for _, s := range []string{
		"## Previous attempts on rt-2j9\n",
		"### Attempt 1 of 1\n",
		"---\niteration: 7\nlast_gate: \"verify\"\nexit_code: 1\nfingerprint: \"" + a.Fingerprint + "\"\nstuck_count: 7\nstrategy_shifts: 0\nfiles_modified:\n  - \"calc.go\"\n  - \"dir with space/x.go\"\n---\n",
		"#### verify (exit 1): \"go test ./...\"\n\n```text\n--- FAIL: TestAdd (0.00s)\n",
		"#### acceptance (exit 2): \"grep -q `x` a | wc -l\"\n\n`````text\n```\nnested fence\n````\n`````\n",
	} {
		is.True(strings.Contains(text, s)) // record layout
	}
	info, err := os.Stat(filepath.Join(dir, "rt-2j9.md"))
	is.NoErr(err)
	is.Equal(info.Mode().Perm(), os.FileMode(0o600))
}

func TestRecordRollingWindow(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	for i := 1; i <= 5; i++ {
		a := sampleAttempt(t, i)
		a.Outputs = []Output{{Name: "verify", Command: "go test ./...", ExitCode: 1, Text: fmt.Sprintf("attempt %d output", i)}}
		is.NoErr(WriteRecord(dir, "rt-wjd.1", a))
	}
	got, err := ReadRecord(dir, "rt-wjd.1")
	is.NoErr(err)
	is.Equal(len(got), RecordWindow)
	for i, a := range got {
		is.Equal(a.Iteration, i+3) // oldest first, the last three kept
		is.Equal(a.Outputs[0].Text, fmt.Sprintf("attempt %d output", i+3))
	}
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 1) // no temporary files left behind
	is.Equal(entries[0].Name(), "rt-wjd.1.md")
}

func TestRecordTruncatesOutput(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 250; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	lines[0] = strings.Repeat("x", 5000)
	a := Attempt{Iteration: 1, Outputs: []Output{{Name: "test", Text: strings.Join(lines, "\n") + "\n\n"}}}
	is.NoErr(WriteRecord(dir, "rt-1", a))
	got, err := ReadRecord(dir, "rt-1")
	is.NoErr(err)
	out := strings.Split(got[0].Outputs[0].Text, "\n")
	is.Equal(len(out), MaxOutputLines)
	is.True(len(out[0]) <= MaxOutputLineBytes)
	is.True(strings.HasSuffix(out[0], " bytes truncated ...]"))
	is.Equal(out[1], "line 2")
	is.Equal(out[49], "line 50")
	is.Equal(out[50], "[... 151 lines truncated ...]")
	is.Equal(out[51], "line 202")
	is.Equal(out[99], "line 250")

	// Writing again keeps the stored text as it is (truncation is idempotent).
	is.NoErr(WriteRecord(dir, "rt-1", Attempt{Iteration: 2}))
	again, err := ReadRecord(dir, "rt-1")
	is.NoErr(err)
	is.Equal(again[0], got[0])
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name string
		text string
		max  int
		want string
	}{
		{"short", "a\nb", 5, "a\nb"},
		{"exact", "a\nb\nc", 3, "a\nb\nc"},
		{"long", "1\n2\n3\n4\n5\n6", 4, "1\n2\n[... 3 lines truncated ...]\n6"},
		{"tiny limit counts as 3", "1\n2\n3\n4", 1, "1\n[... 2 lines truncated ...]\n4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := Truncate(tt.text, tt.max)
			is.Equal(got, tt.want)
			is.Equal(Truncate(got, tt.max), got)
		})
	}
}

func TestSanitizeIssueID(t *testing.T) {
	long := strings.Repeat("a", 120)
	tests := []struct {
		id        string
		want      string // "" means: check only that it is hashed and safe
		unchanged bool
	}{
		{id: "rt-2j9", want: "rt-2j9"},
		{id: "rt-wjd.1", want: "rt-wjd.1"},
		{id: "my_proj-abc.2.3", want: "my_proj-abc.2.3"},
		{id: "../../etc/passwd"},
		{id: ".hidden"},
		{id: "a/b"},
		{id: "a_b", want: "a_b"},
		{id: "with space"},
		{id: "nul\x00byte"},
		{id: "ünïcode"},
		{id: ""},
		{id: long},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			is := is.New(t)
			got := SanitizeIssueID(tt.id)
			if tt.want != "" {
				is.Equal(got, tt.want)
			}
			is.True(got != "" && got != "." && got != "..")
			is.True(!strings.HasPrefix(got, "."))
			is.True(len(got) <= 100)
			is.Equal(strings.Trim(got, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"), "")
			if prev, dup := seen[got]; dup {
				t.Fatalf("%q and %q both map to %q", prev, tt.id, got)
			}
			seen[got] = tt.id
		})
	}
}

func TestRecordUnsafeIssueID(t *testing.T) {
	is := is.New(t)
	root := t.TempDir()
	dir := filepath.Join(root, "attempts")
	id := "../escape\nme"
	is.NoErr(WriteRecord(dir, id, Attempt{Iteration: 1}))
	entries, err := os.ReadDir(root)
	is.NoErr(err)
	is.Equal(len(entries), 1) // nothing written outside dir
	got, err := ReadRecord(dir, id)
	is.NoErr(err)
	is.Equal(len(got), 1)
	section, err := PromptSection(dir, id)
	is.NoErr(err)
	is.True(strings.HasPrefix(section, "## Previous attempts on ../escape me\n"))
}

func TestPromptSection(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	s, err := PromptSection(dir, "rt-none")
	is.NoErr(err)
	is.Equal(s, "") // no record, no section

	is.NoErr(WriteRecord(dir, "rt-2j9", sampleAttempt(t, 1)))
	is.NoErr(WriteRecord(dir, "rt-2j9", sampleAttempt(t, 2)))
	s, err = PromptSection(dir, "rt-2j9")
	is.NoErr(err)
	is.True(strings.HasPrefix(s, "## Previous attempts on rt-2j9\n\n### Attempt 1 of 2\n"))
	is.True(strings.Contains(s, "### Attempt 2 of 2\n"))
	is.True(strings.Contains(s, "calc_test.go:11: Add(2, 2) = 0, want 4\n")) // verbatim output
	is.True(!strings.Contains(s, "<!--"))
	parsed, err := ParseRecord(s)
	is.NoErr(err)
	is.Equal(len(parsed), 2) // the section parses like the file
}

func TestRecordCorrupt(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	path := RecordPath(dir, "rt-bad")
	is.NoErr(os.WriteFile(path, []byte("### Attempt 1\n---\niteration: three\n---\n"), 0o600))

	_, err := ReadRecord(dir, "rt-bad")
	is.True(errors.Is(err, ErrCorruptRecord))
	_, err = PromptSection(dir, "rt-bad")
	is.True(errors.Is(err, ErrCorruptRecord))

	// Writing starts a fresh record.
	is.NoErr(WriteRecord(dir, "rt-bad", Attempt{Iteration: 4}))
	got, err := ReadRecord(dir, "rt-bad")
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(got[0].Iteration, 4)
}

func TestParseRecordErrors(t *testing.T) {
	tests := []struct{ name, text string }{
		{"no header", "### Attempt 1\n\n#### verify (exit 1)\n"},
		{"header not closed", "### Attempt 1\n---\niteration: 1\n"},
		{"line without key", "### Attempt 1\n---\nwhat\n---\n"},
		{"bad quoting", "### Attempt 1\n---\nlast_gate: \"open\n---\n"},
		{"files not a list", "### Attempt 1\n---\nfiles_modified: a.go\n---\n"},
		{"output first", "#### verify (exit 1)\n\n```text\n```\n"},
		{"malformed heading", "### Attempt 1\n---\n---\n#### verify exit 1\n"},
		{"no fence", "### Attempt 1\n---\n---\n#### verify (exit 1)\n\nplain\n"},
		{"unclosed fence", "### Attempt 1\n---\n---\n#### verify (exit 1)\n\n````text\nx\n```\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := ParseRecord(tt.text)
			is.True(errors.Is(err, ErrCorruptRecord))
		})
	}
}

func TestParseRecordLenient(t *testing.T) {
	is := is.New(t)
	got, err := ParseRecord("intro\n### Attempt 1\n\n---\niteration: 3\nlast_gate: plain\nfuture_key: 1\n---\ntext between\n")
	is.NoErr(err)
	is.Equal(got, []Attempt{{Iteration: 3, LastGate: "plain"}})
}

func FuzzParseRecord(f *testing.F) {
	f.Add(recordHeader + renderSection("rt-1", []Attempt{prepare(sampleAttempt(f, 1)), prepare(sampleAttempt(f, 2))}))
	f.Add("### Attempt 1\n---\nfiles_modified:\n  - \"a\"\n---\n#### x (exit -1): \"c\"\n\n```text\n```\n")
	f.Add("### Attempt\n---\n---\n#### a (exit 0)\n")
	f.Fuzz(func(t *testing.T, text string) {
		attempts, err := ParseRecord(text)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error does not wrap ErrCorruptRecord: %v", err)
			}
			return
		}
		// Whatever parsed, once prepared, survives a render and parse.
		for i := range attempts {
			attempts[i] = prepare(attempts[i])
		}
		again, err := ParseRecord(renderSection("rt-1", attempts))
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if fmt.Sprintf("%#v", again) != fmt.Sprintf("%#v", nilIfEmpty(attempts)) {
			t.Fatalf("round trip changed the attempts:\n%#v\n%#v", attempts, again)
		}
	})
}

func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("verify", "go test ./...", "rt-1", "ok\n", "a.go", 1)
	f.Add("", "", "", "```\n````", "\"quoted\"\n", -1)
	f.Add("a b", "x\ny", "../x", "\r\n\r\n", "---", 255)
	f.Fuzz(func(t *testing.T, name, command, gate, text, file string, code int) {
		a := Attempt{
			Iteration: code, LastGate: gate, ExitCode: code, Fingerprint: Fingerprint(text),
			FilesModified: []string{file},
			Outputs:       []Output{{Name: name, Command: command, ExitCode: code, Text: text}},
		}
		want := prepare(a)
		got, err := ParseRecord(renderSection(gate, []Attempt{want}))
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if len(got) != 1 || fmt.Sprintf("%#v", got[0]) != fmt.Sprintf("%#v", want) {
			t.Fatalf("round trip:\nwant %#v\ngot  %#v", want, got)
		}
	})
}

func nilIfEmpty(a []Attempt) []Attempt {
	if len(a) == 0 {
		return nil
	}
	return a
}

func TestCapLineBytes(t *testing.T) {
	is := is.New(t)
	for _, n := range []int{1001, 1005, 1030, 1031, 1032, 1033, 2000, 10_000, 1_000_000} {
		for _, r := range []string{"x", "é", "日", "😀"} {
			line := strings.Repeat(r, n/len(r)+1)
			got := capLineBytes(line, MaxOutputLineBytes)
			is.True(len(got) <= MaxOutputLineBytes)
			is.Equal(capLineBytes(got, MaxOutputLineBytes), got) // idempotent
			is.True(strings.HasSuffix(got, fmt.Sprintf(" [... %d bytes truncated ...]", len(line)-strings.Index(got, " [..."))))
		}
	}
	is.Equal(capLineBytes("short", 10), "short")
}

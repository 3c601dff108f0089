package judge

import (
	"errors"
	"fmt"
	"slices"
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

// record is what a record file holds after adding attempts one by one.
func record(issue string, attempts ...Attempt) string {
	var kept []Attempt
	for _, a := range attempts {
		kept = AppendAttempt(kept, a)
	}
	return FormatRecord(issue, kept)
}

func TestFormatParseRecordRoundTrip(t *testing.T) {
	is := is.New(t)
	a := sampleAttempt(t, 7)
	text := record("rt-2j9", a)

	got, err := ParseRecord(text)
	is.NoErr(err)
	is.Equal(len(got), 1)
	want := a
	want.Outputs = []Output{a.Outputs[0], a.Outputs[1]}
	want.Outputs[0].Text = strings.TrimRight(a.Outputs[0].Text, "\n")
	want.Outputs[1].Text = "```\nnested fence\n````"
	is.Equal(got[0], want)

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
}

func TestRecordRollingWindow(t *testing.T) {
	is := is.New(t)
	var kept []Attempt
	for i := 1; i <= 5; i++ {
		a := sampleAttempt(t, i)
		a.Outputs = []Output{{Name: "verify", Command: "go test ./...", ExitCode: 1, Text: fmt.Sprintf("attempt %d output", i)}}
		before := slices.Clone(kept)
		kept = AppendAttempt(kept, a)
		is.Equal(len(before), min(i-1, RecordWindow)) // the input is not changed
	}
	got, err := ParseRecord(FormatRecord("rt-wjd.1", kept))
	is.NoErr(err)
	is.Equal(len(got), RecordWindow)
	for i, a := range got {
		is.Equal(a.Iteration, i+3) // oldest first, the last three kept
		is.Equal(a.Outputs[0].Text, fmt.Sprintf("attempt %d output", i+3))
	}
}

func TestRecordTruncatesOutput(t *testing.T) {
	is := is.New(t)
	var lines []string
	for i := 1; i <= 250; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	lines[0] = strings.Repeat("x", 5000)
	a := Attempt{Iteration: 1, Outputs: []Output{{Name: "test", Text: strings.Join(lines, "\n") + "\n\n"}}}
	got, err := ParseRecord(record("rt-1", a))
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

	// Adding again keeps the stored text as it is (truncation is idempotent).
	again, err := ParseRecord(FormatRecord("rt-1", AppendAttempt(got, Attempt{Iteration: 2})))
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

func TestPromptSectionUnsafeIssueID(t *testing.T) {
	is := is.New(t)
	section := PromptSection("../escape\nme", AppendAttempt(nil, Attempt{Iteration: 1}))
	is.True(strings.HasPrefix(section, "## Previous attempts on ../escape me\n")) // one heading line
	got, err := ParseRecord(section)
	is.NoErr(err)
	is.Equal(len(got), 1)
}

func TestPromptSection(t *testing.T) {
	is := is.New(t)
	is.Equal(PromptSection("rt-none", nil), "") // no attempts, no section

	s := PromptSection("rt-2j9", AppendAttempt(AppendAttempt(nil, sampleAttempt(t, 1)), sampleAttempt(t, 2)))
	is.True(strings.HasPrefix(s, "## Previous attempts on rt-2j9\n\n### Attempt 1 of 2\n"))
	is.True(strings.Contains(s, "### Attempt 2 of 2\n"))
	is.True(strings.Contains(s, "calc_test.go:11: Add(2, 2) = 0, want 4\n")) // verbatim output
	is.True(!strings.Contains(s, "<!--"))
	parsed, err := ParseRecord(s)
	is.NoErr(err)
	is.Equal(len(parsed), 2) // the section parses like the file
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

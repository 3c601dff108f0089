package judge

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ralphd/ralphd/internal/text"
)

// Limits of the attempt record.
const (
	// RecordWindow is how many attempts a record keeps, newest last.
	RecordWindow = 3
	// MaxOutputLines is how many lines of each output a record keeps.
	MaxOutputLines = 100
	// MaxOutputLineBytes caps one output line, so that one minified or
	// binary line cannot flood the prompt.
	MaxOutputLineBytes = 1000
)

// Attempt is one attempt's entry in an issue's attempt record. Outputs hold
// the verbatim output of what ran after the attempt (the verify command,
// acceptance commands, tests); nothing in a record is a summary.
type Attempt struct {
	Iteration      int
	LastGate       string // the last gate the attempt reached, such as "verify" or "acceptance"
	ExitCode       int    // exit status of that gate
	Fingerprint    string
	StuckCount     int
	StrategyShifts int
	FilesModified  []string
	Outputs        []Output
}

// Output is one command's verbatim output in an attempt record.
type Output struct {
	Name     string // what ran, one word such as "verify", "acceptance" or "test"
	Command  string // the command line, may be empty
	ExitCode int
	Text     string // combined output; truncated when written
}

// ErrCorruptRecord is wrapped by ParseRecord when a record does not parse.
var ErrCorruptRecord = errors.New("corrupt attempt record")

// Truncate keeps at most maxLines lines of text: the first half and the last
// lines, with a `[... N lines truncated ...]` line between them, so that the
// result has exactly maxLines lines. maxLines below 3 counts as 3. Text
// within the limit is returned unchanged, so Truncate is idempotent.
func Truncate(text string, maxLines int) string {
	maxLines = max(maxLines, 3)
	lines := strings.Split(text, "\n")
	if len(lines) <= maxLines {
		return text
	}
	head := maxLines / 2
	tail := maxLines - head - 1
	dropped := len(lines) - head - tail
	out := make([]string, 0, maxLines)
	out = append(out, lines[:head]...)
	out = append(out, fmt.Sprintf("[... %d lines truncated ...]", dropped))
	out = append(out, lines[len(lines)-tail:]...)
	return strings.Join(out, "\n")
}

// capLineBytes shortens one line to at most limit bytes, ending it with a
// `[... N bytes truncated ...]` marker, without splitting a rune.
func capLineBytes(line string, limit int) string {
	if len(line) <= limit {
		return line
	}
	// The marker's length depends on how much is cut, so shrink the kept
	// part until both fit; keep strictly decreases, so this ends.
	keep := limit
	for {
		for keep > 0 && !utf8.RuneStart(line[keep]) {
			keep--
		}
		marker := fmt.Sprintf(" [... %d bytes truncated ...]", len(line)-keep)
		if keep+len(marker) <= limit || keep == 0 {
			return line[:keep] + marker
		}
		keep = max(min(keep-1, limit-len(marker)), 0)
	}
}

// prepareText is what a record stores of an output: trailing newlines
// dropped, long lines capped, then truncated to MaxOutputLines. It is
// idempotent.
func prepareText(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = capLineBytes(l, MaxOutputLineBytes)
	}
	return Truncate(strings.Join(lines, "\n"), MaxOutputLines)
}

func prepareName(s string) string {
	s = strings.Join(strings.Fields(s), "-")
	if s == "" {
		return "output"
	}
	return s
}

// prepare returns the attempt as a record stores it.
func prepare(a Attempt) Attempt {
	out := a
	out.FilesModified = append([]string(nil), a.FilesModified...)
	out.Outputs = make([]Output, len(a.Outputs))
	for i, o := range a.Outputs {
		o.Name = prepareName(o.Name)
		o.Text = prepareText(o.Text)
		out.Outputs[i] = o
	}
	if len(out.Outputs) == 0 {
		out.Outputs = nil
	}
	if len(out.FilesModified) == 0 {
		out.FilesModified = nil
	}
	return out
}

// AppendAttempt returns attempts with a added as a record keeps it: each
// output stored verbatim up to MaxOutputLines lines (see Truncate) and
// MaxOutputLineBytes per line, trailing newlines dropped, and only the last
// RecordWindow attempts kept. It does not change attempts.
func AppendAttempt(attempts []Attempt, a Attempt) []Attempt {
	out := append(slices.Clone(attempts), prepare(a))
	if n := len(out); n > RecordWindow {
		out = out[n-RecordWindow:]
	}
	return out
}

// FormatRecord renders an issue's attempts as the text of its record
// file: a comment saying who wrote it, then the section PromptSection
// renders. ParseRecord reads it back.
func FormatRecord(issue string, attempts []Attempt) string {
	return recordHeader + renderSection(issue, attempts)
}

// PromptSection returns the "Previous attempts" section for the issue's next
// prompt: a "## Previous attempts on <issue>" heading, then per attempt its
// header fields and verbatim outputs. It returns "" when there are no
// attempts.
func PromptSection(issue string, attempts []Attempt) string {
	if len(attempts) == 0 {
		return ""
	}
	return renderSection(issue, attempts)
}

const recordHeader = "<!-- Written by ralphd after each attempt, never by the agent: verbatim output, no summaries. -->\n"

// displayID makes an issue id safe to put on one markdown line.
func displayID(issue string) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(issue, "\uFFFD"))
	return strings.TrimSpace(s)
}

// renderSection renders attempts (already prepared) as markdown.
func renderSection(issue string, attempts []Attempt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Previous attempts on %s\n", displayID(issue))
	for i, a := range attempts {
		fmt.Fprintf(&b, "\n### Attempt %d of %d\n\n", i+1, len(attempts))
		b.WriteString("---\n")
		fmt.Fprintf(&b, "iteration: %d\n", a.Iteration)
		fmt.Fprintf(&b, "last_gate: %s\n", strconv.Quote(a.LastGate))
		fmt.Fprintf(&b, "exit_code: %d\n", a.ExitCode)
		fmt.Fprintf(&b, "fingerprint: %s\n", strconv.Quote(a.Fingerprint))
		fmt.Fprintf(&b, "stuck_count: %d\n", a.StuckCount)
		fmt.Fprintf(&b, "strategy_shifts: %d\n", a.StrategyShifts)
		if len(a.FilesModified) == 0 {
			b.WriteString("files_modified: []\n")
		} else {
			b.WriteString("files_modified:\n")
			for _, f := range a.FilesModified {
				fmt.Fprintf(&b, "  - %s\n", strconv.Quote(f))
			}
		}
		b.WriteString("---\n")
		for _, o := range a.Outputs {
			fmt.Fprintf(&b, "\n#### %s (exit %d)", o.Name, o.ExitCode)
			if o.Command != "" {
				fmt.Fprintf(&b, ": %s", strconv.Quote(o.Command))
			}
			fence := fenceFor(o.Text)
			fmt.Fprintf(&b, "\n\n%stext\n", fence)
			if o.Text != "" {
				b.WriteString(o.Text)
				b.WriteString("\n")
			}
			b.WriteString(fence + "\n")
		}
	}
	return b.String()
}

// fenceFor returns a backtick fence longer than any backtick run in text,
// so no line of text can close it.
func fenceFor(text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

var (
	outputHeadRe = text.LazyRegexp(`^#### (\S+) \(exit (-?\d+)\)(?:: (".*"))?$`)
	fenceOpenRe  = text.LazyRegexp("^(`{3,})text$")
	listItemRe   = text.LazyRegexp(`^  - (.*)$`)
)

func corrupt(line int, format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrCorruptRecord, line, fmt.Sprintf(format, args...))
}

// ParseRecord parses the text of an attempt record (or of a section
// PromptSection returned) back into its attempts, oldest first. Lines
// outside attempt headers and output blocks are ignored; a malformed header
// or an unterminated output block is an error wrapping ErrCorruptRecord.
func ParseRecord(text string) ([]Attempt, error) {
	lines := strings.Split(text, "\n")
	var out []Attempt
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "### Attempt "):
			a, next, err := parseHeader(lines, i+1)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
			i = next
		case strings.HasPrefix(line, "#### "):
			if len(out) == 0 {
				return nil, corrupt(i+1, "output before any attempt")
			}
			o, next, err := parseOutput(lines, i)
			if err != nil {
				return nil, err
			}
			last := &out[len(out)-1]
			last.Outputs = append(last.Outputs, o)
			i = next
		}
	}
	return out, nil
}

// parseHeader parses the `---` delimited header starting at or after line
// i and returns the index of its closing `---`.
func parseHeader(lines []string, i int) (Attempt, int, error) {
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i >= len(lines) || lines[i] != "---" {
		return Attempt{}, 0, corrupt(i+1, "attempt without a --- header")
	}
	var a Attempt
	inFiles := false
	for j := i + 1; j < len(lines); j++ {
		line := lines[j]
		if line == "---" {
			return a, j, nil
		}
		if inFiles {
			if m := listItemRe.FindStringSubmatch(line); m != nil {
				v, err := scalar(m[1])
				if err != nil {
					return Attempt{}, 0, corrupt(j+1, "files_modified: %v", err)
				}
				a.FilesModified = append(a.FilesModified, v)
				continue
			}
			inFiles = false
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return Attempt{}, 0, corrupt(j+1, "header line without a key")
		}
		val = strings.TrimSpace(val)
		var err error
		switch key {
		case "iteration":
			a.Iteration, err = strconv.Atoi(val)
		case "exit_code":
			a.ExitCode, err = strconv.Atoi(val)
		case "stuck_count":
			a.StuckCount, err = strconv.Atoi(val)
		case "strategy_shifts":
			a.StrategyShifts, err = strconv.Atoi(val)
		case "last_gate":
			a.LastGate, err = scalar(val)
		case "fingerprint":
			a.Fingerprint, err = scalar(val)
		case "files_modified":
			switch val {
			case "", "[]":
				inFiles = val == ""
			default:
				err = errors.New("want a list")
			}
		default:
			// Unknown keys are skipped, for records from newer versions.
		}
		if err != nil {
			return Attempt{}, 0, corrupt(j+1, "%s: %v", key, err)
		}
	}
	return Attempt{}, 0, corrupt(len(lines), "header not closed with ---")
}

// scalar reads a YAML scalar as this package writes it: double-quoted with
// Go escapes, or plain.
func scalar(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		return strconv.Unquote(v)
	}
	return v, nil
}

// parseOutput parses an output heading at line i and its fenced block, and
// returns the index of the closing fence.
func parseOutput(lines []string, i int) (Output, int, error) {
	m := outputHeadRe.FindStringSubmatch(lines[i])
	if m == nil {
		return Output{}, 0, corrupt(i+1, "malformed output heading")
	}
	code, err := strconv.Atoi(m[2])
	if err != nil {
		return Output{}, 0, corrupt(i+1, "exit code: %v", err)
	}
	o := Output{Name: m[1], ExitCode: code}
	if m[3] != "" {
		if o.Command, err = strconv.Unquote(m[3]); err != nil {
			return Output{}, 0, corrupt(i+1, "command: %v", err)
		}
	}
	j := i + 1
	for j < len(lines) && lines[j] == "" {
		j++
	}
	if j >= len(lines) {
		return Output{}, 0, corrupt(j, "output heading without a block")
	}
	f := fenceOpenRe.FindStringSubmatch(lines[j])
	if f == nil {
		return Output{}, 0, corrupt(j+1, "output block does not open with a fence")
	}
	for k := j + 1; k < len(lines); k++ {
		if lines[k] == f[1] {
			o.Text = strings.Join(lines[j+1:k], "\n")
			return o, k, nil
		}
	}
	return Output{}, 0, corrupt(len(lines), "output block not closed")
}

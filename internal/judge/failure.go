package judge

import (
	"github.com/ralphd/ralphd/internal/text"
	"strings"
	"unicode/utf8"
)

// maxLineBytes caps the length of a failure line FirstFailureLine returns,
// so that one minified or binary line cannot flood a prompt or a note.
const maxLineBytes = 500

// Candidate ranks: lower is better. A specific error message beats a test
// name, which beats a bare summary line.
const (
	rankSpecific = iota // the error message itself
	rankTest            // names the failing test or file
	rankGeneric         // a summary or a line that merely says "error"
	rankNone
)

var (
	// ansiRe matches CSI and OSC escape sequences; stray ESC bytes are
	// dropped separately.
	ansiRe = text.LazyRegexp(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?`)

	// noiseRes are lines that never identify a failure: progress, timing
	// and summary lines, stack frames, hints.
	noiseRes = []*text.Regexp{
		text.LazyRegexp(`^(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|SKIP):|PASS$|ok\s)`),
		text.LazyRegexp(`^\s*at\s`), // JS stack frame
		text.LazyRegexp(`^\s*File "`),
		text.LazyRegexp(`^Ran \d+ tests? in `),
		text.LazyRegexp(`^[=_!-]{3,}.*\b(passed|failed|errors?|skipped|in [\d.]+s)\b.*[=_!-]{3,}$`),
		text.LazyRegexp(`^\s*(Test Suites|Tests|Test Files|Snapshots|Time|Duration|Start at|Ran all test suites)\b`),
		text.LazyRegexp(`^# (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms)\b`),
		text.LazyRegexp(`^\s*(Compiling|Finished|Running|Doc-tests|Downloaded|Downloading|Updating|Locking)\s`),
		text.LazyRegexp(`(?i)^\s*(warning|note|help|hint)(\[\w+\])?:`),
		text.LazyRegexp(`^(npm (WARN|notice)|Node\.js v\d)`),
		text.LazyRegexp(`^\s*(running \d+ tests?|failures:)$`),
		text.LazyRegexp(`(?i)^\s*(Some errors have detailed explanations|For more information about (this|an) error)`),
	}

	compileRe    = text.LazyRegexp(`(?:^|\s)[^\s:]*\.[A-Za-z]\w*:\d+:\d+: +\S`)
	compileWarn  = text.LazyRegexp(`:\d+:\d+: +(warning|note|info)\b`)
	tscRe        = text.LazyRegexp(`\.[A-Za-z]\w*\(\d+,\d+\): +error\b`)
	goPanicRe    = text.LazyRegexp(`^(panic: |fatal error: )`)
	pytestERe    = text.LazyRegexp(`^E\s+\S`)
	rustCodeRe   = text.LazyRegexp(`^error\[E\d+\]: `)
	rustPanicRe  = text.LazyRegexp(`^thread '[^']*'.* panicked at `)
	excRe        = text.LazyRegexp(`^\s*(?:Uncaught\s+)?(?:[A-Za-z_$][\w$]*\.)*(?:[A-Z][\w$]*)?(?:Error|Exception)(?:\s*\[[A-Za-z0-9_]+\])?: +\S`)
	jestBulletRe = text.LazyRegexp(`^\s*● `)
	tapErrorRe   = text.LazyRegexp(`^\s+error: +(\S.*)$`)
	goFailRe     = text.LazyRegexp(`^(\s*)--- FAIL: (\S+)`)
	goMsgRe      = text.LazyRegexp(`^\s+\S+\.go:\d+: `)
	goRunRe      = text.LazyRegexp(`^=== RUN\s+(\S+)`)

	testRes = []*text.Regexp{
		text.LazyRegexp(`^\s*--- FAIL: `),
		text.LazyRegexp(`^FAILED \S`),
		text.LazyRegexp(`^\s*FAIL {1,2}\S`),
		text.LazyRegexp(`^test \S+ \.\.\. FAILED$`),
		text.LazyRegexp(`^\S.* \.\.\. (FAIL|ERROR)$`),
		text.LazyRegexp(`^not ok \d+`),
		text.LazyRegexp(`^(FAIL|ERROR): \S`),
	}
	fileLineMsgRe = text.LazyRegexp(`^\S*\.[A-Za-z]\w*:\d+: +\S`)
	goTestLogRe   = text.LazyRegexp(`_test\.go:\d+: `)

	genericRe = text.LazyRegexp(`(?i)(^|[^\w-])(error|errors|fatal|failed|failure|fail|panic|exception)([^\w-]|$)`)
)

// cleanLine strips terminal escapes and carriage returns and makes the line
// valid UTF-8. It keeps leading indentation, which some rules read.
func cleanLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.ContainsRune(s, '\x1b') {
		s = ansiRe.ReplaceAllString(s, "")
		s = strings.ReplaceAll(s, "\x1b", "")
	}
	s = strings.ReplaceAll(s, "\r", "")
	return strings.TrimRight(s, " \t")
}

func splitOutput(output string) []string {
	lines := strings.Split(output, "\n")
	for i, l := range lines {
		lines[i] = cleanLine(l)
	}
	return lines
}

func isNoise(line string) bool {
	for _, re := range noiseRes {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}

// nextNonBlank returns the index of the first non-blank line after i, or -1.
func nextNonBlank(lines []string, i int) int {
	for j := i + 1; j < len(lines); j++ {
		if strings.TrimSpace(lines[j]) != "" {
			return j
		}
	}
	return -1
}

// capLine shortens a line to maxLineBytes without splitting a rune.
func capLine(s string) string {
	if len(s) <= maxLineBytes {
		return s
	}
	cut := maxLineBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

type candidate struct {
	rank int
	idx  int
	text string
}

func (c *candidate) offer(rank, idx int, text string) {
	if rank < c.rank || (rank == c.rank && idx < c.idx) {
		c.rank, c.idx, c.text = rank, idx, text
	}
}

// FirstFailureLine returns the first stable failure line of verification
// output, or "" when no line looks like a failure.
//
// Lines are ranked, and the earliest line of the best rank wins:
//
//   - The error message itself: a compiler error (`file.go:12:3: msg`,
//     `file.ts(12,5): error TS2304: ...`, `error[E0425]: ...`), a Go
//     `panic:` or `fatal error:`, the message of the first failing Go test
//     (its last `file_test.go:N:` log line), the final exception line of a
//     Python traceback (not its `File "..."` frames), a pytest `E   ` line,
//     a JS or Python `XxxError: msg` line, a node:test TAP `error:` value, a
//     Rust `panicked at` line, or a Jest `● suite › test` header.
//   - A line that names the failing test: `--- FAIL:`, pytest `FAILED ...`,
//     Jest/Vitest ` FAIL  file`, `test x ... FAILED`, TAP `not ok`,
//     unittest `FAIL: test`, `file:line: msg`.
//   - A generic line: `FAIL<tab>pkg`, `test result: FAILED`, anything
//     containing error, fail or panic as a word.
//
// Timing and summary lines, stack frames and warnings are skipped. A Rust
// panic header whose message is on the next line, and a Jest `●` header,
// are joined with that next line. The result is trimmed, stripped of
// terminal escapes and capped at 500 bytes.
func FirstFailureLine(output string) string {
	lines := splitOutput(output)
	best := candidate{rank: rankNone}

	if idx, text, ok := goTestMessage(lines); ok {
		best.offer(rankSpecific, idx, text)
	}

	inTraceback := false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		if inTraceback {
			if line[0] == ' ' || line[0] == '\t' || trimmed == "Traceback (most recent call last):" {
				continue
			}
			inTraceback = false
			best.offer(rankSpecific, i, trimmed)
			continue
		}
		if trimmed == "Traceback (most recent call last):" {
			inTraceback = true
			continue
		}
		if isNoise(line) {
			continue
		}
		rank, text := classify(lines, i)
		if rank < rankNone {
			best.offer(rank, i, text)
		}
		if best.rank == rankSpecific && best.idx <= i {
			break // nothing later can beat it
		}
	}
	if best.rank == rankNone {
		return ""
	}
	return capLine(strings.TrimSpace(best.text))
}

// classify ranks one non-noise line. lines is passed so that headers can be
// joined with the line that carries their message.
func classify(lines []string, i int) (int, string) {
	line := lines[i]
	trimmed := strings.TrimSpace(line)
	switch {
	case compileRe.MatchString(line) && !compileWarn.MatchString(line) && !goTestLogRe.MatchString(line),
		tscRe.MatchString(line),
		goPanicRe.MatchString(line),
		pytestERe.MatchString(line),
		rustCodeRe.MatchString(line),
		excRe.MatchString(line):
		return rankSpecific, trimmed
	case rustPanicRe.MatchString(line):
		if strings.HasSuffix(trimmed, ":") {
			if j := nextNonBlank(lines, i); j >= 0 {
				return rankSpecific, trimmed + " " + strings.TrimSpace(lines[j])
			}
		}
		return rankSpecific, trimmed
	case jestBulletRe.MatchString(line):
		if j := nextNonBlank(lines, i); j >= 0 {
			return rankSpecific, trimmed + ": " + strings.TrimSpace(lines[j])
		}
		return rankSpecific, trimmed
	}
	if m := tapErrorRe.FindStringSubmatch(line); m != nil {
		switch m[1] {
		case "|", "|-", "|+", ">", ">-", ">+":
			if j := nextNonBlank(lines, i); j >= 0 {
				return rankSpecific, strings.TrimSpace(lines[j])
			}
		default:
			return rankSpecific, trimmed
		}
	}
	for _, re := range testRes {
		if re.MatchString(line) {
			return rankTest, trimmed
		}
	}
	// Go test logs (a_test.go:12: msg) count only through goTestMessage,
	// since passing tests log the same way.
	if fileLineMsgRe.MatchString(line) && !goTestLogRe.MatchString(line) {
		return rankTest, trimmed
	}
	if strings.HasPrefix(line, "FAIL\t") || strings.HasPrefix(trimmed, "test result: FAILED") ||
		genericRe.MatchString(line) {
		return rankGeneric, trimmed
	}
	return rankNone, ""
}

// goTestMessage finds the message of the first failing Go test: the last
// `file.go:N:` log line of its first group of messages. Without -v those
// lines follow the `--- FAIL:` line, indented; with -v they precede it,
// after `=== RUN   Name`.
func goTestMessage(lines []string) (int, string, bool) {
	for i, line := range lines {
		m := goFailRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent := len(m[1])
		// Non-verbose: indented lines after the FAIL header.
		last := -1
		for j := i + 1; j < len(lines); j++ {
			l := lines[j]
			if strings.TrimSpace(l) == "" {
				continue
			}
			if leadingSpace(l) <= indent {
				break
			}
			if goMsgRe.MatchString(l) {
				last = j
				continue
			}
			if last >= 0 && goFailRe.MatchString(l) {
				break // end of the first group
			}
		}
		if last >= 0 {
			return last, strings.TrimSpace(lines[last]), true
		}
		// Verbose: message lines between `=== RUN   Name` and the header.
		name := m[2]
		start := -1
		for j := i - 1; j >= 0; j-- {
			if r := goRunRe.FindStringSubmatch(lines[j]); r != nil && r[1] == name {
				start = j
				break
			}
		}
		if start < 0 {
			return 0, "", false
		}
		last = -1
		for j := start + 1; j < i; j++ {
			if goMsgRe.MatchString(lines[j]) {
				last = j
			} else if last >= 0 && strings.HasPrefix(lines[j], "=== ") {
				break
			}
		}
		if last >= 0 {
			return last, strings.TrimSpace(lines[last]), true
		}
		return 0, "", false
	}
	return 0, "", false
}

func leadingSpace(s string) int {
	return len(s) - len(strings.TrimLeft(s, " \t"))
}

// ErrorLine picks the line to fingerprint for one attempt: the first failure
// line of the verification output, else of the agent's result error, else
// the first non-blank line of the agent's result error (such as "max turns
// reached"). It returns "" when both are empty or blank.
func ErrorLine(verifyOutput, agentError string) string {
	if l := FirstFailureLine(verifyOutput); l != "" {
		return l
	}
	if l := FirstFailureLine(agentError); l != "" {
		return l
	}
	for _, l := range splitOutput(agentError) {
		if t := strings.TrimSpace(l); t != "" {
			return capLine(t)
		}
	}
	return ""
}

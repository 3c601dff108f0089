package judge

import (
	"github.com/ralphd/ralphd/internal/text"
	"strings"
)

var evidenceRes = []*text.Regexp{
	// A command or output in backticks.
	text.LazyRegexp("`[^`\\n]*[^`\\s][^`\\n]*`"),
	// A verb saying something was run or checked by a command.
	text.LazyRegexp(`(?i)\b(ran|re-?ran|executed)\b`),
	// Tests, builds and linters reported as passing.
	text.LazyRegexp(`(?i)\b(tests?|specs?|checks?|suites?|builds?|lint(er|ing)?|vet|typecheck(ing)?|ci)\b[^.\n]{0,40}\b(pass(es|ed|ing)?|green|succeed(s|ed)?|clean|ok)\b`),
	text.LazyRegexp(`(?i)\b(all|\d+)\s+(tests?|checks?|specs?)\b[^.\n]{0,20}\bpass`),
	text.LazyRegexp(`(?i)\b\d+ (passed|passing)\b|\b0 (failures|failed|errors)\b`),
	// A test or build command named without backticks.
	text.LazyRegexp(`(?i)\b(go (test|build|vet|run)|cargo (test|build|check|clippy)|npm (test|run \S+)|npx \S+|yarn (test|run \S+)|pnpm (test|run \S+)|pytest|python3? -m \S+|make (test|check|build|lint|all|ci|verify|[\w-]+-test)|tox|mvn \S+|gradle \S+|bun test|deno test|tsc|eslint|ruff|mypy|golangci-lint|shellcheck|bd (show|list|ready|close)|curl \S+)\b`),
	// Exit statuses.
	text.LazyRegexp(`(?i)\bexit(ed|s)?( with)?( code| status)?:? ?-?\d+\b|\b(exit|return) (code|status):? ?\d+`),
	// A commit sha: 7 to 40 hex digits with a letter and a digit (checked
	// in code), or after the word commit.
	text.LazyRegexp(`(?i)\bcommit(ted)?( as| in)? [0-9a-f]{7,40}\b`),
	// A file path with a directory or a source extension, or path:line.
	text.LazyRegexp(`(?:^|[\s(])(?:\.{0,2}/[\w.-]+|[\w.-]+/[\w.-]+/)[\w./-]*|\b[\w-]+\.(go|py|js|ts|tsx|jsx|rs|rb|java|kt|c|h|cc|cpp|cs|swift|php|sh|sql|md|json|yaml|yml|toml)\b|\b\S+\.\w+:\d+\b`),
	// Verification output quoted in the reason.
	text.LazyRegexp(`(?m)^(ok|PASS|--- PASS|test result: ok|=+ \d+ passed)\b`),
}

var shaRe = text.LazyRegexp(`\b[0-9a-f]{7,40}\b`)

// CitesEvidence reports whether a close reason cites a command or other
// evidence that the work is done, rather than only claiming it.
//
// The heuristic is lenient (it only asks that some evidence be quoted, and
// "I ran into trouble" passes), but a reason with none of these fails:
// it looks for a backticked span; "ran", "reran" or "executed"; tests,
// builds or linters said to pass, be green, succeed or be clean ("tests
// pass", "all 12 checks pass", "3 passed", "0 failures"); a test or build
// command named without backticks (go test, cargo test, npm test, pytest,
// make X, ...); an exit status ("exit 0", "exited with code 1"); a commit
// sha (7-40 hex digits with both a letter and a digit, or hex after
// "commit"); a file path (./x, /x, a/b/c, name.go, file.go:12; a single
// a/b is not enough, as in "and/or"); or pasted passing
// output (`ok`, `PASS`, `test result: ok`). Empty and bare claims such as
// "done", "fixed it" or "implemented the feature" cite nothing.
func CitesEvidence(reason string) bool {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return false
	}
	for _, re := range evidenceRes {
		if re.MatchString(reason) {
			return true
		}
	}
	for _, m := range shaRe.FindAllString(reason, -1) {
		if hasLetterAndDigit(m) {
			return true
		}
	}
	return false
}

package beads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinel errors for errors.Is. The typed errors below match them, so
// callers can branch on the kind of failure without a type assertion.
var (
	// ErrNotInstalled matches a *NotInstalledError.
	ErrNotInstalled = errors.New("bd not installed")
	// ErrNotInitialized matches a *NotInitializedError.
	ErrNotInitialized = errors.New("no beads database")
	// ErrBadJSON matches a *BadJSONError.
	ErrBadJSON = errors.New("unexpected bd output")
	// ErrTimeout matches a *TimeoutError.
	ErrTimeout = errors.New("bd timed out")
	// ErrIssueNotFound matches an *ExitError or *ReportedError whose
	// message says that an issue id does not exist.
	ErrIssueNotFound = errors.New("issue not found")
)

// InstallHint names the ways to install bd. Error messages include it.
const InstallHint = `install it with "go install github.com/steveyegge/beads/cmd/bd@latest" ` +
	`or "npm install -g @beads/bd"`

// HeadLen is how many bytes of unexpected output a BadJSONError keeps.
const HeadLen = 200

// NotInstalledError reports that the bd binary could not be found.
type NotInstalledError struct {
	Bin string // the name or path that was looked up
	Err error  // the underlying lookup or start error
}

// Error names the binary and the install routes.
func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("bd not found (%q is not on PATH or does not exist): %s", e.Bin, InstallHint)
}

// Unwrap returns the underlying lookup error.
func (e *NotInstalledError) Unwrap() error { return e.Err }

// Is reports whether target is ErrNotInstalled.
func (e *NotInstalledError) Is(target error) bool { return target == ErrNotInstalled }

// NotInitializedError reports that bd found no .beads database for the
// working directory.
type NotInitializedError struct {
	Dir string     // the directory bd ran in; empty means the current one
	Err *ExitError // bd's failed run
}

// Error says where bd looked and suggests bd init.
func (e *NotInitializedError) Error() string {
	dir := e.Dir
	if dir == "" {
		dir = "the current directory"
	}
	return fmt.Sprintf("no beads database found in %s or its parents: "+
		`run "bd init" in the project root, or set BEADS_DIR to its .beads directory`, dir)
}

// Unwrap returns the ExitError of the failed run.
func (e *NotInitializedError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// Is reports whether target is ErrNotInitialized.
func (e *NotInitializedError) Is(target error) bool { return target == ErrNotInitialized }

// BadJSONError reports output that is not the JSON ralphd expects: invalid
// syntax, an unexpected shape or a field of the wrong type.
type BadJSONError struct {
	Reason string // what was wrong
	Head   string // the first HeadLen bytes of the output
	Len    int    // the length of the whole output in bytes
}

// Error describes the problem and quotes the start of the output.
func (e *BadJSONError) Error() string {
	return fmt.Sprintf("unexpected bd output (%s); check that bd is the beads CLI (bd version); "+
		"output starts with %q", e.Reason, e.Head)
}

// Is reports whether target is ErrBadJSON.
func (e *BadJSONError) Is(target error) bool { return target == ErrBadJSON }

// newBadJSON builds a BadJSONError that keeps the head of data.
func newBadJSON(data []byte, format string, args ...any) *BadJSONError {
	head := data
	if len(head) > HeadLen {
		head = head[:HeadLen]
	}
	return &BadJSONError{Reason: fmt.Sprintf(format, args...), Head: string(head), Len: len(data)}
}

// ReportedError is an {"error": "..."} object bd printed where data was
// expected.
type ReportedError struct {
	Message string
}

// Error returns bd's message.
func (e *ReportedError) Error() string { return "bd reported an error: " + e.Message }

// Is reports whether target is ErrIssueNotFound and the message says so,
// or ErrSerialization and the message is a Dolt serialization failure.
func (e *ReportedError) Is(target error) bool {
	switch target {
	case ErrIssueNotFound:
		return mentionsNotFound(e.Message)
	case ErrSerialization:
		return isSerialization(e.Message)
	}
	return false
}

// TimeoutError reports that a bd call ran longer than its timeout and was
// killed, together with its process group.
type TimeoutError struct {
	Args    []string // bd's arguments, without the program name
	Timeout time.Duration
}

// Error names the command and the limit, and says what to try.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s timed out after %s and was killed: another bd process may hold the "+
		".beads lock; retry, or raise the bd timeout", commandLine(e.Args), e.Timeout)
}

// Is reports whether target is ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap returns context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ExitError reports a bd run that exited with a non-zero code.
type ExitError struct {
	Args    []string // bd's arguments, without the program name
	Code    int      // the exit code; -1 when a signal ended bd
	Stderr  string   // bd's stderr, trimmed; long output keeps its head and tail
	Message string   // the message of an {"error": ...} object bd printed, if any
}

// Error names the command, the exit code and bd's message.
func (e *ExitError) Error() string {
	detail := e.Message
	if detail == "" {
		detail = stderrSummary(e.Stderr)
	}
	if detail == "" {
		detail = "no error message"
	}
	if e.Code < 0 {
		return fmt.Sprintf("%s was killed by a signal: %s", commandLine(e.Args), detail)
	}
	return fmt.Sprintf("%s exited with code %d: %s", commandLine(e.Args), e.Code, detail)
}

// Is reports whether target is ErrIssueNotFound and bd's message says
// so, or ErrSerialization and bd's message is a Dolt serialization
// failure.
func (e *ExitError) Is(target error) bool {
	switch target {
	case ErrIssueNotFound:
		return mentionsNotFound(e.Message) || mentionsNotFound(e.Stderr)
	case ErrSerialization:
		return isSerialization(e.Message) || isSerialization(e.Stderr)
	}
	return false
}

// mentionsNotFound reports whether a bd message says an id does not exist.
// bd 1.0.5 says "no issue found matching" or "no issues found matching".
func mentionsNotFound(s string) bool {
	return strings.Contains(s, "no issue found matching") || strings.Contains(s, "no issues found matching")
}

// stderrSummary picks the lines of bd's stderr that say what went wrong:
// the "Error..." lines when there are any (bd follows them with usage
// text), otherwise the last three non-empty lines.
func stderrSummary(stderr string) string {
	lines := strings.Split(stderr, "\n")
	var errLines, all []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		all = append(all, l)
		if strings.HasPrefix(l, "Error") || strings.HasPrefix(l, "Hint") {
			errLines = append(errLines, l)
		}
	}
	pick := errLines
	if len(pick) == 0 {
		pick = all
		if len(pick) > 3 {
			pick = pick[len(pick)-3:]
		}
	}
	return truncate(strings.Join(pick, "; "), 500)
}

// Limits on how much stderr an ExitError keeps.
const (
	stderrHead = 1024
	stderrTail = 2048
)

// trimStderr trims space and, when stderr is long, keeps its head (where
// bd prints "Error: ...") and its tail.
func trimStderr(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= stderrHead+stderrTail {
		return s
	}
	head := validPrefix(s[:stderrHead])
	tail := validSuffix(s[len(s)-stderrTail:])
	return head + "\n…\n" + tail
}

// commandLine renders bd's argv for messages, quoting arguments that need
// it and shortening long ones.
func commandLine(args []string) string {
	var b strings.Builder
	b.WriteString("bd")
	for _, a := range args {
		b.WriteByte(' ')
		a = truncate(a, 60)
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`;&|<>*?(){}[]#~") {
			a = fmt.Sprintf("%q", a)
		}
		b.WriteString(a)
	}
	return b.String()
}

// truncate shortens s to at most n bytes plus an ellipsis, on a rune
// boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return validPrefix(s[:n]) + "…"
}

// validPrefix drops a partial UTF-8 sequence at the end of s.
func validPrefix(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			return s
		}
	}
	return s
}

// validSuffix drops a partial UTF-8 sequence at the start of s.
func validSuffix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	return s
}

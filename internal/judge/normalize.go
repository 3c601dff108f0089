package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"github.com/ralphd/ralphd/internal/text"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Placeholders Normalize puts in place of dynamic values.
const (
	PhUUID  = "<uuid>"
	PhTime  = "<time>"
	PhTmp   = "<tmp>"
	PhIssue = "<issue>"
	PhAddr  = "<addr>"
	PhHex   = "<hex>"
	PhPID   = "<pid>"
	PhPort  = "<port>"
	PhNum   = "<n>"
	PhDur   = "<dur>"
)

var (
	uuidRe = text.LazyRegexp(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)

	timeRes = []*text.Regexp{
		// RFC 3339 / ISO 8601, with optional fraction and zone.
		text.LazyRegexp(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?`),
		// Go log package: 2026/11/21 18:31:47.123456.
		text.LazyRegexp(`\b\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?`),
		// Common log format: 21/Nov/2026:18:31:47 +0000.
		text.LazyRegexp(`\b\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}(?: [+-]\d{4})?`),
		// RFC 1123 / RFC 822: Sat, 21 Nov 2026 18:31:47 GMT.
		text.LazyRegexp(`\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}(?: [A-Z]{2,5}| [+-]\d{4})?`),
		// ANSI C / Unix date: Sat Nov 21 18:31:47 UTC 2026, and syslog: Nov 21 18:31:47.
		text.LazyRegexp(`\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}\d{1,2} \d{2}:\d{2}:\d{2}(?: [A-Z]{2,5})?(?: \d{4})?`),
		// A bare date, then a bare time of day.
		text.LazyRegexp(`\b\d{4}-\d{2}-\d{2}\b`),
		text.LazyRegexp(`\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b`),
	}

	// genericIssueRe is a bd issue id when no prefix is known: a lowercase
	// prefix, a hyphen, a base36 hash with both a letter and a digit, and
	// optional child suffixes. The letter-and-digit test is in code.
	genericIssueRe = text.LazyRegexp(`\b[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-([0-9a-z]{3,8})((?:\.\d+)*)\b`)

	addrRe     = text.LazyRegexp(`\b0[xX][0-9a-fA-F]{6,}\b`)
	hexRe      = text.LazyRegexp(`\b[0-9a-fA-F]{7,}\b`)
	goroutRe   = text.LazyRegexp(`\bgoroutine \d+\b`)
	threadRe   = text.LazyRegexp(`(thread '[^']*') \(\d+\)`)
	pidRe      = text.LazyRegexp(`(?i)\b(pid|process|ppid)(\s*[=:#]\s*|\s+)\d+\b`)
	pidBrackRe = text.LazyRegexp(`\b([A-Za-z][\w.-]*)\[\d+\]:`)
	hostPortRe = text.LazyRegexp(`(?i)(\blocalhost|\b\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:]*\]):\d{1,5}\b`)
	portRe     = text.LazyRegexp(`(?i)\b(port)(\s*[=:]?\s*)\d{2,5}\b`)
	fileLineRe = text.LazyRegexp(`(\.[A-Za-z][A-Za-z0-9_]*):\d+(?::\d+)?\b`)
	tscPosRe   = text.LazyRegexp(`(\.[A-Za-z][A-Za-z0-9_]*)\(\d+,\d+\)`)
	lineColRe  = text.LazyRegexp(`:\d+:\d+\b`)
	lineWordRe = text.LazyRegexp(`(?i)\b(line|ln|col|column)(\s*:?\s*)\d+\b`)
	durRe      = text.LazyRegexp(`\b(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|h|m|s))+\b|\b\d+(?:\.\d+)? ?(?:seconds?|secs?|milliseconds?|msecs?|ms)\b|\b\d+\.\d+ s\b`)
	goBuildRe  = text.LazyRegexp(`\bgo-build\d+`)
	longNumRe  = text.LazyRegexp(`\b\d{10,}\b`)
)

// tempRoots are the directories whose contents are per-run. A path under
// one becomes <tmp>, keeping the file name when it looks like a file.
var tempRoots = []string{"/private/var/folders", "/var/folders", "/private/tmp", "/var/tmp", "/dev/shm", "/tmp", "$WORK"}

// Normalizer replaces dynamic values in failure lines with placeholders. The
// zero value is ready to use and recognises bd issue ids heuristically;
// NewNormalizer also knows the project's issue prefixes, so it catches every
// id with those prefixes. A Normalizer is immutable and safe for concurrent
// use.
type Normalizer struct {
	issueRe *regexp.Regexp
}

// NewNormalizer returns a Normalizer that also replaces every bd issue id
// with one of the given prefixes (such as "rt" for rt-2j9 and rt-wjd.1).
// Empty prefixes are ignored.
func NewNormalizer(prefixes ...string) Normalizer {
	var alts []string
	for _, p := range prefixes {
		p = strings.TrimSuffix(strings.TrimSpace(p), "-")
		if p != "" {
			alts = append(alts, regexp.QuoteMeta(p))
		}
	}
	if len(alts) == 0 {
		return Normalizer{}
	}
	re := regexp.MustCompile(`\b(?:` + strings.Join(alts, "|") + `)-[0-9A-Za-z]+(?:\.\d+)*\b`)
	return Normalizer{issueRe: re}
}

// Normalize replaces the dynamic values of a failure line with placeholders
// with a zero Normalizer. See Normalizer.Normalize.
func Normalize(line string) string {
	return Normalizer{}.Normalize(line)
}

// Fingerprint returns the first 12 hex digits of the SHA-256 of the
// normalised line, or "" when the normalised line is empty. Lines that
// differ only in dynamic values share a fingerprint.
func (n Normalizer) Fingerprint(line string) string {
	norm := n.Normalize(line)
	if norm == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(norm))
	return hex.EncodeToString(sum[:])[:12]
}

// Normalize replaces the dynamic values of a failure line with placeholders,
// in this order: terminal escapes are dropped and whitespace collapsed;
// UUIDs become <uuid>; timestamps (RFC 3339, Go log, common log format,
// RFC 1123, syslog, bare dates and times of day) become <time>; paths under
// /tmp, /var/tmp, /var/folders, /dev/shm or $WORK become <tmp> (or
// <tmp>/name.ext when they end in a file name); go-build123 becomes
// go-build<n>; bd issue ids become <issue>; 0x addresses of six or more
// digits become <addr>; other hex ids of seven or more digits with a letter
// and a digit become <hex>; goroutine numbers become <n>; Rust thread ids and PIDs
// (pid=42, process 42, name[42]:) become <pid>; ports after localhost, an IPv4 address or "port"
// become <port>; line and column numbers after a file name, "line" or
// "col", and any :N:M pair become <n>; durations (0.12s, 123ms, 1m30s,
// 0.412 s, 3 seconds) become <dur>; and runs of ten or more digits become
// <n>. Other numbers stay, so "got 3" and "got 4" remain different. The
// result is capped at 1024 bytes, cut at a space, so two lines that differ
// only after that share a fingerprint.
//
// Normalize is idempotent: Normalize(Normalize(x)) == Normalize(x).
func (n Normalizer) Normalize(line string) string {
	s := capTokens(collapseSpace(cleanLine(line)))
	// The rules can expose new matches for each other (a placeholder can
	// end a token another rule needed to see whole), so run to a fixpoint.
	// The cap is part of each step, so the result is a fixpoint of the
	// capped step and Normalize stays idempotent.
	for range 8 {
		next := capTokens(n.apply(s))
		if next == s {
			break
		}
		s = next
	}
	return s
}

// maxNormBytes bounds the normalised line. Regular expressions over long
// lines are slow, and a failure line's identity is in its start.
const maxNormBytes = 1024

// capTokens cuts s to at most maxNormBytes, at the last space that fits
// (s has single spaces only), or inside a rune-aligned token if there is
// none.
func capTokens(s string) string {
	if len(s) <= maxNormBytes {
		return s
	}
	if i := strings.LastIndexByte(s[:maxNormBytes+1], ' '); i > 0 {
		return s[:i]
	}
	cut := maxNormBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func (n Normalizer) apply(s string) string {
	s = uuidRe.ReplaceAllString(s, PhUUID)
	for _, re := range timeRes {
		s = re.ReplaceAllString(s, PhTime)
	}
	s = replaceTempPaths(s)
	s = goBuildRe.ReplaceAllString(s, "go-build"+PhNum)
	if n.issueRe != nil {
		s = n.issueRe.ReplaceAllString(s, PhIssue)
	}
	s = genericIssueRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := genericIssueRe.FindStringSubmatch(m)
		if sub == nil || !hasLetterAndDigit(sub[1]) {
			return m
		}
		return PhIssue
	})
	s = addrRe.ReplaceAllString(s, PhAddr)
	s = hexRe.ReplaceAllStringFunc(s, func(m string) string {
		if hasLetterAndDigit(m) {
			return PhHex
		}
		return m
	})
	s = goroutRe.ReplaceAllString(s, "goroutine "+PhNum)
	s = threadRe.ReplaceAllString(s, "$1 ("+PhPID+")")
	s = pidRe.ReplaceAllString(s, "${1}${2}"+PhPID)
	s = pidBrackRe.ReplaceAllString(s, "${1}["+PhPID+"]:")
	s = hostPortRe.ReplaceAllString(s, "${1}:"+PhPort)
	s = portRe.ReplaceAllString(s, "${1}${2}"+PhPort)
	s = tscPosRe.ReplaceAllString(s, "${1}("+PhNum+","+PhNum+")")
	s = fileLineRe.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.IndexByte(m, ':')
		if strings.Count(m[i:], ":") == 2 {
			return m[:i] + ":" + PhNum + ":" + PhNum
		}
		return m[:i] + ":" + PhNum
	})
	s = lineColRe.ReplaceAllString(s, ":"+PhNum+":"+PhNum)
	s = lineWordRe.ReplaceAllString(s, "${1}${2}"+PhNum)
	s = durRe.ReplaceAllString(s, PhDur)
	s = longNumRe.ReplaceAllString(s, PhNum)
	return collapseSpace(s)
}

func collapseSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func hasLetterAndDigit(s string) bool {
	var letter, digit bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// isPathStop reports whether c ends a path token.
func isPathStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\'', '"', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';', ':', '|':
		return true
	}
	return false
}

// replaceTempPaths replaces paths under a temp root. A root only counts at
// the start of a token and when followed by '/' or the end of the token, so
// /tmpfoo and build/tmp/x stay.
func replaceTempPaths(s string) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		if i > 0 && !isPathStop(s[i-1]) && s[i-1] != '=' {
			b.WriteByte(s[i])
			i++
			continue
		}
		root := ""
		for _, r := range tempRoots {
			if strings.HasPrefix(s[i:], r) {
				end := i + len(r)
				if end == len(s) || s[end] == '/' || isPathStop(s[end]) {
					root = r
					break
				}
			}
		}
		if root == "" {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := i + len(root)
		for end < len(s) && !isPathStop(s[end]) {
			end++
		}
		b.WriteString(PhTmp)
		rest := strings.TrimRight(s[i+len(root):end], "/.")
		// Keep a file name one level or more below the root: /tmp/x/main.go
		// becomes <tmp>/main.go, but /tmp/tmpa8f3k2.json (a random name
		// straight under the root) becomes <tmp>.
		if k := strings.LastIndexByte(rest, '/'); k > 0 && looksLikeFileName(rest[k+1:]) {
			b.WriteString("/" + rest[k+1:])
		}
		i = end
	}
	return b.String()
}

var fileNameRe = text.LazyRegexp(`^[\w.+-]*[\w-]\.[A-Za-z][A-Za-z0-9]{0,5}$`)

// looksLikeFileName reports whether a path element is a file name with a
// short extension, such as main.go or config.yaml, and not a random
// directory name such as tmp.jQAKYC9y0F.
func looksLikeFileName(s string) bool {
	return fileNameRe.MatchString(s)
}

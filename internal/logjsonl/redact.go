// A Redactor keeps secrets from ralphd's own environment out of what
// ralphd writes: bd notes, the run log, attempt records, reports and the
// terminal. A verify command that prints `env`, or an agent that echoes a
// key, would otherwise have the value copied verbatim into all of them.
//
// A Redactor is built from an environment (FromEnv): the values of the
// variables whose names say they hold a secret (*_KEY, *_TOKEN, *SECRET*,
// *PASSWORD*, *CREDENTIAL*, ...) and the password of any URL in the
// environment. Short or trivial values are left out, since replacing them
// would wreck ordinary output. Each value is replaced with Mask, in its
// raw form and in the forms JSON and URL-quoting give it.

package logjsonl

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Mask replaces every secret.
const Mask = "[redacted]"

// MinLen is the shortest value treated as a secret.
const MinLen = 8

// Redactor replaces known secret values. The zero value and nil redact
// nothing. It is safe for concurrent use.
type Redactor struct {
	secrets [][]byte // longest first, so that a secret containing another goes whole
	maxLen  int
}

// FromEnv returns a Redactor for the secrets in env ("NAME=value"
// entries), see the package documentation.
func FromEnv(env []string) *Redactor {
	var values []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if SecretName(name) {
			values = append(values, value)
		}
		if pw := urlPassword(value); pw != "" {
			values = append(values, pw)
		}
	}
	return NewRedactor(values...)
}

// NewRedactor returns a Redactor for the given secret values; trivial ones (see
// Trivial) are ignored.
func NewRedactor(values ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	add := func(s string) {
		if !Trivial(s) && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, []byte(s))
			r.maxLen = max(r.maxLen, len(s))
		}
	}
	for _, v := range values {
		if Trivial(v) {
			continue
		}
		add(v)
		// The forms the value takes inside a JSON string and a URL.
		if q, err := json.Marshal(v); err == nil {
			add(string(q[1 : len(q)-1]))
		}
		add(strings.ReplaceAll(string(mustJSON(v)), `/`, `\/`))
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
	}
	slices.SortFunc(r.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

// mustJSON is v's JSON string form without the quotes.
func mustJSON(v string) []byte {
	q, _ := json.Marshal(v)
	return q[1 : len(q)-1]
}

// secretWords are name parts that mark a secret wherever they appear;
// secretSuffixes mark one at the end of a name.
var (
	secretWords    = []string{"SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE_KEY", "API_KEY", "APIKEY", "ACCESS_KEY", "TOKEN", "COOKIE", "SESSION_KEY"}
	secretSuffixes = []string{"_KEY", "_PAT", "_AUTH", "_PWD", "_PASS", "_SIGNATURE"}
	// notSecret are suffixes of names that hold where a secret is, not the
	// secret: SSH_AUTH_SOCK, GOOGLE_APPLICATION_CREDENTIALS (a file path),
	// KUBECONFIG...
	notSecretSuffixes = []string{"_SOCK", "_FILE", "_PATH", "_DIR", "_HOME", "_URL_FILE"}
)

// SecretName reports whether an environment variable's name says it holds
// a secret.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, s := range notSecretSuffixes {
		if strings.HasSuffix(n, s) {
			return false
		}
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return n == "KEY" || n == "PASSWORD"
}

// Trivial reports whether a value is too short or too plain to be treated
// as a secret: replacing it would wreck ordinary output (a port, a path
// part, "true").
func Trivial(v string) bool {
	if len(v) < MinLen {
		return true
	}
	allDigits, same := true, true
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			allDigits = false
		}
		if v[i] != v[0] {
			same = false
		}
	}
	return allDigits || same
}

// urlPassword returns the password of s when s is a URL with one
// (postgres://user:pw@host/db).
func urlPassword(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return ""
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// Empty reports whether r knows no secret.
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }

// Bytes returns b with every secret replaced by Mask. It returns b itself
// when there is nothing to replace.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() {
		return b
	}
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Mask))
		}
	}
	return b
}

// String is Bytes for a string.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, string(sec)) {
			s = strings.ReplaceAll(s, string(sec), Mask)
		}
	}
	return s
}

// Lines redacts p, one or more newline-terminated lines, keeping each line
// that was valid JSON valid: should a replacement break a line (a secret
// that is also a piece of JSON syntax), that line's strings are redacted
// one by one through a decode and re-encode instead.
func (r *Redactor) Lines(p []byte) []byte {
	if r.Empty() || !r.contains(p) {
		return p
	}
	var out []byte
	for len(p) > 0 {
		line, rest, found := bytes.Cut(p, []byte{'\n'})
		p = rest
		red := r.Bytes(slices.Clone(line))
		if !bytes.Equal(red, line) && json.Valid(line) && !json.Valid(red) {
			red = r.jsonStrings(line)
		}
		out = append(out, red...)
		if found {
			out = append(out, '\n')
		}
	}
	return out
}

// contains reports whether any secret is in p.
func (r *Redactor) contains(p []byte) bool {
	for _, s := range r.secrets {
		if bytes.Contains(p, s) {
			return true
		}
	}
	return false
}

// jsonStrings redacts the strings (keys and values) of a JSON document.
func (r *Redactor) jsonStrings(doc []byte) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return []byte(`{"redacted":"` + Mask + `"}`)
	}
	out, err := json.Marshal(r.walk(v))
	if err != nil {
		return []byte(`{"redacted":"` + Mask + `"}`)
	}
	return out
}

func (r *Redactor) walk(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case json.Number:
		if s := r.String(string(x)); s != string(x) {
			return s
		}
		return x
	case []any:
		for i := range x {
			x[i] = r.walk(x[i])
		}
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[r.String(k)] = r.walk(e)
		}
		return m
	}
	return v
}

// Writer returns a writer that passes what is written to w with every
// secret replaced, also one split across writes: it holds back a line's
// unfinished end, and writes the held part of a line longer than the
// longest secret as soon as no secret can straddle it. Close writes what
// is held. One goroutine at a time may use it.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	return &writer{r: r, w: w}
}

type writer struct {
	r    *Redactor
	w    io.Writer
	mu   sync.Mutex
	held []byte
}

// holdLimit is how many bytes of an unfinished line the writer holds
// before it writes the safe part of it.
const holdLimit = 64 << 10

func (wr *writer) Write(p []byte) (int, error) {
	if wr.r.Empty() {
		return wr.w.Write(p)
	}
	wr.mu.Lock()
	defer wr.mu.Unlock()
	cut := 0
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		cut = len(wr.held) + i + 1
	}
	wr.held = append(wr.held, p...)
	if cut == 0 && len(wr.held) > holdLimit {
		cut = wr.safeCut()
	}
	if cut == 0 {
		return len(p), nil
	}
	out := wr.r.Bytes(slices.Clone(wr.held[:cut]))
	wr.held = append(wr.held[:0], wr.held[cut:]...)
	if _, err := wr.w.Write(out); err != nil {
		return len(p), err
	}
	return len(p), nil
}

// safeCut is the longest prefix of held that no secret straddles: all but
// the last maxLen-1 bytes, moved back to the start of any secret found
// across that point.
func (wr *writer) safeCut() int {
	cut := len(wr.held) - (wr.r.maxLen - 1)
	for moved := true; moved && cut > 0; {
		moved = false
		for _, s := range wr.r.secrets {
			from := max(0, cut-len(s)+1)
			to := min(len(wr.held), cut+len(s)-1)
			if from >= to {
				continue
			}
			if i := bytes.Index(wr.held[from:to], s); i >= 0 && from+i < cut {
				cut, moved = from+i, true
			}
		}
	}
	return max(cut, 0)
}

// Close writes what is held.
func (wr *writer) Close() error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if len(wr.held) == 0 {
		return nil
	}
	out := wr.r.Bytes(wr.held)
	wr.held = nil
	_, err := wr.w.Write(out)
	return err
}

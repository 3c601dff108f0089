package logjsonl_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/logjsonl"
)

// With Options.Redact, a secret reaches the log nowhere: not in a stream
// line passed through verbatim, not in a wrapped one, not in a record
// ralphd writes; and every line stays valid JSON.
func TestRedactedLog(t *testing.T) {
	is := is.New(t)
	const secret = "sk-ant-api03-0123456789abcdef"
	r := logjsonl.FromEnv([]string{"ANTHROPIC_API_KEY=" + secret})
	var buf bytes.Buffer
	w := logjsonl.New(&buf, logjsonl.Options{Redact: r.Lines})
	sw := w.StreamWriter(logjsonl.StreamStdout)
	_, _ = sw.Write([]byte(`{"type":"assistant","text":"ANTHROPIC_API_KEY=` + secret + `"}` + "\n"))
	_, _ = sw.Write([]byte("plain line with " + secret[:10]))
	_, _ = sw.Write([]byte(secret[10:] + " in it\n"))
	is.NoErr(sw.Close())
	is.NoErr(w.Meta("verify", map[string]string{"output": "env: ANTHROPIC_API_KEY=" + secret}))
	out := buf.String()
	is.True(!strings.Contains(out, secret))
	is.Equal(strings.Count(out, logjsonl.Mask), 3)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		is.True(json.Valid([]byte(line)))
	}
	is.True(strings.Contains(out, `{"type":"assistant","text":"ANTHROPIC_API_KEY=[redacted]"}`)) // otherwise verbatim
}

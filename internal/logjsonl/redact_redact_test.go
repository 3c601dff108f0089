package logjsonl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "GH_TOKEN": true,
		"AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true, "DB_PASSWORD": true, "MYSQL_PWD": true,
		"NPM_AUTH_TOKEN": true, "CLIENT_SECRET": true, "GOOGLE_CREDENTIALS": true, "SSH_PRIVATE_KEY": true,
		"ANTHROPIC_AUTH_TOKEN": true, "db_password": true, "STRIPE_KEY": true, "GITLAB_PAT": true,
		"PATH": false, "HOME": false, "SSH_AUTH_SOCK": false, "GOOGLE_APPLICATION_CREDENTIALS_FILE": false,
		"KEYBOARD": false, "TOKENIZER_PATH": false, "USER": false, "GIT_ASKPASS": false, "MONKEY": false,
		"RALPHD_AGENT_RUN": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	is := is.New(t)
	r := FromEnv([]string{
		"ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop",
		"GITHUB_TOKEN=ghp_0123456789abcdefXYZ",
		"DATABASE_URL=postgres://app:hunter2hunter2@db.example/app",
		"SHORT_TOKEN=abc",          // too short
		"PIN_PASSWORD=12345678",    // digits only
		"FILLER_SECRET=xxxxxxxxxx", // one repeated character
		"PATH=/usr/bin:/bin",
		"HOME=/home/someone-long",
		"NO_EQUALS",
	})
	in := "key sk-ant-api03-abcdefghijklmnop, token ghp_0123456789abcdefXYZ, db hunter2hunter2, pin 12345678 abc xxxxxxxxxx /usr/bin /home/someone-long"
	is.Equal(r.String(in), "key [redacted], token [redacted], db [redacted], pin 12345678 abc xxxxxxxxxx /usr/bin /home/someone-long")
	is.Equal(string(r.Bytes([]byte(in))), r.String(in))
}

func TestNilAndEmptyRedactNothing(t *testing.T) {
	is := is.New(t)
	var r *Redactor
	is.Equal(r.String("a secret"), "a secret")
	is.Equal(string(r.Lines([]byte("x\n"))), "x\n")
	is.True(FromEnv(nil).Empty())
	var b bytes.Buffer
	w := r.Writer(&b)
	_, _ = w.Write([]byte("plain"))
	is.NoErr(w.Close())
	is.Equal(b.String(), "plain")
}

// The longest secret goes first, so one that holds another is replaced
// whole.
func TestLongestFirst(t *testing.T) {
	is := is.New(t)
	r := NewRedactor("abcdefgh", "abcdefgh-and-more")
	is.Equal(r.String("x abcdefgh-and-more y abcdefgh"), "x [redacted] y [redacted]")
}

// Inside JSON, a secret in its escaped form is found, and lines stay valid.
func TestLinesKeepJSONValid(t *testing.T) {
	is := is.New(t)
	r := NewRedactor(`pa"ss/word\x`, "true-false-null", `0.12345678`)
	line, _ := json.Marshal(map[string]any{"text": `the key is pa"ss/word\x, ok`, "n": 1})
	out := r.Lines(append(line, '\n'))
	is.True(json.Valid(bytes.TrimSpace(out)))
	is.True(!bytes.Contains(out, []byte(`ss/word`)))
	is.True(bytes.Contains(out, []byte(Mask)))

	// A secret that is also a JSON number: the line is re-encoded.
	num := []byte(`{"total_cost_usd":0.12345678,"t":"0.12345678"}` + "\n" + `{"a":1}` + "\n")
	out = r.Lines(num)
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	is.Equal(len(lines), 2)
	for _, l := range lines {
		is.True(json.Valid(l))
	}
	is.True(!bytes.Contains(out, []byte("0.12345678")))
	is.Equal(string(lines[1]), `{"a":1}`) // untouched lines stay verbatim
}

func TestWriterAcrossWrites(t *testing.T) {
	is := is.New(t)
	secret := "sk-ant-api03-SECRETSECRET"
	r := NewRedactor(secret)
	text := "before " + secret + " middle\n" + strings.Repeat("y", 3*holdLimit) + secret + strings.Repeat("z", 100) + "\nend " + secret
	for _, step := range []int{1, 3, 7, 64, 4096, len(text)} {
		var b bytes.Buffer
		w := r.Writer(&b)
		for i := 0; i < len(text); i += step {
			_, err := w.Write([]byte(text[i:min(len(text), i+step)]))
			is.NoErr(err)
		}
		is.NoErr(w.Close())
		is.Equal(b.String(), strings.ReplaceAll(text, secret, Mask))
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("sk-ant-secret-1", "x sk-ant-secret-1 y", 5)
	f.Add(`a"b\c/d<e>f`, `{"t":"a\"b\\c/d\u003ce\u003ef"}`, 2)
	f.Add("12345678a", "12345678a12345678a", 1)
	f.Fuzz(func(t *testing.T, secret, text string, step int) {
		r := NewRedactor(secret)
		out := r.String(text)
		// A mask cannot help form a secret that has no bracket and is not
		// part of the mask: such a secret is gone.
		if !Trivial(secret) && !strings.ContainsAny(secret, "[]") && !strings.Contains(Mask, secret) && strings.Contains(out, secret) {
			t.Fatalf("secret %q left in %q", secret, out)
		}
		// Lines keeps valid JSON valid.
		if json.Valid([]byte(text)) && !strings.Contains(text, "\n") {
			if got := r.Lines([]byte(text + "\n")); !json.Valid(got) {
				t.Fatalf("Lines broke JSON: %q -> %q", text, got)
			}
		}
		// The streaming writer agrees with String whatever the pieces.
		if step <= 0 {
			step = 1
		}
		var b bytes.Buffer
		w := r.Writer(&b)
		for i := 0; i < len(text); i += step {
			_, _ = w.Write([]byte(text[i:min(len(text), i+step)]))
		}
		_ = w.Close()
		if b.String() != out {
			t.Fatalf("writer %q, String %q", b.String(), out)
		}
	})
}

package mergeq

import (
	"strings"
	"testing"
)

func TestParseGHResponse(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		status     int
		etag, body string
		err        bool
	}{
		{"200", "HTTP/1.1 200 OK\r\nEtag: \"abc\"\r\nContent-Type: application/json\r\n\r\n{\"a\":1}", 200, `"abc"`, `{"a":1}`, false},
		{"304", "HTTP/1.1 304 Not Modified\r\nETag: W/\"x\"\r\n\r\n", 304, `W/"x"`, "", false},
		{"first line LF only", "HTTP/1.1 404 Not Found\nContent-Length: 2\r\n\r\n{}", 404, "", "{}", false},
		{"no response", "gh: could not connect", 0, "", "", true},
		{"bad status", "HTTP/1.1 abc\r\n\r\n", 0, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseGHResponse([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (r.status != tc.status || r.etag != tc.etag || string(r.body) != tc.body) {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func FuzzParseGHResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nEtag: \"abc\"\r\n\r\n[]"))
	f.Add([]byte("HTTP/2 304\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseGHResponse(b)
		if err == nil && (r.status < 100 || r.status > 599 || strings.ContainsAny(r.etag, "\r\n")) {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}

func TestTail(t *testing.T) {
	long := strings.Repeat("line\n", 2000) + "the end"
	got := tail(long, 100)
	if !strings.HasSuffix(got, "the end") || len(got) > 110 || !strings.HasPrefix(got, "…\nline") {
		t.Fatalf("tail = %q", got)
	}
	if tail("short", 100) != "short" {
		t.Fatal("short text changed")
	}
}

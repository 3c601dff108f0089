package modes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestParseReviewMark: the journal of a pull request the pool waits on
// is read back only when ralphd could have written it.
func TestParseReviewMark(t *testing.T) {
	good := reviewMark{Issue: "t-a", Worker: "w1", Attempt: 2, Branch: "ralph/t-a", Commit: strings.Repeat("ab", 20), PR: 3,
		URL: "https://github.com/o/r/pull/3", Since: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)}
	enc := func(m reviewMark) string { b, _ := json.Marshal(m); return string(b) }
	with := func(f func(*reviewMark)) string { m := good; f(&m); return enc(m) }
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"written by ralphd", enc(good), true},
		{"before the pull request was opened", with(func(m *reviewMark) { m.PR, m.URL = 0, "" }), true},
		{"a path for an issue", with(func(m *reviewMark) { m.Issue = "../../x" }), false},
		{"an option for an issue", with(func(m *reviewMark) { m.Issue = "-rf" }), false},
		{"not a worker", with(func(m *reviewMark) { m.Worker = "w1/../w2" }), false},
		{"no attempt", with(func(m *reviewMark) { m.Attempt = 0 }), false},
		{"not a commit", with(func(m *reviewMark) { m.Commit = "HEAD" }), false},
		{"an option for a branch", with(func(m *reviewMark) { m.Branch = "--force" }), false},
		{"escapes in the URL", with(func(m *reviewMark) { m.URL = "https://x/\x1b[2J" }), false},
		{"no time", with(func(m *reviewMark) { m.Since = time.Time{} }), false},
		{"a negative number", with(func(m *reviewMark) { m.PR = -1 }), false},
		{"an unknown field", strings.Replace(enc(good), `{"issue"`, `{"merge":true,"issue"`, 1), false},
		{"two values", enc(good) + enc(good), false},
		{"garbage", "\x00\x01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := parseReviewMark([]byte(tc.in))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, m)
			}
			if ok && enc(m) != tc.in {
				t.Errorf("read back %s, want %s", enc(m), tc.in)
			}
		})
	}
}

// FuzzParseReviewMark: whatever the journal holds, parsing never panics,
// and what it accepts names a file in the worktrees' root, a worker and a
// commit, and reads back the same.
func FuzzParseReviewMark(f *testing.F) {
	f.Add([]byte(`{"issue":"t-a","worker":"w1","attempt":1,"branch":"ralph/t-a","commit":"` + strings.Repeat("a", 40) + `","pr":1,"since":"2026-11-28T03:00:00Z"}`))
	f.Add([]byte(`{"issue":"..","worker":"w1","attempt":1,"branch":"b","commit":"` + strings.Repeat("a", 40) + `","since":"2026-11-28T03:00:00Z"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := parseReviewMark(b)
		if !ok {
			return
		}
		if !validMarkIssue(m.Issue) || strings.Contains(m.Issue, "/") || m.Attempt < 1 || m.PR < 0 || m.Since.IsZero() {
			t.Fatalf("accepted %+v", m)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if m2, ok := parseReviewMark(again); !ok || m2.Issue != m.Issue || m2.Commit != m.Commit || !m2.Since.Equal(m.Since) {
			t.Fatalf("%s does not read back: %+v", again, m2)
		}
	})
}

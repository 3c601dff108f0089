package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

type fakeControl struct {
	mu     sync.Mutex
	paused bool
	resets []string
}

func (f *fakeControl) Pause()  { f.mu.Lock(); f.paused = true; f.mu.Unlock() }
func (f *fakeControl) Resume() { f.mu.Lock(); f.paused = false; f.mu.Unlock() }
func (f *fakeControl) Paused() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}
func (f *fakeControl) Reset(_ context.Context, id string) error {
	f.mu.Lock()
	f.resets = append(f.resets, id)
	f.mu.Unlock()
	return nil
}

func post(h http.Handler, target string, form url.Values, hdr ...string) int {
	req := httptest.NewRequest("POST", target, strings.NewReader(form.Encode()))
	req.Host = "127.0.0.1:7777"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

func TestControlNeedsTheTokenEvenOnLoopback(t *testing.T) {
	c := &fakeControl{}
	h := newTest(t, Options{Live: true, Control: c}).Handler(true)
	if code := post(h, "/control/pause", nil); code != http.StatusForbidden {
		t.Fatalf("pause without a token configured: %d", code)
	}
	if c.Paused() {
		t.Fatal("paused without a token")
	}
	if b := body(t, get(t, h, "/now")); strings.Contains(b, "/control/") {
		t.Fatal("control forms shown without a token")
	}
}

func TestControlRules(t *testing.T) {
	c := &fakeControl{}
	s := newTest(t, Options{Live: true, Control: c, Token: "tok"})
	h := s.Handler(true)
	csrf := url.Values{"csrf": {s.csrfToken()}}
	cookie := "ralphd_token=tok"
	for _, tc := range []struct {
		name string
		path string
		form url.Values
		hdr  []string
		want int
	}{
		{"no token", "/control/pause", csrf, nil, http.StatusUnauthorized},
		{"wrong bearer", "/control/pause", nil, []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"cookie without CSRF", "/control/pause", nil, []string{"Cookie", cookie}, http.StatusForbidden},
		{"cookie with a wrong CSRF", "/control/pause", url.Values{"csrf": {"00"}}, []string{"Cookie", cookie}, http.StatusForbidden},
		{"CSRF in the query only", "/control/pause?csrf=" + s.csrfToken(), nil, []string{"Cookie", cookie}, http.StatusForbidden},
		{"cross-origin form", "/control/pause", csrf, []string{"Cookie", cookie, "Origin", "http://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", "/control/pause", csrf, []string{"Cookie", cookie, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same-site but not same-origin", "/control/pause", csrf, []string{"Cookie", cookie, "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"not a control path", "/runs", csrf, []string{"Authorization", "Bearer tok"}, http.StatusMethodNotAllowed},
	} {
		if code := post(h, tc.path, tc.form, tc.hdr...); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
		if c.Paused() {
			t.Fatalf("%s: paused", tc.name)
		}
	}
	if r := get(t, h, "/control/pause", "Authorization", "Bearer tok"); r.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /control/pause: %d", r.StatusCode)
	}
	// The dashboard's own form, from a browser holding the cookie.
	if code := post(h, "/control/pause", csrf, "Cookie", cookie, "Origin", "http://127.0.0.1:7777", "Sec-Fetch-Site", "same-origin"); code != http.StatusSeeOther || !c.Paused() {
		t.Fatalf("the dashboard's pause form: %d, paused %v", code, c.Paused())
	}
	if b := body(t, get(t, h, "/now", "Cookie", cookie)); !strings.Contains(b, `action="/control/resume"`) || !strings.Contains(b, s.csrfToken()) {
		t.Fatalf("no resume form while paused:\n%s", b)
	}
	// A script with the bearer token (no browser, so no CSRF).
	if code := post(h, "/control/resume", nil, "Authorization", "Bearer tok"); code != http.StatusSeeOther || c.Paused() {
		t.Fatalf("resume with bearer: %d, paused %v", code, c.Paused())
	}
	if code := post(h, "/control/reset/t-d", csrf, "Cookie", cookie); code != http.StatusSeeOther {
		t.Fatalf("reset: %d", code)
	}
	if code := post(h, "/control/reset/..%2fx", csrf, "Cookie", cookie); code != http.StatusNotFound {
		t.Fatalf("reset of a bad id: %d", code)
	}
	if len(c.resets) != 1 || c.resets[0] != "t-d" {
		t.Fatalf("resets %v", c.resets)
	}
}

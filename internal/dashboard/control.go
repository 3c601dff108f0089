package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
)

// Control is what the dashboard's control actions do. They exist only on
// a daemon, and only when http_token is set: a control action needs the
// token even on loopback.
type Control interface {
	Pause()
	Resume()
	Paused() bool
	// Reset clears an issue's attempts and its stuck label, as `ralphd
	// reset ID` does.
	Reset(ctx context.Context, id string) error
}

// controlsOn reports whether control actions are offered.
func (s *Server) controlsOn() bool { return s.opts.Control != nil && s.opts.Token != "" }

// csrfToken is the value every control form carries. It is derived from
// the token, so only a page served to a token holder can know it; a
// cross-site form cannot.
func (s *Server) csrfToken() string {
	m := hmac.New(sha256.New, []byte(s.opts.Token))
	m.Write([]byte("ralphd dashboard control"))
	return hex.EncodeToString(m.Sum(nil))
}

// controlAllowed applies the rules for a POST: controls on, the token
// (bearer or cookie), and for a cookie (a browser) a same-origin request
// that carries the CSRF value. It writes the refusal itself.
func (s *Server) controlAllowed(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/control/") || s.opts.Control == nil {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: only /control/ takes POST, on a daemon", http.StatusMethodNotAllowed)
		return false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "control actions take POST only", http.StatusMethodNotAllowed)
		return false
	}
	if s.opts.Token == "" {
		http.Error(w, "control actions need http_token, even on loopback", http.StatusForbidden)
		return false
	}
	if r.Header.Get("Authorization") != "" {
		if !s.authorized(r) {
			http.Error(w, "wrong token", http.StatusUnauthorized)
			return false
		}
		return true // a bearer token is never sent by a browser on its own: no CSRF
	}
	if !s.authorized(r) {
		http.Error(w, "control actions need the token", http.StatusUnauthorized)
		return false
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		http.Error(w, "cross-site request refused", http.StatusForbidden)
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return false
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrfToken())) != 1 {
		http.Error(w, "missing or wrong CSRF value; use the dashboard's own buttons", http.StatusForbidden)
		return false
	}
	return true
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.opts.Control.Pause()
	s.live.changed()
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	s.opts.Control.Resume()
	s.live.changed()
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validName(id) {
		http.NotFound(w, r)
		return
	}
	if err := s.opts.Control.Reset(r.Context(), id); err != nil {
		s.opts.Log.Warn("dashboard: reset failed", "issue", id, "err", err)
		http.Error(w, "reset failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s.opts.Log.Info("dashboard: issue reset", "issue", id)
	http.Redirect(w, r, "/issue/"+id, http.StatusSeeOther)
}

package agent

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// This file holds what the backends share to answer the questions of
// Backend beyond running the CLI: where the user's home and XDG dirs are,
// how a credential is found, and which host a base URL names. Each
// backend's own answers live in its file.

// Home is the user's home dir and environment, where an agent CLI keeps
// its config, state and credentials.
type Home struct {
	// Dir is $HOME; empty when unknown.
	Dir string
	// Getenv reads the environment (XDG_*, the CLI's own variables); nil
	// reads an empty one.
	Getenv func(string) string
}

// env returns the variable key, or "".
func (h Home) env(key string) string {
	if h.Getenv == nil {
		return ""
	}
	return h.Getenv(key)
}

// in returns rel under the home dir, or "" when the home is unknown.
func (h Home) in(rel string) string {
	if h.Dir == "" {
		return ""
	}
	return filepath.Join(h.Dir, rel)
}

// absEnv returns the variable key when it is an absolute path, or "".
func (h Home) absEnv(key string) string {
	if v := h.env(key); filepath.IsAbs(v) {
		return v
	}
	return ""
}

// xdg returns the XDG base dir named by key ($XDG_CONFIG_HOME, ...) when
// it is absolute (the specification says to ignore a relative one), else
// def under the home dir, or "" when neither is known.
func (h Home) xdg(key, def string) string {
	if v := h.absEnv(key); v != "" {
		return v
	}
	return h.in(def)
}

// under joins rel to base, or returns "" when base is unknown.
func under(base, rel string) string {
	if base == "" {
		return ""
	}
	return filepath.Join(base, rel)
}

// Writable lists what the sandbox leaves writable for b under the user's
// home: the dirs and files b's CLI writes (Backend.Writable). The XDG
// cache dir is the sandbox's own (Home.CacheDir). Unknown paths (no home)
// are left out.
func Writable(b Backend, h Home) (dirs, files []string) {
	d, f := b.Writable(h)
	return nonEmpty(d), nonEmpty(f)
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Credentials is what a backend finds of its CLI's credentials without
// going online.
type Credentials struct {
	// Where names what was found: "$ANTHROPIC_API_KEY" for a variable, the
	// path of a credentials file. Empty when nothing was found.
	Where string
	// Checkable is false when the CLI's credentials cannot be told offline
	// at all (the command backend runs anything).
	Checkable bool
}

// found is the Credentials of a CLI that can be checked: the first
// non-empty place in places, or none.
func found(places ...string) Credentials {
	for _, p := range places {
		if p != "" {
			return Credentials{Where: p, Checkable: true}
		}
	}
	return Credentials{Checkable: true}
}

// credEnv returns "$KEY" for the first of keys that is set, or "".
func (h Home) credEnv(keys ...string) string {
	for _, k := range keys {
		if h.env(k) != "" {
			return "$" + k
		}
	}
	return ""
}

// credFile returns the first of paths that is absolute and a non-empty
// file, or "".
func credFile(paths ...string) string {
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
			return p
		}
	}
	return ""
}

// dataDir is $XDG_DATA_HOME as set, else ~/.local/share: where opencode
// and Amp look for their credentials.
func (h Home) dataDir() string {
	if v := h.env("XDG_DATA_HOME"); v != "" {
		return v
	}
	return h.in(filepath.Join(".local", "share"))
}

// apiHost returns the host (with its port, when given) of the base URL in
// the variable key, or def when the variable is unset or names no host.
func apiHost(getenv func(string) string, key, def string) string {
	if getenv == nil {
		return def
	}
	v := strings.TrimSpace(getenv(key))
	if v == "" {
		return def
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return def
	}
	return u.Host
}

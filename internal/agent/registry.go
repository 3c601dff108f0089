package agent

import (
	"fmt"
	"strings"
	"time"
)

// Config carries what a backend may need when it is looked up. Each
// backend reads the fields that concern it.
type Config struct {
	// AgentCmd is the command line of the command backend (--agent-cmd).
	AgentCmd string
	// Bin overrides the backend's executable (for tests and unusual
	// installs); empty means the backend's default.
	Bin string
	// Now is the clock for reset times; time.Now when nil.
	Now func() time.Time
}

// Option sets a field of Config.
type Option func(*Config)

// WithAgentCmd sets the command line of the command backend.
func WithAgentCmd(line string) Option { return func(c *Config) { c.AgentCmd = line } }

// backendEntry is one registered backend: a zero value that answers the
// questions that need no configuration (its name, its verified version,
// its hosts, ...), and how to make a configured one.
type backendEntry struct {
	proto Backend
	make  func(Config) (Backend, error)
}

// registry lists the backends. Adding a backend is one line here: the
// configuration's allowed values, `ralphd agents`, doctor, the sandbox and
// Lookup all read it. The first entry is the default.
func registry() []backendEntry {
	return append([]backendEntry{
		{Claude{}, func(c Config) (Backend, error) { return Claude{Bin: c.Bin, Now: c.Now}, nil }},
		{Command{}, newCommandBackend},
		{Codex{}, func(c Config) (Backend, error) { return Codex{Bin: c.Bin, Now: c.Now}, nil }},
		{Opencode{}, func(c Config) (Backend, error) { return Opencode{Bin: c.Bin, Now: c.Now}, nil }},
		{Gemini{}, func(c Config) (Backend, error) { return Gemini{Bin: c.Bin, Now: c.Now}, nil }},
		{Amp{}, func(c Config) (Backend, error) { return Amp{Bin: c.Bin, Now: c.Now}, nil }},
	}, testOnlyBackends...)
}

// testOnlyBackends follow the registry's own while a test registers a
// backend of its own (see export_test.go); ralphd never sets it.
var testOnlyBackends []backendEntry

func newCommandBackend(c Config) (Backend, error) {
	if strings.TrimSpace(c.AgentCmd) == "" {
		return nil, errNoCommandLine
	}
	return Command{Line: c.AgentCmd, Now: c.Now}, nil
}

// Lookup returns the backend called name, configured by opts. An unknown
// name is an error that lists the valid ones.
func Lookup(name string, opts ...Option) (Backend, error) {
	var cfg Config
	for _, o := range opts {
		o(&cfg)
	}
	for _, e := range registry() {
		if e.proto.Name() == name {
			b, err := e.make(cfg)
			if err != nil {
				return nil, fmt.Errorf("agent %s: %w", name, err)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown agent %q: choose one of %s", name, strings.Join(Names(), ", "))
}

// Names returns the names of all backends, the default first, in the
// registry's order.
func Names() []string {
	var names []string
	for _, e := range registry() {
		names = append(names, e.proto.Name())
	}
	return names
}

// Describe returns the unconfigured backend called name, to ask what
// needs no configuration (Verified, Hosts, Credentials, Writable). It
// cannot run: the command backend has no command line.
func Describe(name string) (Backend, bool) {
	for _, e := range registry() {
		if e.proto.Name() == name {
			return e.proto, true
		}
	}
	return nil, false
}

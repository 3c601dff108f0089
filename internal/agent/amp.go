package agent

import (
	"path/filepath"
	"time"
)

// Amp is the backend for Sourcegraph's Amp, run as `amp -x --stream-json`
// with the prompt on stdin. Its stream is the Claude-compatible subset
// (system/init, user, assistant, result), so it is parsed by the Claude
// parser: there is no cost field (CostUSD stays nil), usage comes from the
// assistant messages, and a Bash call's command is input.cmd.
//
// Amp has no model flag: it chooses models by mode, so Invocation.Model
// is passed as --mode (smart, rush, deep).
//
// Policy: Amp's own permission rules (the amp.permissions setting, with
// per-tool allow/reject/ask rules matching a command pattern) live in its
// settings files, and ralphd has no verified way to add a per-run layer
// to them without replacing the user's settings. So nothing is compiled
// for Amp; the bd guard on PATH and the tamper detection enforce the
// policy, and the commands Amp ran are audited from its stream. ralphd
// does not pass --dangerously-allow-all, so in execute mode Amp may refuse
// commands its settings would ask about.
type Amp struct {
	// Bin is the executable; "amp" when empty.
	Bin string
	// Now is the clock used for reset times; time.Now when nil.
	Now func() time.Time
}

// ampTexts word Amp's fatal verdicts.
var ampTexts = claudeTexts{
	product: "Amp",
	login:   "log in with `amp login`, or set AMP_API_KEY",
	billing: "Amp billing error",
}

// Name returns "amp".
func (a Amp) Name() string { return "amp" }

// Binary returns the executable Amp needs on PATH.
func (a Amp) Binary() string {
	if a.Bin != "" {
		return a.Bin
	}
	return "amp"
}

// InstallHint says how to install Amp.
func (a Amp) InstallHint() string {
	return "install Amp with `npm install -g @sourcegraph/amp`, then log in with `amp login` (or set AMP_API_KEY)"
}

// VersionArgs returns the arguments that make amp print its version.
func (a Amp) VersionArgs() []string { return []string{"--version"} }

// Verified says why Amp is not run end to end: its model calls go through
// its vendor's own service (an Amp account and AMP_API_KEY), not a
// documented model API that a local stand-in could speak.
func (a Amp) Verified() Verification {
	return Verification{Package: "@sourcegraph/amp", Why: "recorded streams only: Amp talks only to its vendor's service"}
}

// Hosts returns Amp's service, or the host of AMP_URL.
func (a Amp) Hosts(getenv func(string) string) []string {
	return []string{apiHost(getenv, "AMP_URL", "ampcode.com")}
}

// Credentials finds AMP_API_KEY or the login Amp keeps in
// $XDG_DATA_HOME/amp/secrets.json.
func (a Amp) Credentials(h Home) Credentials {
	return found(h.credEnv("AMP_API_KEY"), credFile(filepath.Join(h.dataDir(), "amp", "secrets.json")))
}

// Writable returns Amp's config and data dirs.
func (a Amp) Writable(h Home) (dirs, files []string) {
	return []string{under(h.xdg("XDG_CONFIG_HOME", ".config"), "amp"), under(h.xdg("XDG_DATA_HOME", ".local/share"), "amp")}, nil
}

// Guarded returns Amp's settings (MCP servers, permissions) and global
// instructions in its config dir.
func (a Amp) Guarded(h Home) Guarded {
	return Guarded{Paths: guardedIn([]string{under(h.xdg("XDG_CONFIG_HOME", ".config"), "amp")},
		"settings.json", "AGENTS.md", "AGENT.md")}
}

// ScrubEnv returns nothing: Amp sets no variable that would mislead an
// agent ralphd starts.
func (a Amp) ScrubEnv() []string { return nil }

// Command builds the amp command line; the prompt goes on stdin.
func (a Amp) Command(inv Invocation) (Spec, error) {
	argv := []string{a.Binary(), "-x", "--stream-json"}
	if inv.Model != "" {
		argv = append(argv, "--mode", inv.Model)
	}
	return Spec{Argv: argv, Env: ralphEnv(inv), Stdin: inv.Prompt}, nil
}

// NewParser returns the Claude stream-json parser, worded for Amp.
func (a Amp) NewParser() Parser {
	p := newClaudeParser(a.Now, 0)
	p.texts = ampTexts
	return p
}

// NewLogParser returns a parser of Amp's stream-json for the run log:
// Claude Code's.
func (a Amp) NewLogParser() LogParser { return &claudeLog{} }

package agent

import "time"

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

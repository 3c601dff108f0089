package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralphd/ralphd/internal/guard"
)

// runGuard is ralphd invoked as `bd` from an agent's PATH (the guard's
// wrapper runs `ralphd bd-guard`): guard.Main applies the mode's policy,
// audits the call, and runs the real bd or refuses.
func runGuard(ctx context.Context, a *app, args []string) int {
	return guard.Main(ctx, args, a.getenv, a.stdin, a.stdout, a.stderr)
}

func cmdPolicy(ctx context.Context, a *app, args []string) int {
	if len(args) > 0 && args[0] == "check" {
		return cmdPolicyCheck(a, args[1:])
	}
	fs := newFlags(a, "policy", "policy [--markdown] | policy check --mode build|plan -- <bd argv...>", `
Print the separation-of-powers policy: what BUILD mode may do in bd (PLAN may
do everything). "policy check" decides one bd call and explains why; it exits
0 when the call is allowed and 1 when it is refused.`)
	md := fs.Bool("markdown", false, "print a markdown table")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(a, fs, "unexpected arguments: %q (did you mean `ralphd policy check`?)", pos)
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	var err error
	if *md {
		err = guard.WriteTable(a.stdout, guard.TableMarkdown)
	} else {
		err = writePolicyText(a.stdout, guard.Table(), outputWidth(a.stdout))
	}
	if err != nil {
		return reportErr(a, err)
	}
	return exitOK
}

func cmdPolicyCheck(a *app, args []string) int {
	fs := newFlags(a, "policy check", "policy check --mode build|plan -- <bd argv...>", `
Decide one bd call under a mode's policy. Prints the decision, the rule and
the reason; exits 0 when allowed, 1 when refused, 2 on a usage error. Put the
bd arguments after --, without the leading "bd".`)
	modeFlag := fs.String("mode", "build", "the mode to decide for: build or plan")
	// Stop at the first positional or "--": the rest is bd's argv, whose
	// flags are not ours.
	if code, done := parseFlags(a, fs, args); done {
		return code
	}
	argv := fs.Args()
	if len(argv) > 0 && argv[0] == "bd" {
		argv = argv[1:]
	}
	mode, err := guard.ParseMode(*modeFlag)
	if err != nil {
		return usageErrorf(a, fs, "%v", err)
	}
	if len(argv) == 0 {
		return usageErrorf(a, fs, "give the bd arguments after --, e.g. `ralphd policy check --mode build -- update x-1 --priority 0`")
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	d := guard.Decide(mode, argv)
	verdict := "allowed"
	if !d.Allowed {
		verdict = "refused"
	}
	fmt.Fprintf(a.stdout, "%s: bd %s\nmode: %s\nrule: %s\nreason: %s\n", verdict, strings.Join(argv, " "), mode, d.Rule, d.Reason)
	if !d.Allowed && d.Instead != "" {
		fmt.Fprintf(a.stdout, "instead: %s\n", d.Instead)
	}
	if d.Allowed {
		return exitOK
	}
	return guard.ExitRefused
}

func cmdHook(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 || args[0] != "pre-tool-use" {
		fs := newFlags(a, guard.HookCommand, "hook pre-tool-use --mode build|plan", `
Agent hook entry points. "pre-tool-use" is Claude Code's PreToolUse hook: it
reads the hook JSON on stdin, finds every bd call in a Bash command (through
&&, pipes, subshells, bash -c, xargs...), and exits 2 with the reason on
stderr when the mode's policy refuses one. It fails closed.`)
		fs.Usage()
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			return exitOK
		}
		return exitUsage
	}
	fs := newFlags(a, "hook pre-tool-use", "hook pre-tool-use --mode build|plan", "Claude Code PreToolUse hook; see `ralphd hook --help`.")
	modeFlag := fs.String("mode", "", "the mode to enforce (default: $"+guard.EnvMode+")")
	pos, code, done := parseArgs(a, fs, args[1:])
	if done {
		return code
	}
	if len(pos) > 0 {
		// Claude Code takes the usage error's exit 2 as a block: a hook
		// installed wrong fails closed.
		return usageErrorf(a, fs, "unexpected arguments: %q (the hook reads the tool call on stdin)", pos)
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	m := *modeFlag
	if m == "" {
		m = a.getenv(guard.EnvMode)
	}
	mode, err := guard.ParseMode(m)
	if err != nil {
		// Hook blocks every tool call under a mode it does not know, and
		// tells the agent why: the hook fails closed.
		mode = guard.Mode(m)
	}
	return guard.Hook(ctx, mode, a.stdin, a.stdout, a.stderr)
}

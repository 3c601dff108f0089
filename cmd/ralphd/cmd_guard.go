package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/internal/state"
)

// runGuard is ralphd invoked as `bd` from an agent's PATH: it applies the
// mode's policy, audits the call, and runs the real bd or refuses.
func runGuard(ctx context.Context, a *app, args []string) int {
	env, err := guard.GuardEnvFromEnv(a.getenv)
	if err != nil {
		fmt.Fprintf(a.stderr, "ralphd guard: %v\n", err)
		return guard.ExitRefused
	}
	logPath := a.getenv(guard.EnvLogPath)
	auditFile := a.getenv(modes.EnvAuditFile)
	iteration, _ := strconv.Atoi(a.getenv(guard.EnvIteration))
	env.Audit = func(_ context.Context, rec guard.AuditRecord) error {
		var errs []string
		call := state.BDCall{Argv: rec.Argv, Allowed: rec.Allowed, Rule: rec.Rule, ExitCode: rec.ExitCode}
		if auditFile != "" {
			if err := appendJSONLine(auditFile, call); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if logPath != "" {
			ev := logjsonl.BDCall{Argv: rec.Argv, Mode: string(rec.Mode), Allowed: rec.Allowed, Rule: rec.Rule, Iteration: iteration}
			if rec.Allowed {
				code := rec.ExitCode
				ev.ExitCode = &code
			} else {
				ev.Reason = rec.Reason
			}
			if err := logjsonl.AppendMeta(logPath, logjsonl.EventBDCall, ev, rec.Time); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
	return guard.RunGuard(ctx, args, env, a.stdin, a.stdout, a.stderr)
}

// appendJSONLine appends v as one JSON line with a single write.
func appendJSONLine(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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
	format := guard.TableText
	if *md {
		format = guard.TableMarkdown
	}
	if err := guard.WriteTable(a.stdout, format); err != nil {
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
	if err := fs.Parse(args); err != nil {
		if err.Error() == "flag: help requested" {
			return exitOK
		}
		return exitUsage
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
	return 1
}

func cmdHook(ctx context.Context, a *app, args []string) int {
	if len(args) == 0 || args[0] != "pre-tool-use" {
		fs := newFlags(a, "hook", "hook pre-tool-use --mode build|plan", `
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
	if _, code, done := parseArgs(a, fs, args[1:]); done {
		return code
	}
	m := *modeFlag
	if m == "" {
		m = a.getenv(guard.EnvMode)
	}
	mode, err := guard.ParseMode(m)
	if err != nil {
		fmt.Fprintf(a.stderr, "ralphd hook: %v; refusing (fail closed)\n", err)
		return 2
	}
	return guard.Hook(ctx, mode, a.stdin, a.stdout, a.stderr)
}

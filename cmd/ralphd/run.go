package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/sandbox"
	"github.com/ralphd/ralphd/internal/text"
)

// app carries what every subcommand needs from the process: its streams and
// environment. Nothing in it is global, so tests can run many apps at once.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	env    []string // the full environment, for child processes
	argv0  string   // how ralphd was invoked (absolute path when resolvable)

	// parseOnly makes a command stop once its flags and arguments are
	// checked, before it acts: the docs test runs every documented
	// command line so. parsed records that the command got that far.
	parseOnly bool
	parsed    bool
}

// command is one ralphd subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) int
}

func commands() []command {
	return []command{
		{"build", "run BUILD iterations over `bd ready` (ralphd build [N])", cmdBuild},
		{"plan", "run PLANNING iterations (ralphd plan [N])", cmdPlan},
		{"daemon", "alternate PLANNING and BUILD, idle on .beads/ changes", cmdDaemon},
		{"demo", "run a whole loop on a scratch project, no account needed", cmdDemo},
		{"status", "show this project's state: lock, attempts, last run", cmdStatus},
		{"reset", "clear attempt counters (ralphd reset ID... | --all), or the pinned tracker (--tracker)", cmdReset},
		{"migrate", "import a legacy .ralph-attempts file into the state dir", cmdMigrate},
		{"logs", "list runs, or render one (ralphd logs [RUN] [--follow|--raw])", cmdLogs},
		{"report", "print a run's end-of-run report (ralphd report [RUN] [--json])", cmdReport},
		{"policy", "print the bd policy, or check one call (policy check)", cmdPolicy},
		{"config", "print the effective configuration and where each value came from", cmdConfig},
		{"serve", "serve the dashboard read-only from the state dir, no daemon (serve --http ADDR)", cmdServe},
		{"notify", "send a sample of each notification (notify test)", cmdNotify},
		{"agents", "list agent backends and whether each is installed", cmdAgents},
		{"doctor", "check everything ralphd depends on, with a fix for each problem", cmdDoctor},
		{"service", "install the systemd user unit (service install|uninstall|print)", cmdService},
		{guard.HookCommand, "agent hook entry points (hook pre-tool-use)", cmdHook},
		{"version", "print version information", cmdVersionFlags},
		{"help", "show help for ralphd or a command", cmdHelp},
	}
}

// run is ralphd's whole life after main: it dispatches on argv and returns
// the exit code.
func run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, env: os.Environ()}
	if len(argv) > 0 {
		a.argv0 = argv[0]
		if exe, err := os.Executable(); err == nil {
			a.argv0 = exe
		}
		argv = argv[1:]
	}
	return a.dispatch(ctx, argv)
}

// dispatch runs the command argv names (argv without the program name).
func (a *app) dispatch(ctx context.Context, argv []string) int {
	if len(argv) == 0 {
		usage(a.stderr)
		return exitUsage
	}
	name := argv[0]
	if !a.parseOnly { // they act at once, and are not for people
		if code, ok := runInternal(ctx, a, name, argv[1:]); ok {
			return code
		}
	}
	switch name {
	case "-h", "--help", "-help":
		usage(a.stdout)
		return exitOK
	case "-v", "--version":
		return cmdVersion(a.stdout)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, a, argv[1:])
		}
	}
	errorf(a.stderr, "unknown command %q", name)
	if s := suggest(name); s != "" {
		hintf(a.stderr, "did you mean `ralphd %s`?", s)
	}
	hintf(a.stderr, "run `ralphd help` for the list of commands")
	return exitUsage
}

// runInternal runs ralphd's own entry points, the hidden commands ralphd
// runs itself as. ok is false when name is none of them.
func runInternal(ctx context.Context, a *app, name string, args []string) (code int, ok bool) {
	switch name {
	case guard.Command:
		// The bd wrapper on an agent's PATH: this process is the guard.
		return runGuard(ctx, a, args), true
	case guard.ClientCommand:
		// The bd on an agent's PATH: a client of the running ralphd.
		return guard.ClientMain(args, a.getenv, a.stdin, a.stdout, a.stderr), true
	case proc.ReaperCommand:
		// The process that ends an iteration's cgroup if ralphd dies.
		return proc.RunReaper(args, a.stderr), true
	case sandbox.ForwarderCommand:
		// The first process of a sandbox with its own network: it
		// becomes the agent.
		return sandbox.RunForwarder(args, a.stderr), true
	case demoAgentCommand:
		return runDemoAgent(ctx, a), true
	case demoBDCommand:
		return runDemoBD(ctx, a, args), true
	}
	return 0, false
}

func usage(w io.Writer) {
	fmt.Fprint(w, `ralphd runs an AI coding agent in a loop over a beads (bd) tracker.

Usage:
  ralphd <command> [flags] [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'ralphd help <command>' or 'ralphd <command> --help' for a command's flags.
Exit codes: 0 done, 1 error, 2 usage/config, 3 cap reached with work left,
4 project locked by another ralphd, 5 agent unusable, 130 interrupted.
`)
}

func cmdHelp(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "help", "help [COMMAND]", `
Show ralphd's commands, or one command's usage, arguments and flags (the
same as 'ralphd COMMAND --help').`)
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	var cmd *command
	if len(pos) > 1 {
		return usageErrorf(a, fs, "give at most one COMMAND")
	}
	if len(pos) == 1 {
		for _, c := range commands() {
			if c.name == pos[0] {
				cmd = &c
			}
		}
		if cmd == nil {
			errorf(a.stderr, "no help for unknown command %q", pos[0])
			if s := suggest(pos[0]); s != "" {
				hintf(a.stderr, "did you mean `ralphd help %s`?", s)
			}
			return exitUsage
		}
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	switch {
	case cmd == nil:
		usage(a.stdout)
		return exitOK
	case cmd.name == "help":
		fs.Usage()
		return exitOK
	}
	return cmd.run(ctx, a, []string{"--help"})
}

func cmdVersionFlags(_ context.Context, a *app, args []string) int {
	fs := newFlags(a, "version", "version", "Print ralphd's version, commit and Go version.")
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return usageErrorf(a, fs, "unexpected arguments: %q", pos)
	}
	if code, stop := a.parsedOnly(nil); stop {
		return code
	}
	return cmdVersion(a.stdout)
}

// suggest returns the command closest to a mistyped name, if any is close.
func suggest(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return text.Closest(name, names)
}

// newFlags returns a flag set for one subcommand. Its Usage prints the
// synopsis, the description and the flags to stdout: that is the
// command's --help.
func newFlags(a *app, name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet("ralphd "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parseFlags reports errors, briefly
	fs.Usage = func() {
		w := a.stdout
		fmt.Fprintf(w, "Usage: ralphd %s\n\n%s\n", synopsis, strings.TrimSpace(description))
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(w, "\nFlags:\n")
			fs.SetOutput(w)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
	}
	return fs
}

// parseFlags parses args into fs. --help prints the command's help to
// stdout (exit 0). A bad flag is one error line, a did-you-mean when a
// flag is close, and a pointer to --help (exit 2), not the whole list.
func parseFlags(a *app, fs *flag.FlagSet, args []string) (code int, done bool) {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, flag.ErrHelp):
		usage()
		return exitOK, true
	}
	name, undefined := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if _, numErr := strconv.ParseFloat(name, 64); undefined && numErr == nil {
		// `ralphd build -5`: a negative count, not a flag
		errorf(a.stderr, "-%s: a count cannot be negative", name)
		hintf(a.stderr, "run `%s --help` for its usage", fs.Name())
		return exitUsage, true
	}
	if undefined {
		errorf(a.stderr, "%s has no flag --%s", fs.Name(), name)
		names := []string{"help"}
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := text.Closest(name, names); s != "" {
			hintf(a.stderr, "did you mean --%s?", s)
		}
	} else {
		// flag's own messages name a flag with one dash: ralphd's help
		// and docs use two.
		msg := strings.Replace(err.Error(), " for flag -", " for flag --", 1)
		msg = strings.Replace(msg, "flag needs an argument: -", "flag needs an argument: --", 1)
		errorf(a.stderr, "%s", msg)
	}
	hintf(a.stderr, "run `%s --help` for its flags", fs.Name())
	return exitUsage, true
}

// parseArgs parses flags that may come before or after positional
// arguments, as users type both (`build 50 --log`, `build --log 50`). A
// `--` ends flag parsing; everything after it is positional.
//
// It returns the positional arguments, or done=true with an exit code when
// parsing ended the command (help was asked for, or a usage error).
func parseArgs(a *app, fs *flag.FlagSet, args []string) (pos []string, code int, done bool) {
	for {
		if code, done := parseFlags(a, fs, args); done {
			return nil, code, true
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), 0, false
		}
		if len(rest) == 0 {
			return pos, 0, false
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parsedOnly is each command's last step before it acts, once its flags
// and arguments are checked. In a parse-only run it ends the command
// (stop is true): with exit 0, or 2 when a value of the configuration
// flags registered on cfgFlags (with config.BindFlags; nil when none
// were) is bad on its own, as loading the configuration would find at
// start. In a real run it does nothing.
func (a *app) parsedOnly(cfgFlags *flag.FlagSet) (code int, stop bool) {
	if !a.parseOnly {
		return exitOK, false
	}
	a.parsed = true
	if cfgFlags != nil {
		if _, err := config.Load(config.Loader{Flags: cfgFlags}); err != nil {
			return usageErrorf(a, cfgFlags, "%v", err), true
		}
	}
	return exitOK, true
}

// errorf prints a user-facing error in the house style: lowercase, no final
// period, prefixed with the program name.
func errorf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "ralphd: error: "+format+"\n", args...)
}

// hintf prints what the user can do about the previous error.
func hintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "ralphd: hint: "+format+"\n", args...)
}

// usageErrorf reports a usage error for the command and returns exitUsage.
func usageErrorf(a *app, fs *flag.FlagSet, format string, args ...any) int {
	errorf(a.stderr, format, args...)
	hintf(a.stderr, "run `%s --help` for its usage", fs.Name())
	return exitUsage
}

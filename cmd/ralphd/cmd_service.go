package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// unitName is the template unit's file name.
const unitName = "ralphd@.service"

// Placeholders in unitTemplate, and the values the repository's copy of the
// unit (scripts/ralphd@.service) is rendered with. That copy must equal
// renderUnit(repoExec, repoPATH); a test checks it.
const (
	unitExecMarker = "{{ralphd}}"
	unitPATHMarker = "{{PATH}}"
	// repoExec is where `go install` puts ralphd by default.
	repoExec = "%h/go/bin/ralphd"
	// repoPATH covers the usual homes of bd, claude and codex.
	repoPATH = "%h/.local/bin:%h/go/bin:/usr/local/bin:/usr/bin:/bin"
	// fallbackPATH is used when the installing shell's PATH has no usable
	// entry.
	fallbackPATH = "/usr/local/bin:/usr/bin:/bin"
	// maxUnitNameLen is systemd's limit on a unit name (UNIT_NAME_MAX - 1).
	maxUnitNameLen = 255
)

// unitTemplate is the one source of the systemd unit. Every line is
// explained in its comments; keep them true when changing a value.
const unitTemplate = `# ralphd@.service: ralphd's daemon for one project, as a systemd user service.
# The instance name is the project's path, escaped:
#
#   systemctl --user enable --now ralphd@$(systemd-escape --path ~/src/app)
#
# ` + "`ralphd service install`" + ` writes this file to ~/.config/systemd/user/ with the
# absolute path of the ralphd binary in ExecStart= and the PATH of the shell
# it ran in, and prints the commands for your project. The copy in ralphd's
# repository (scripts/ralphd@.service) assumes ` + "`go install`" + ` put ralphd in ~/go/bin
# and bd and your agent in one of the directories of its PATH= line.
#
# Log:   journalctl --user -u 'ralphd@*' -f
# State: systemctl --user status 'ralphd@*'   (shows ralphd's live STATUS=)
# To keep it running while you are logged out: loginctl enable-linger

[Unit]
Description=ralphd Ralph loop in %f
Documentation=https://github.com/ralphd/ralphd#run-as-a-service
# A crash loop gives up after 10 starts within an hour instead of restarting
# forever; ` + "`systemctl --user reset-failed`" + ` re-arms it.
StartLimitIntervalSec=1h
StartLimitBurst=10

[Service]
# ralphd reports on $NOTIFY_SOCKET: READY=1 once started, STATUS= with what it
# is doing, WATCHDOG=1 while alive, STOPPING=1 on shutdown.
Type=notify
# Only ralphd itself may notify, never the agent it runs.
NotifyAccess=main
# %f is the instance name unescaped: the project's absolute path.
WorkingDirectory=%f
ExecStart=` + unitExecMarker + ` daemon
# A user manager's PATH is short; bd and the agent CLI must be found on this.
Environment="PATH=` + unitPATHMarker + `"
# Keep a JSONL log of every run in the state dir, for ` + "`ralphd logs`" + `.
Environment=RALPH_LOG=1
# A Go panic or fatal error exits with status 2, which would pass for a
# deliberate stop below and never be restarted; with crash it dies of SIGABRT
# instead (goroutine dump in the journal) and is restarted.
Environment=GOTRACEBACK=crash
# Restart after an error (exit 1), a crash or a watchdog timeout...
Restart=on-failure
RestartSec=30s
# ...but never after a deliberate stop, which a restart would only repeat,
# burning agent quota: 2 usage or configuration error, 4 another ralphd holds
# the project's lock, 5 agent unusable (not installed, not logged in). Fix the
# cause, then ` + "`systemctl --user restart`" + ` the instance.
RestartPreventExitStatus=2 4 5
# On stop, SIGTERM goes to ralphd alone: it starts no new iteration, stops its
# agent's process group itself (SIGTERM, then SIGKILL after stop_grace),
# records the iteration as interrupted, releases the lock and exits 0. Anything
# left in the unit's cgroup after that, or at TimeoutStopSec, gets SIGKILL.
KillMode=mixed
# ralphd runs each agent in a cgroup of its own under the unit's, so that
# ending an iteration ends every process it started; systemd leaves the
# unit's sub-cgroups to ralphd.
Delegate=yes
# Longer than ralphd's stop_grace (30s by default), so its own orderly stop
# finishes first. Raise it if you raise stop_grace.
TimeoutStopSec=60s
# ralphd pings every 60s, half of this; one silent for 120s is killed with
# SIGABRT and restarted.
WatchdogSec=120s

[Install]
WantedBy=default.target
`

// renderUnit returns the unit with the given ExecStart= executable and
// PATH, both already in unit-file syntax.
func renderUnit(execStart, path string) string {
	r := strings.NewReplacer(unitExecMarker, execStart, unitPATHMarker, path)
	return r.Replace(unitTemplate)
}

func cmdService(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "service", "service install|uninstall|print [flags]", `
Manage ralphd's systemd user service, a template unit whose instance is the
escaped path of a project: ralphd@<project>.service runs `+"`ralphd daemon`"+`
in that project.

  install [--project DIR]  write <XDG config home>/systemd/user/ralphd@.service
                           for this ralphd binary, and print the systemctl
                           lines that start it for DIR (default: here)
  uninstall                remove the unit (after you disable its instances)
  print                    print the unit install would write

Run 'ralphd service <subcommand> --help' for a subcommand's flags.`)
	if len(args) == 0 {
		return usageErrorf(a, fs, "missing subcommand: install, uninstall or print")
	}
	switch args[0] {
	case "install":
		return cmdServiceInstall(ctx, a, args[1:])
	case "uninstall":
		return cmdServiceUninstall(a, args[1:])
	case "print":
		return cmdServicePrint(a, args[1:])
	}
	pos, code, done := parseArgs(a, fs, args)
	if done {
		return code
	}
	return usageErrorf(a, fs, "unknown subcommand %q: want install, uninstall or print", strings.Join(pos, " "))
}

// unitDir is <XDG config home>/systemd/user, where systemd looks for user
// units.
func unitDir(a *app) string {
	return filepath.Join(configHome(a), "systemd", "user")
}

// installedUnit renders the unit for this ralphd binary and the caller's
// PATH. It returns the unit, the binary's path, and warnings to show.
func installedUnit(a *app) (unit, bin string, warnings []string, err error) {
	bin, err = ralphdBinary(a)
	if err != nil {
		return "", "", nil, err
	}
	execStart, err := unitExecPath(bin)
	if err != nil {
		return "", "", nil, err
	}
	if strings.Contains(bin, string(filepath.Separator)+"go-build") {
		warnings = append(warnings, fmt.Sprintf("%s looks like a temporary `go run` build, which will vanish; install ralphd (go install ./cmd/ralphd) and run that one", bin))
	}
	path, kept, dropped := servicePATH(a.getenv("PATH"))
	for _, d := range dropped {
		warnings = append(warnings, fmt.Sprintf("PATH entry %q left out of the unit: only absolute, printable paths work there", d))
	}
	if !findIn(kept, "bd") {
		warnings = append(warnings, "bd is not on PATH, so the service would not find it either; install bd, then run this again")
	}
	return renderUnit(execStart, path), bin, warnings, nil
}

func cmdServicePrint(a *app, args []string) int {
	fs := newFlags(a, "service print", "service print", `
Print the unit `+"`ralphd service install`"+` would write: this binary's absolute
path in ExecStart= and the current PATH. The unit is the same for every
project; the project is the instance name.`)
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
	unit, _, warnings, err := installedUnit(a)
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitError
	}
	for _, w := range warnings {
		warnf(a.stderr, "%s", w)
	}
	fmt.Fprint(a.stdout, unit)
	return exitOK
}

func cmdServiceInstall(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "service install", "service install [--project DIR]", `
Write the systemd user unit `+unitName+` into <XDG config home>/systemd/user/,
with the absolute path of this ralphd binary in ExecStart= and the current
PATH (so the service finds bd and the agent CLI), then print the commands that
start ralphd for the project: daemon-reload, enable --now, and the journalctl
line to follow it. Running it again updates the unit in place.`)
	projectFlag := fs.String("project", "", "the project to print the start commands for (default: the current directory)")
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

	project, err := serviceProject(ctx, *projectFlag)
	if err != nil && *projectFlag != "" {
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "pass --project the path of a git checkout that uses beads")
		return exitUsage
	}
	instance := ""
	if project != "" {
		esc, err := escapePath(project)
		if err == nil {
			instance, err = instanceName(esc)
		}
		if err != nil {
			errorf(a.stderr, "%v", err)
			return exitUsage
		}
		if _, err := os.Stat(filepath.Join(project, ".beads")); err != nil {
			warnf(a.stderr, "%s has no .beads/ yet; run `bd init` there before starting the service", project)
		}
	}

	unit, bin, warnings, err := installedUnit(a)
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitError
	}
	for _, w := range warnings {
		warnf(a.stderr, "%s", w)
	}
	if xch := a.getenv("XDG_CONFIG_HOME"); xch != "" && a.getenv("HOME") != "" && filepath.Clean(xch) != filepath.Join(a.getenv("HOME"), ".config") {
		warnf(a.stderr, "XDG_CONFIG_HOME is %s: systemd looks there only if your user manager has it too (see `systemctl --user show-environment`)", xch)
	}

	dir := unitDir(a)
	file := filepath.Join(dir, unitName)
	verb := "wrote"
	if old, err := os.ReadFile(file); err == nil {
		verb = "updated"
		if bytes.Equal(old, []byte(unit)) {
			verb = "unchanged:"
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		errorf(a.stderr, "create %s: %v", dir, err)
		hintf(a.stderr, "set XDG_CONFIG_HOME to a writable directory")
		return exitError
	}
	if err := atomicfile.Write(file, []byte(unit), 0o644); err != nil {
		errorf(a.stderr, "install the unit: %v", err)
		return exitError
	}

	w := a.stdout
	fmt.Fprintf(w, "%s %s (ExecStart=%s daemon)\n\n", verb, file, bin)
	if instance == "" {
		fmt.Fprintln(w, "Start ralphd for a project, now and at every login:")
		fmt.Fprintln(w, "  systemctl --user daemon-reload")
		fmt.Fprintln(w, "  systemctl --user enable --now \"ralphd@$(systemd-escape --path /path/to/project).service\"")
		fmt.Fprintln(w, "Follow the logs:")
		fmt.Fprintln(w, "  journalctl --user -u 'ralphd@*' -f")
	} else {
		fmt.Fprintf(w, "Start ralphd for %s, now and at every login:\n", project)
		fmt.Fprintln(w, "  systemctl --user daemon-reload")
		fmt.Fprintf(w, "  systemctl --user enable --now %s\n", text.ShellQuote(instance))
		fmt.Fprintln(w, "Follow its log:")
		fmt.Fprintf(w, "  journalctl --user -u %s -f\n", text.ShellQuote(instance))
	}
	if verb == "updated" {
		fmt.Fprintln(w, "Restart running instances to use the new unit (after daemon-reload):")
		fmt.Fprintln(w, "  systemctl --user restart 'ralphd@*'")
	}
	fmt.Fprintln(w, "Keep it running while you are logged out:")
	fmt.Fprintln(w, "  loginctl enable-linger")
	return exitOK
}

func cmdServiceUninstall(a *app, args []string) int {
	fs := newFlags(a, "service uninstall", "service uninstall", `
Remove `+unitName+` from <XDG config home>/systemd/user/. While any project's
instance is still enabled, it removes nothing and prints the
`+"`systemctl --user disable --now`"+` lines to run first.`)
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
	dir := unitDir(a)
	enabled, err := enabledInstances(dir)
	if err != nil {
		errorf(a.stderr, "%v", err)
		return exitError
	}
	if len(enabled) > 0 {
		fmt.Fprintln(a.stdout, "Stop and disable ralphd for each project first:")
		for _, name := range enabled {
			fmt.Fprintf(a.stdout, "  systemctl --user disable --now %s\n", text.ShellQuote(name))
		}
		errorf(a.stderr, "%s is still enabled for %d project(s); nothing removed", unitName, len(enabled))
		hintf(a.stderr, "run the lines above, then `ralphd service uninstall` again")
		return exitError
	}
	file := filepath.Join(dir, unitName)
	if err := os.Remove(file); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(a.stdout, "%s is not installed (no %s)\n", unitName, file)
			return exitOK
		}
		errorf(a.stderr, "remove the unit: %v", err)
		return exitError
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		warnf(a.stderr, "%v", err)
	}
	fmt.Fprintln(a.stdout, "Stop any instance still running (started without enable), and reload systemd:")
	fmt.Fprintln(a.stdout, "  systemctl --user stop 'ralphd@*'")
	fmt.Fprintln(a.stdout, "  systemctl --user daemon-reload")
	fmt.Fprintf(a.stdout, "removed %s\n", file)
	return exitOK
}

// enabledInstances lists the ralphd@ instances enabled in the unit
// directory dir: the ralphd@*.service links in its *.wants/ and
// *.requires/ directories, sorted and without duplicates.
func enabledInstances(dir string) ([]string, error) {
	var names []string
	for _, pattern := range []string{"*.wants", "*.requires"} {
		links, err := filepath.Glob(filepath.Join(dir, pattern, "ralphd@?*.service"))
		if err != nil {
			return nil, fmt.Errorf("list enabled instances: %w", err)
		}
		for _, l := range links {
			names = append(names, filepath.Base(l))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// serviceProject returns the top level of the project containing dir (the
// current directory when empty).
func serviceProject(ctx context.Context, dir string) (string, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", dir, err)
		}
		dir = abs
	}
	id, err := identify(ctx, dir)
	if err != nil {
		return "", err
	}
	return id.TopLevel, nil
}

// ralphdBinary returns the absolute path of the running ralphd binary.
func ralphdBinary(a *app) (string, error) {
	if a.argv0 == "" {
		return "", errors.New("cannot tell where the ralphd binary is; run ralphd by its path")
	}
	bin, err := filepath.Abs(a.argv0)
	if err != nil {
		return "", fmt.Errorf("resolve the ralphd binary %s: %w", a.argv0, err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return "", fmt.Errorf("find the ralphd binary: %w; run ralphd by its path", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("the ralphd binary %s is not an executable file; run ralphd by its path", bin)
	}
	return bin, nil
}

// unitExecPath writes the absolute path p as the executable of an
// ExecStart= line. systemd refuses backslashes, quotes and control
// characters in an executable's path, so those are errors; % is doubled
// (specifiers are expanded), and a path with blanks is double-quoted. A $
// stays as is: systemd expands variables in arguments, not in the path.
func unitExecPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("the ralphd binary path %q is not absolute", p)
	}
	if !utf8.ValidString(p) || strings.ContainsAny(p, `\"'`) || strings.ContainsFunc(p, isControl) {
		return "", fmt.Errorf("systemd cannot run %q: its path has a backslash, a quote, a control character or invalid UTF-8; move ralphd to a plainer path (go install puts it in ~/go/bin)", p)
	}
	p = strings.ReplaceAll(p, "%", "%%")
	if strings.ContainsAny(p, " \t;") {
		p = `"` + p + `"`
	}
	return p, nil
}

// servicePATH turns the installing shell's PATH into the value of the
// unit's double-quoted Environment="PATH=..." line. It keeps the absolute,
// printable entries once each, in order, and returns them and the ones it
// dropped.
func servicePATH(path string) (value string, kept, dropped []string) {
	for _, e := range filepath.SplitList(path) {
		switch {
		case e == "":
			continue
		case !filepath.IsAbs(e) || !utf8.ValidString(e) || strings.ContainsFunc(e, isControl):
			dropped = append(dropped, e)
		case !slices.Contains(kept, e):
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return fallbackPATH, filepath.SplitList(fallbackPATH), dropped
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%")
	return r.Replace(strings.Join(kept, ":")), kept, dropped
}

// findIn reports whether an executable file named name is in one of dirs.
func findIn(dirs []string, name string) bool {
	for _, d := range dirs {
		fi, err := os.Stat(filepath.Join(d, name))
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f
}

// escapePath escapes an absolute path into a unit instance name as
// `systemd-escape --path` does: the path is simplified (repeated slashes,
// "." components and the leading and trailing slashes dropped; ".." is
// refused), "/" becomes "-", and every byte other than ASCII letters,
// digits, ":", "_" and "." becomes \xNN, as does a leading ".". The root
// directory is "-".
func escapePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("escape %q for systemd: not an absolute path", p)
	}
	var parts []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return "", fmt.Errorf("escape %q for systemd: the path has a \"..\" component; pass the real path", p)
		}
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return "-", nil
	}
	s := strings.Join(parts, "/")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '.' && i == 0:
			fmt.Fprintf(&b, `\x%02x`, c)
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == ':', c == '_', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String(), nil
}

// instanceName returns the unit name ralphd@<escaped>.service, or an error
// when it is longer than systemd allows.
func instanceName(escaped string) (string, error) {
	name := "ralphd@" + escaped + ".service"
	if len(name) > maxUnitNameLen {
		return "", fmt.Errorf("the project's path is too long for a systemd unit name (%d characters escaped, at most %d); move the project to a shorter path", len(name), maxUnitNameLen)
	}
	return name, nil
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/adrg/xdg"
	"github.com/charmbracelet/log"
	"github.com/muesli/termenv"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/state"
)

// project is an opened project: where it is, its configuration and state.
type project struct {
	dir   string
	id    state.Identity
	cfg   *config.Config
	store *state.Store
}

// stateRoot is $RALPH_STATE_DIR, or <XDG state home>/ralph.
func stateRoot(a *app) string {
	if d := a.getenv("RALPH_STATE_DIR"); d != "" {
		return d
	}
	if d := a.getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "ralph")
	}
	return filepath.Join(xdg.StateHome, "ralph")
}

// stateDirHint says what to do about a state dir ralphd cannot use. It
// is a setup error (exit 2): waiting or restarting does not fix it.
func stateDirHint(a *app) {
	hintf(a.stderr, "set RALPH_STATE_DIR (or XDG_STATE_HOME) so that %s is a directory you can write, or fix what is in its way; `ralphd doctor` checks it", stateRoot(a))
}

// configHome is <XDG config home>.
func configHome(a *app) string {
	if d := a.getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return xdg.ConfigHome
}

// globalConfigFile is <XDG config home>/ralph/config.json.
func globalConfigFile(a *app) string {
	return filepath.Join(configHome(a), "ralph", "config.json")
}

// identify finds the project containing dir (the current directory when
// empty).
func identify(ctx context.Context, dir string) (state.Identity, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return state.Identity{}, fmt.Errorf("find the current directory: %w", err)
		}
	}
	return state.ProjectID(ctx, dir)
}

// stateSubdir is a directory of the current project's state dir
// (state.LogsDirName, state.ReportsDirName), for the read-only commands.
func stateSubdir(ctx context.Context, a *app, name string) (string, error) {
	id, err := identify(ctx, "")
	if err != nil {
		return "", err
	}
	return filepath.Join(state.ProjectDir(stateRoot(a), id.ID), name), nil
}

// loadConfig layers the configuration for the project at dir.
func loadConfig(a *app, dir string, fs *flag.FlagSet) (*config.Config, error) {
	return config.Load(configLoader(a, dir, fs))
}

// loadConfigKeepGoing is loadConfig for the commands that show state
// (config, status): a broken config file does not stop them. They get
// the configuration without the file's bad parts, and its error to show.
func loadConfigKeepGoing(a *app, dir string, fs *flag.FlagSet) (*config.Config, error) {
	l := configLoader(a, dir, fs)
	l.KeepGoing = true
	return config.Load(l)
}

func configLoader(a *app, dir string, fs *flag.FlagSet) config.Loader {
	projectFile := ""
	if dir != "" {
		projectFile = filepath.Join(dir, ".ralph", "config.json")
	}
	return config.Loader{
		GlobalFile:  globalConfigFile(a),
		ProjectFile: projectFile,
		Getenv:      a.getenv,
		Flags:       fs,
	}
}

// loadConfigHere layers the configuration for the project around the
// current directory, or without a project file outside any project.
func loadConfigHere(ctx context.Context, a *app, fs *flag.FlagSet) (*config.Config, error) {
	dir := ""
	if id, err := identify(ctx, ""); err == nil {
		dir = id.TopLevel
	}
	return loadConfig(a, dir, fs)
}

// openProject identifies the project, loads its configuration and opens
// its state dir. It prints any error with a hint and returns the exit code.
func openProject(ctx context.Context, a *app, fs *flag.FlagSet, dir string) (*project, int) {
	id, err := identify(ctx, dir)
	if err != nil {
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "run ralphd inside a git repository that uses beads (git init && bd init)")
		return nil, exitUsage
	}
	cfg, err := loadConfig(a, id.TopLevel, fs)
	if err != nil {
		return nil, reportErr(a, err)
	}
	store, err := state.Open(ctx, stateRoot(a), id, readBuildInfo().Version)
	if err != nil {
		errorf(a.stderr, "open the state dir: %v", err)
		stateDirHint(a)
		return nil, exitUsage
	}
	for _, w := range store.Warnings() {
		warnf(a.stderr, "%s", w)
	}
	if state.HasLegacyAttempts(id.TopLevel) {
		warnf(a.stderr, "%s", state.LegacyWarning(id.TopLevel, store.Dir()))
	}
	return &project{dir: id.TopLevel, id: id, cfg: cfg, store: store}, exitOK
}

// reportErr prints err with what to do about it, and returns the exit code
// it maps to. This is the one place errors become exit codes.
func reportErr(a *app, err error) int {
	var cfgErr *config.Error
	var locked *state.LockedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &cfgErr):
		for _, line := range strings.Split(err.Error(), "\n") { // one error per bad key
			errorf(a.stderr, "config: %s", line)
		}
		hintf(a.stderr, "fix it there, or run `ralphd config` to see every key and where its value comes from")
		return exitUsage
	case errors.As(err, &locked):
		errorf(a.stderr, "%v", err)
		hintf(a.stderr, "wait for it to finish, or stop it (`ralphd status` shows it)")
		return exitLocked
	case errors.Is(err, beads.ErrNotInstalled):
		errorf(a.stderr, "%v", err)
		return exitUsage
	case errors.Is(err, beads.ErrNotInitialized):
		errorf(a.stderr, "this is not a beads repository: %v", err)
		hintf(a.stderr, "run `bd init` here first, or cd to the repository that holds .beads/")
		return exitUsage
	case errors.Is(err, context.Canceled):
		errorf(a.stderr, "interrupted")
		return exitInterrupted
	default:
		errorf(a.stderr, "%v", err)
		return exitError
	}
}

// warnf prints a warning in the house style.
func warnf(w interface{ Write([]byte) (int, error) }, format string, args ...any) {
	fmt.Fprintf(w, "ralphd: warning: "+format+"\n", args...)
}

// humanLogger is the one-line-per-event log on stderr. Under journald
// (JOURNAL_STREAM set) it drops colours and timestamps: journald adds its
// own.
func humanLogger(a *app) *log.Logger {
	l := log.NewWithOptions(a.stderr, log.Options{ReportTimestamp: true, TimeFormat: "15:04:05"})
	if a.getenv("JOURNAL_STREAM") != "" {
		l.SetReportTimestamp(false)
		l.SetColorProfile(termenv.Ascii)
	}
	return l
}

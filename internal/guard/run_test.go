package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/state"
)

// fakeBD writes a stand-in for the real bd into a temp dir. It records its
// argv (one per line) and its stdin, prints to both streams, and exits with
// code. body, when set, replaces the final exit.
type fakeBD struct {
	path, argvFile, stdinFile string
}

func newFakeBD(t *testing.T, code int, body string) fakeBD {
	t.Helper()
	dir := t.TempDir()
	f := fakeBD{
		path:      filepath.Join(dir, "bd"),
		argvFile:  filepath.Join(dir, "argv"),
		stdinFile: filepath.Join(dir, "stdin"),
	}
	if body == "" {
		body = fmt.Sprintf("exit %d", code)
	}
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$0\" \"$@\" > '%s'\ncat > '%s'\necho 'fake bd out'\necho 'fake bd err' >&2\n%s\n",
		f.argvFile, f.stdinFile, body)
	if err := os.WriteFile(f.path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// ran returns the argv the fake bd recorded, or nil if it never ran.
func (f fakeBD) ran(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.argvFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

type auditLog struct {
	mu    sync.Mutex
	recs  []state.BDCall
	times []time.Time
	err   error
}

func (a *auditLog) sink(_ context.Context, at time.Time, rec state.BDCall) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, rec)
	a.times = append(a.times, at)
	return a.err
}

func fixedNow() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) }

func TestRunGuardAllowed(t *testing.T) {
	is := is.New(t)
	bd := newFakeBD(t, 3, "")
	var log auditLog
	env := GuardEnv{Mode: ModeBuild, RealBD: bd.path, Audit: log.sink, Now: fixedNow}
	var stdout, stderr bytes.Buffer
	args := []string{"--actor", "agent", "update", "bd-1", "--status", "in_progress", "--notes", "a b  c"}

	code := RunGuard(context.Background(), args, env, strings.NewReader("piped input\n"), &stdout, &stderr)

	is.Equal(code, 3)                                       // the real bd's exit code
	is.Equal(bd.ran(t), append([]string{bd.path}, args...)) // same argv
	stdin, err := os.ReadFile(bd.stdinFile)
	is.NoErr(err)
	is.Equal(string(stdin), "piped input\n") // same stdin
	is.Equal(stdout.String(), "fake bd out\n")
	is.Equal(stderr.String(), "fake bd err\n") // nothing of the guard's own
	is.Equal(len(log.recs), 1)
	rec := log.recs[0]
	is.True(rec.Allowed)
	is.Equal(rec.Rule, RuleUpdate)
	is.Equal(rec.ExitCode, 3)
	is.Equal(rec.Argv, args)
	is.Equal(rec.Mode, string(ModeBuild))
	is.Equal(log.times[0], fixedNow())
	is.Equal(rec.Error, "")
}

func TestRunGuardRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		rule string
	}{
		{"priority", []string{"update", "bd-1", "-p0"}, RulePriority},
		{"delete", []string{"delete", "bd-1", "--force"}, RuleDelete},
		{"dep rm", []string{"dep", "rm", "a", "b"}, RuleDepRemove},
		{"close without reason", []string{"close", "bd-1"}, RuleCloseReason},
		{"unknown flag", []string{"ready", "--bogus"}, RuleUnknownFlag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			bd := newFakeBD(t, 0, "")
			var log auditLog
			env := GuardEnv{Mode: ModeBuild, RealBD: bd.path, Audit: log.sink}
			var stdout, stderr bytes.Buffer

			code := RunGuard(context.Background(), tc.args, env, strings.NewReader(""), &stdout, &stderr)

			is.Equal(code, ExitRefused)
			is.Equal(bd.ran(t), nil) // the real bd never ran
			is.Equal(stdout.String(), "")
			is.True(strings.Contains(stderr.String(), "BUILD mode refused"))
			is.True(strings.Contains(stderr.String(), "(rule "+tc.rule+")"))
			is.True(strings.Contains(stderr.String(), "Instead:"))
			is.Equal(len(log.recs), 1) // refusals are always audited
			is.True(!log.recs[0].Allowed)
			is.Equal(log.recs[0].Rule, tc.rule)
			is.Equal(log.recs[0].ExitCode, ExitRefused)
		})
	}
}

func TestRunGuardPlanRunsEverything(t *testing.T) {
	is := is.New(t)
	bd := newFakeBD(t, 0, "")
	var log auditLog
	args := []string{"dep", "remove", "a", "b"}
	code := RunGuard(context.Background(), args, GuardEnv{Mode: ModePlan, RealBD: bd.path, Audit: log.sink},
		strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	is.Equal(code, 0)
	is.Equal(bd.ran(t), append([]string{bd.path}, args...))
	is.Equal(log.recs[0].Rule, RulePlanAll)
}

func TestRunGuardSignalExit(t *testing.T) {
	is := is.New(t)
	bd := newFakeBD(t, 0, "kill -TERM $$")
	var log auditLog
	code := RunGuard(context.Background(), []string{"ready"}, GuardEnv{Mode: ModeBuild, RealBD: bd.path, Audit: log.sink},
		strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	is.Equal(code, 128+15) // killed by SIGTERM, as a shell reports it
	is.Equal(log.recs[0].ExitCode, 128+15)
}

// cancelOnWrite cancels a context on the first write: the fake bd has
// started and printed.
type cancelOnWrite struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.once.Do(c.cancel)
	return len(p), nil
}

func TestRunGuardCancelStopsBD(t *testing.T) {
	is := is.New(t)
	bd := newFakeBD(t, 0, "exec sleep 60")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log auditLog
	code := RunGuard(ctx, []string{"list"}, GuardEnv{Mode: ModeBuild, RealBD: bd.path, Audit: log.sink},
		strings.NewReader(""), &cancelOnWrite{cancel: cancel}, &bytes.Buffer{})
	is.Equal(code, 128+15) // SIGTERM to the group
	is.Equal(len(log.recs), 1)
}

func TestRunGuardBadRealBD(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "bd")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, want string }{
		{"unset", "", "is not set"},
		{"relative", "bin/bd", "not an absolute path"},
		{"missing", filepath.Join(dir, "nope"), "stat real bd"},
		{"directory", dir, "not an executable file"},
		{"not executable", notExec, "not an executable file"},
		{"ralphd itself", self, "is ralphd itself"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var log auditLog
			var stderr bytes.Buffer
			code := RunGuard(context.Background(), []string{"ready"}, GuardEnv{Mode: ModeBuild, RealBD: tc.path, Audit: log.sink},
				strings.NewReader(""), &bytes.Buffer{}, &stderr)
			is.Equal(code, ExitRefused)
			is.True(strings.Contains(stderr.String(), tc.want))
			is.Equal(log.recs[0].ExitCode, -1)
			is.True(strings.Contains(log.recs[0].Error, tc.want))
		})
	}
}

func TestRunGuardAuditError(t *testing.T) {
	is := is.New(t)
	bd := newFakeBD(t, 0, "")
	log := auditLog{err: errors.New("disk full")}
	var stderr bytes.Buffer
	code := RunGuard(context.Background(), []string{"ready"}, GuardEnv{Mode: ModeBuild, RealBD: bd.path, Audit: log.sink},
		strings.NewReader(""), &bytes.Buffer{}, &stderr)
	is.Equal(code, 0) // bd's result stands
	is.True(strings.Contains(stderr.String(), "audit bd call: disk full"))
}

func TestRunGuardNoMode(t *testing.T) {
	is := is.New(t)
	bd := newFakeBD(t, 0, "")
	var stderr bytes.Buffer
	code := RunGuard(context.Background(), []string{"ready"}, GuardEnv{RealBD: bd.path},
		strings.NewReader(""), &bytes.Buffer{}, &stderr)
	is.Equal(code, ExitRefused)
	is.Equal(bd.ran(t), nil)
	is.True(strings.Contains(stderr.String(), RuleUnknownMode))
}

func TestGuardEnvFromEnv(t *testing.T) {
	is := is.New(t)
	vars := map[string]string{EnvMode: "build", EnvRealBD: "/usr/local/bin/bd"}
	env, err := GuardEnvFromEnv(func(k string) string { return vars[k] })
	is.NoErr(err)
	is.Equal(env.Mode, ModeBuild)
	is.Equal(env.RealBD, "/usr/local/bin/bd")

	vars[EnvMode] = "nope"
	_, err = GuardEnvFromEnv(func(k string) string { return vars[k] })
	is.True(err != nil)

	vars[EnvMode] = "plan"
	delete(vars, EnvRealBD)
	_, err = GuardEnvFromEnv(func(k string) string { return vars[k] })
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), EnvRealBD))
}

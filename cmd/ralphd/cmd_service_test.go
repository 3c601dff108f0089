package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/text"
)

// repoUnit is the repository's copy of the unit, relative to this package.
var repoUnit = filepath.Join("..", "..", "scripts", unitName)

// TestRepoUnitInSync keeps scripts/ralphd@.service equal to what the code
// renders for the placeholder binary path. Regenerate it with
// RALPHD_UPDATE_UNIT=1 go test ./cmd/ralphd -run TestRepoUnitInSync.
func TestRepoUnitInSync(t *testing.T) {
	is := is.New(t)
	want := renderUnit(repoExec, repoPATH)
	if os.Getenv("RALPHD_UPDATE_UNIT") == "1" {
		is.NoErr(os.WriteFile(repoUnit, []byte(want), 0o644))
	}
	got, err := os.ReadFile(repoUnit)
	is.NoErr(err)
	if string(got) != want {
		t.Fatalf("%s differs from the unit cmd_service.go renders; regenerate it with RALPHD_UPDATE_UNIT=1 go test ./cmd/ralphd -run TestRepoUnitInSync", repoUnit)
	}
}

func TestRenderUnit(t *testing.T) {
	is := is.New(t)
	unit := renderUnit("/opt/x/ralphd", "/a:/b")
	is.True(!strings.Contains(unit, "{{"))
	lines := map[string]bool{}
	for l := range strings.SplitSeq(unit, "\n") {
		lines[l] = true
	}
	for _, want := range []string{
		"[Service]",
		"Type=notify",
		"NotifyAccess=main",
		"WorkingDirectory=%f",
		"ExecStart=/opt/x/ralphd daemon",
		`Environment="PATH=/a:/b"`,
		"Environment=RALPH_LOG=1",
		"Restart=on-failure",
		// The deliberate-stop exit codes, from exit.go.
		"RestartPreventExitStatus=" + strconv.Itoa(exitUsage) + " " + strconv.Itoa(exitLocked) + " " + strconv.Itoa(exitAgent),
		"KillMode=mixed",
		"Delegate=yes",
		"TimeoutStopSec=60s",
		"WatchdogSec=120s",
		"WantedBy=default.target",
	} {
		is.True(lines[want]) // a line of the unit
	}
}

func TestEscapePath(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"/", "-"},
		{"//", "-"},
		{"/.", "-"},
		{"/home/u/src/app", "home-u-src-app"},
		{"/home/u/src/app/", "home-u-src-app"},
		{"//home//u/", "home-u"},
		{"/home/u/.dot", "home-u-.dot"},
		{"/.dot", `\x2edot`},
		{"/a b/c", `a\x20b-c`},
		{"/a-b/c_d", `a\x2db-c_d`},
		{`/a\b`, `a\x5cb`},
		{"/ü/x", `\xc3\xbc-x`},
		{"/a:b@c", `a:b\x40c`},
		{"/a/./b", "a-b"},
		{"/a%b", `a\x25b`},
		{"/a$b", `a\x24b`},
		{"/a'b", `a\x27b`},
		{"/a/b.", "a-b."},
		{"/a\nb", `a\x0ab`},
		{"/a\xffb", `a\xffb`},
		{"/A.Z/0:9", "A.Z-0:9"},
	}
	escaper, _ := exec.LookPath("systemd-escape")
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got, err := escapePath(tt.in)
			is.NoErr(err)
			is.Equal(got, tt.want)
			if escaper == "" {
				return
			}
			out, err := exec.Command(escaper, "--path", "--", tt.in).Output()
			is.NoErr(err)
			is.Equal(got, strings.TrimSuffix(string(out), "\n")) // as systemd-escape --path
		})
	}
	for _, bad := range []string{"", "rel/x", ".", "./x", "/a/../b", "/.."} {
		t.Run("refuses "+bad, func(t *testing.T) {
			is := is.New(t)
			_, err := escapePath(bad)
			is.True(err != nil)
		})
	}
}

func FuzzEscapePath(f *testing.F) {
	for _, s := range []string{"/", "/home/u/src/app", "/.dot", "/a b/ü", "/a/../b", "rel"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		esc, err := escapePath(p)
		if err != nil {
			return
		}
		if esc == "" || strings.ContainsAny(esc, "/ ") || strings.HasPrefix(esc, ".") {
			t.Fatalf("escapePath(%q) = %q", p, esc)
		}
		for i := 0; i < len(esc); i++ {
			if esc[i] >= 0x80 || esc[i] < 0x20 {
				t.Fatalf("escapePath(%q) = %q: not plain ASCII", p, esc)
			}
		}
	})
}

func TestInstanceNameLength(t *testing.T) {
	is := is.New(t)
	_, err := instanceName(strings.Repeat("a", maxUnitNameLen-len("ralphd@.service")))
	is.NoErr(err)
	_, err = instanceName(strings.Repeat("a", maxUnitNameLen-len("ralphd@.service")+1))
	is.True(err != nil)
}

func TestUnitExecPath(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"/home/u/go/bin/ralphd", "/home/u/go/bin/ralphd", true},
		{"/opt/my tools/ralphd", `"/opt/my tools/ralphd"`, true},
		{"/opt/100%/ralphd", "/opt/100%%/ralphd", true},
		{"/opt/$HOME/ralphd", "/opt/$HOME/ralphd", true},
		{"/opt/a;b/ralphd", `"/opt/a;b/ralphd"`, true},
		{"/opt/ü/ralphd", "/opt/ü/ralphd", true},
		{"relative/ralphd", "", false},
		{`/opt/a\b/ralphd`, "", false},
		{`/opt/a"b/ralphd`, "", false},
		{"/opt/a'b/ralphd", "", false},
		{"/opt/a\nb/ralphd", "", false},
		{"/opt/a\xffb/ralphd", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got, err := unitExecPath(tt.in)
			is.Equal(err == nil, tt.ok)
			is.Equal(got, tt.want)
		})
	}
}

func TestServicePATH(t *testing.T) {
	tests := []struct {
		name, in, want string
		dropped        []string
	}{
		{"plain", "/home/u/.local/bin:/usr/bin:/bin", "/home/u/.local/bin:/usr/bin:/bin", nil},
		{"duplicates and empties", "/usr/bin::/bin:/usr/bin:", "/usr/bin:/bin", nil},
		{"relative dropped", ".:bin:/usr/bin", "/usr/bin", []string{".", "bin"}},
		{"escaped for the unit", `/a b:/c%d:/e"f:/g\h`, `/a b:/c%%d:/e\"f:/g\\h`, nil},
		{"control chars dropped", "/a\tb:/usr/bin", "/usr/bin", []string{"/a\tb"}},
		{"empty falls back", "", fallbackPATH, nil},
		{"nothing usable falls back", "bin", fallbackPATH, []string{"bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, _, dropped := servicePATH(tt.in)
			is.Equal(got, tt.want)
			is.Equal(dropped, tt.dropped)
		})
	}
}

func TestShellQuote(t *testing.T) {
	is := is.New(t)
	is.Equal(text.ShellQuote("ralphd@home-u-app.service"), "ralphd@home-u-app.service")
	is.Equal(text.ShellQuote(`ralphd@a\x20b.service`), `'ralphd@a\x20b.service'`)
	is.Equal(text.ShellQuote("it's"), `'it'\''s'`)
	is.Equal(text.ShellQuote(""), "''")
}

// serviceEnv is a test's world for `ralphd service`: a config home, a
// ralphd binary and a project.
type serviceEnv struct {
	config  string // XDG_CONFIG_HOME
	bin     string // the "ralphd binary"
	project string // a git checkout with .beads/
	path    string // PATH as the app sees it
}

func newServiceEnv(t *testing.T, binDir string) *serviceEnv {
	t.Helper()
	root := t.TempDir()
	e := &serviceEnv{config: filepath.Join(root, "config"), project: filepath.Join(root, "src", "app")}
	if binDir == "" {
		binDir = filepath.Join(root, "bin")
	}
	is := is.New(t)
	is.NoErr(os.MkdirAll(binDir, 0o755))
	e.bin = filepath.Join(binDir, "ralphd")
	is.NoErr(os.WriteFile(e.bin, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	is.NoErr(os.MkdirAll(filepath.Join(e.project, ".beads"), 0o755))
	out, err := exec.Command("git", "init", "-q", e.project).CombinedOutput()
	if err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	// The project path as git reports it (no symlinks).
	e.project, err = filepath.EvalSymlinks(e.project)
	is.NoErr(err)
	e.path = binDir + ":/usr/bin:/bin"
	return e
}

func (e *serviceEnv) app() (*app, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	env := map[string]string{"XDG_CONFIG_HOME": e.config, "PATH": e.path}
	return &app{
		stdin:  strings.NewReader(""),
		stdout: &stdout,
		stderr: &stderr,
		getenv: func(k string) string { return env[k] },
		argv0:  e.bin,
	}, &stdout, &stderr
}

func (e *serviceEnv) unitFile() string {
	return filepath.Join(e.config, "systemd", "user", unitName)
}

func TestServiceInstall(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, "")
	a, stdout, stderr := e.app()
	code := cmdService(context.Background(), a, []string{"install", "--project", e.project})
	is.Equal(code, exitOK) // stderr: see below
	if t.Failed() {
		t.Log(stderr.String())
	}

	got, err := os.ReadFile(e.unitFile())
	is.NoErr(err)
	is.Equal(string(got), renderUnit(e.bin, e.path))
	fi, err := os.Stat(e.unitFile())
	is.NoErr(err)
	is.Equal(fi.Mode().Perm(), os.FileMode(0o644))
	entries, err := os.ReadDir(filepath.Dir(e.unitFile()))
	is.NoErr(err)
	is.Equal(len(entries), 1) // no temp file left behind

	esc, err := escapePath(e.project)
	is.NoErr(err)
	instance := "ralphd@" + esc + ".service"
	out := stdout.String()
	is.True(strings.HasPrefix(out, "wrote "+e.unitFile()+" (ExecStart="+e.bin+" daemon)\n"))
	is.True(strings.Contains(out, "\n  systemctl --user daemon-reload\n  systemctl --user enable --now "+text.ShellQuote(instance)+"\n"))
	is.True(strings.Contains(out, "\n  journalctl --user -u "+text.ShellQuote(instance)+" -f\n"))

	// Again: the same unit, reported as unchanged.
	a, stdout, _ = e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install", "--project", e.project}), exitOK)
	is.True(strings.HasPrefix(stdout.String(), "unchanged: "+e.unitFile()))

	// A different binary: updated in place.
	e.bin = filepath.Join(filepath.Dir(e.bin), "ralphd2")
	is.NoErr(os.WriteFile(e.bin, []byte("#!/bin/sh\n"), 0o755))
	a, stdout, _ = e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install", "--project", e.project}), exitOK)
	is.True(strings.HasPrefix(stdout.String(), "updated "+e.unitFile()))
	got, err = os.ReadFile(e.unitFile())
	is.NoErr(err)
	is.True(strings.Contains(string(got), "\nExecStart="+e.bin+" daemon\n"))
}

func TestServiceInstallSubdirUsesTopLevel(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, "")
	sub := filepath.Join(e.project, "pkg", "x")
	is.NoErr(os.MkdirAll(sub, 0o755))
	a, stdout, _ := e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install", "--project", sub}), exitOK)
	esc, err := escapePath(e.project)
	is.NoErr(err)
	is.True(strings.Contains(stdout.String(), "enable --now "+text.ShellQuote("ralphd@"+esc+".service")+"\n"))
}

func TestServiceInstallNotAProject(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, "")
	a, _, stderr := e.app()
	code := cmdService(context.Background(), a, []string{"install", "--project", t.TempDir()})
	is.Equal(code, exitUsage)
	is.True(strings.Contains(stderr.String(), "not inside a git repository"))
	_, err := os.Stat(e.unitFile())
	is.True(os.IsNotExist(err)) // nothing installed
}

func TestServiceInstallBadBinary(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, "")
	is.NoErr(os.Chmod(e.bin, 0o644))
	a, _, stderr := e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install", "--project", e.project}), exitError)
	is.True(strings.Contains(stderr.String(), "not an executable file"))
	_, err := os.Stat(e.unitFile())
	is.True(os.IsNotExist(err))
}

func TestServicePrint(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, filepath.Join(t.TempDir(), "100% sure"))
	a, stdout, _ := e.app()
	is.Equal(cmdService(context.Background(), a, []string{"print"}), exitOK)
	want := renderUnit(`"`+strings.ReplaceAll(e.bin, "%", "%%")+`"`, strings.ReplaceAll(e.path, "%", "%%"))
	is.Equal(stdout.String(), want)
	_, err := os.Stat(e.unitFile())
	is.True(os.IsNotExist(err)) // print writes nothing
}

func TestServiceUninstall(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, "")
	a, _, _ := e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install", "--project", e.project}), exitOK)

	// An enabled instance, as `systemctl --user enable` leaves it.
	esc, err := escapePath(e.project)
	is.NoErr(err)
	instance := "ralphd@" + esc + ".service"
	wants := filepath.Join(filepath.Dir(e.unitFile()), "default.target.wants")
	is.NoErr(os.MkdirAll(wants, 0o755))
	link := filepath.Join(wants, instance)
	is.NoErr(os.Symlink(e.unitFile(), link))

	a, stdout, stderr := e.app()
	is.Equal(cmdService(context.Background(), a, []string{"uninstall"}), exitError)
	is.True(strings.Contains(stdout.String(), "  systemctl --user disable --now "+text.ShellQuote(instance)+"\n"))
	is.True(strings.Contains(stderr.String(), "still enabled for 1 project"))
	_, err = os.Stat(e.unitFile())
	is.NoErr(err) // kept

	is.NoErr(os.Remove(link))
	a, stdout, _ = e.app()
	is.Equal(cmdService(context.Background(), a, []string{"uninstall"}), exitOK)
	is.True(strings.Contains(stdout.String(), "  systemctl --user daemon-reload\n"))
	_, err = os.Stat(e.unitFile())
	is.True(os.IsNotExist(err)) // removed

	a, stdout, _ = e.app()
	is.Equal(cmdService(context.Background(), a, []string{"uninstall"}), exitOK)
	is.True(strings.Contains(stdout.String(), "is not installed"))
}

func TestServiceUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
	}{
		{nil, exitUsage},
		{[]string{"bogus"}, exitUsage},
		{[]string{"--bogus"}, exitUsage},
		{[]string{"--help"}, exitOK},
		{[]string{"install", "extra"}, exitUsage},
		{[]string{"print", "--project", "x"}, exitUsage},
		{[]string{"uninstall", "--help"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			e := newServiceEnv(t, "")
			a, _, _ := e.app()
			is.Equal(cmdService(context.Background(), a, tt.args), tt.code)
			_, err := os.Stat(e.unitFile())
			is.True(os.IsNotExist(err))
		})
	}
}

// TestInstalledUnitVerifies runs systemd-analyze verify on units installed
// for awkward binary paths, when systemd-analyze is on the machine.
func TestInstalledUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	for _, dir := range []string{"plain", "with space", "100%", "a$b;c", "ü"} {
		t.Run(dir, func(t *testing.T) {
			is := is.New(t)
			e := newServiceEnv(t, filepath.Join(t.TempDir(), dir))
			a, _, stderr := e.app()
			is.Equal(cmdService(context.Background(), a, []string{"install", "--project", e.project}), exitOK)
			if t.Failed() {
				t.Log(stderr.String())
			}
			esc, err := escapePath(e.project)
			is.NoErr(err)
			cmd := exec.Command(analyze, "verify", "--man=no", "ralphd@"+esc+".service")
			cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+filepath.Dir(e.unitFile())+":")
			out, err := cmd.CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
			}
		})
	}
}

func TestServiceInstallWarnsWithoutBd(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, "")
	a, _, stderr := e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install", "--project", e.project}), exitOK)
	is.True(strings.Contains(stderr.String(), "bd is not on PATH"))

	// With a bd in a PATH directory the unit keeps, no warning.
	is.NoErr(os.WriteFile(filepath.Join(filepath.Dir(e.bin), "bd"), []byte("#!/bin/sh\n"), 0o755))
	a, _, stderr = e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install", "--project", e.project}), exitOK)
	is.True(!strings.Contains(stderr.String(), "bd is not on PATH"))
}

func TestServiceInstallOutsideAProject(t *testing.T) {
	is := is.New(t)
	e := newServiceEnv(t, "")
	t.Chdir(t.TempDir())
	a, stdout, _ := e.app()
	is.Equal(cmdService(context.Background(), a, []string{"install"}), exitOK)
	_, err := os.Stat(e.unitFile())
	is.NoErr(err) // the unit does not depend on the project
	is.True(strings.Contains(stdout.String(), `systemctl --user enable --now "ralphd@$(systemd-escape --path /path/to/project).service"`))
}

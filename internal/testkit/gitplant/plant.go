// Package gitplant plants, in a test repository, every kind of code
// git can be made to run (fsmonitor, hooks, filters, external diff,
// textconv), each leaving a marker file when it runs, so that tests can
// prove ralphd's git calls run none of it.
package gitplant

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Route is one way to make git run the repository's code.
type Route struct {
	Name string
	// Plant installs the route in the repository at dir; a payload that
	// runs creates a file in markers.
	Plant func(t *testing.T, dir, markers string)
	// Trigger is a git command line that runs the payload when nothing
	// stops it, after the work tree was changed by Touch.
	Trigger []string
}

// Hooks are the hook names planted by the hooks route: those that run on
// the commands ralphd uses (reference-transaction runs on any ref update,
// post-index-change on an index write) and more.
var Hooks = []string{"reference-transaction", "post-index-change", "post-checkout", "pre-push", "pre-commit",
	"commit-msg", "post-commit", "pre-auto-gc", "post-rewrite", "pre-rebase", "post-merge", "push-to-checkout"}

// Routes returns every route.
func Routes() []Route {
	return []Route{
		{Name: "merge-driver", Trigger: []string{"merge", "-q", "--no-edit", "planted-side"}, Plant: func(t *testing.T, dir, m string) {
			// shared.txt changed on two branches, for a merge to run the
			// driver on. (First in Routes: it runs plain git to set up.)
			write := func(body string) {
				if err := os.WriteFile(filepath.Join(dir, "shared.txt"), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("base\n")
			Git(t, dir, "add", "shared.txt")
			Git(t, dir, "commit", "-qm", "shared")
			Git(t, dir, "checkout", "-q", "-b", "planted-side")
			write("side\n")
			Git(t, dir, "commit", "-qam", "side")
			Git(t, dir, "checkout", "-q", "-")
			write("main\n")
			Git(t, dir, "commit", "-qam", "main")
			attr(t, dir, "* merge=evil")
			gitConfig(t, dir, "merge.evil.driver", payload(t, dir, m, "merge-driver")+" %O %A %B")
		}},
		{Name: "fsmonitor", Trigger: []string{"status", "--porcelain"}, Plant: func(t *testing.T, dir, m string) {
			gitConfig(t, dir, "core.fsmonitor", payload(t, dir, m, "fsmonitor"))
		}},
		{Name: "hooks", Trigger: []string{"push", "-q", "origin", "HEAD:refs/heads/planted-hook-probe"}, Plant: func(t *testing.T, dir, m string) {
			for _, h := range Hooks {
				p := filepath.Join(dir, ".git", "hooks", h)
				writeScript(t, p, m, "hook-"+h)
			}
		}},
		{Name: "hooksPath", Trigger: []string{"branch", "planted-hookspath-probe"}, Plant: func(t *testing.T, dir, m string) {
			hd := filepath.Join(dir, ".git", "planted-hooks")
			for _, h := range Hooks {
				writeScript(t, filepath.Join(hd, h), m, "hookspath-"+h)
			}
			gitConfig(t, dir, "core.hooksPath", hd)
		}},
		{Name: "filter", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			attr(t, dir, "* filter=evil")
			gitConfig(t, dir, "filter.evil.clean", payload(t, dir, m, "filter-clean"))
			gitConfig(t, dir, "filter.evil.smudge", payload(t, dir, m, "filter-smudge"))
		}},
		{Name: "filter-process", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			attr(t, dir, "* filter=proc")
			gitConfig(t, dir, "filter.proc.process", payload(t, dir, m, "filter-process"))
		}},
		{Name: "filter-odd-name", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			attr(t, dir, "* filter=a=b.c")
			gitConfig(t, dir, "filter.a=b.c.clean", payload(t, dir, m, "filter-odd"))
		}},
		{Name: "filter-in-included-file", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			inc := filepath.Join(dir, ".git", "planted-include")
			body := "[filter \"inc\"]\n\tclean = " + payload(t, dir, m, "filter-include") + "\n"
			if err := os.WriteFile(inc, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			gitConfig(t, dir, "include.path", inc)
			attr(t, dir, "* filter=inc")
		}},
		{Name: "filter-in-info-attributes", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			p := filepath.Join(dir, ".git", "info", "attributes")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("* filter=info\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gitConfig(t, dir, "filter.info.clean", payload(t, dir, m, "filter-info"))
		}},
		{Name: "external-diff", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			gitConfig(t, dir, "diff.external", payload(t, dir, m, "diff-external"))
		}},
		{Name: "diff-driver-command", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			attr(t, dir, "* diff=drv")
			gitConfig(t, dir, "diff.drv.command", payload(t, dir, m, "diff-command"))
		}},
		{Name: "textconv", Trigger: []string{"diff", "HEAD"}, Plant: func(t *testing.T, dir, m string) {
			attr(t, dir, "* diff=tc")
			gitConfig(t, dir, "diff.tc.textconv", payload(t, dir, m, "textconv"))
		}},
	}
}

// Repo makes a git repository with one commit of a tracked file,
// README.md, and a bare remote called origin, and returns its path.
func Repo(t *testing.T) string {
	t.Helper()
	dir, remote := t.TempDir(), t.TempDir()
	Git(t, remote, "init", "-q", "--bare")
	Git(t, dir, "init", "-q")
	Git(t, dir, "remote", "add", "origin", remote)
	Git(t, dir, "config", "user.name", "T")
	Git(t, dir, "config", "user.email", "t@example.com")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "README.md")
	Git(t, dir, "commit", "-qm", "init")
	return dir
}

// Touch changes the tracked file and adds an untracked one, so that
// status, diff and add have content to convert.
func Touch(t *testing.T, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello, changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Ran returns the names of the payloads that ran.
func Ran(t *testing.T, markers string) []string {
	t.Helper()
	ents, err := os.ReadDir(markers)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Git runs the plain git (the one the payloads are meant for) in dir.
func Git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TryGit is Git for a command that may fail (a payload that breaks it).
func TryGit(dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	_ = cmd.Run()
}

func gitConfig(t *testing.T, dir, key, value string) {
	t.Helper()
	Git(t, dir, "config", "--add", key, value)
}

// attr appends an attribute line to the work tree's .gitattributes.
func attr(t *testing.T, dir, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".gitattributes"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// payload writes a script that creates markers/name and passes its
// stdin through (so that filters and textconv still produce output), and
// returns its path.
func payload(t *testing.T, dir, markers, name string) string {
	t.Helper()
	p := filepath.Join(dir, ".git", "payload-"+name)
	writeScript(t, p, markers, name)
	return p
}

func writeScript(t *testing.T, path, markers, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ntouch '" + filepath.Join(markers, name) + "'\nif [ $# -ge 1 ] && [ -f \"$1\" ]; then cat \"$1\"; else cat; fi\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

package standin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// fixtureArgs returns the bd argument vectors of every recorded command,
// as fuzz seeds.
func fixtureArgs(f *testing.F) [][]string {
	f.Helper()
	var out [][]string
	files, err := filepath.Glob("testdata/contract/*.txt")
	if err != nil {
		f.Fatalf("glob: %v", err)
	}
	help, err := filepath.Glob("testdata/contract/help/*.txt")
	if err != nil {
		f.Fatalf("glob: %v", err)
	}
	for _, p := range append(files, help...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatalf("read %s: %v", p, err)
		}
		fx, err := parseFixture(string(b))
		if err != nil {
			continue
		}
		file, err := syntax.NewParser().Parse(strings.NewReader(fx.Command), "")
		if err != nil {
			continue
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			if call, ok := n.(*syntax.CallExpr); ok {
				if args, err := expand.Fields(&expand.Config{}, call.Args...); err == nil && len(args) > 0 && args[0] == "bd" {
					out = append(out, args[1:])
				}
			}
			return true
		})
	}
	return out
}

// FuzzParseArgs feeds arbitrary argument vectors (NUL-separated) through
// command lookup, flag parsing and usage rendering.
func FuzzParseArgs(f *testing.F) {
	for _, args := range fixtureArgs(f) {
		f.Add(strings.Join(args, "\x00"))
	}
	f.Add("-n\x00-n\x00--=\x00-\x00--\x00-qvC")
	root := buildTree()
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		cmd, rest, unknown := lookup(root, args)
		if unknown != "" {
			_ = suggestions(root, unknown)
			return
		}
		fs := newFlagSet(cmd.local, root.local)
		vals, _, err := parseFlags(fs, rest)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("empty flag error for %q", args)
			}
			_ = cmd.usage()
			return
		}
		for name, f := range fs.byName {
			_ = vals.str(name)
			switch f.typ {
			case "int":
				_ = vals.integer(name)
			case "bool":
				_ = vals.boolean(name)
			default:
				_ = vals.list(name)
			}
		}
	})
}

// unsafeArg reports arguments the end-to-end fuzzer drops because they
// could make the stand-in touch files outside its sandbox.
func unsafeArg(a string) bool {
	for _, p := range []string{"--directory", "--db", "--output", "--from-file", "--file", "--body-file", "--design-file", "--reason-file", "--metadata"} {
		if strings.HasPrefix(a, p) {
			return true
		}
	}
	return strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "Cof")
}

// FuzzMain runs whole command lines against a sandbox workspace: the
// stand-in must never panic and always exit 0 or 1.
func FuzzMain(f *testing.F) {
	for _, args := range fixtureArgs(f) {
		f.Add(strings.Join(args, "\x00"))
	}
	dir := f.TempDir()
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "USER=fuzz", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(dir, "gitconfig")}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"init", "--prefix", "rt", "--quiet"}, nil, &out, &errb, env, dir); code != 0 {
		f.Fatalf("init: %s", errb.String())
	}
	f.Fuzz(func(t *testing.T, joined string) {
		var args []string
		for _, a := range strings.Split(joined, "\x00") {
			if !unsafeArg(a) {
				args = append(args, a)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out, errb bytes.Buffer
		code := Main(ctx, args, strings.NewReader("stdin text"), &out, &errb, env, dir)
		if code != 0 && code != 1 {
			t.Fatalf("exit %d for %q", code, args)
		}
	})
}

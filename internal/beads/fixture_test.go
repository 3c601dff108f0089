package beads_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// fixture is one recorded bd run from testdata/, in the format of
// ../shared/beads-contract (see its README): sections headed by
// "=== NAME ===" lines.
type fixture struct {
	Name     string // file name without .txt
	Command  string
	ExitCode int
	Stdout   []byte
	Stderr   []byte
}

// sectionHeader matches a fixture section header line.
var sectionHeader = regexp.MustCompile(`^=== ([A-Z][A-Z ]*) ===$`)

// parseFixture splits a fixture file into its sections. A section's text
// is its lines joined by newlines, with a final newline when it has any
// line, which restores bd's output as printed.
func parseFixture(name string, raw []byte) (fixture, bool) {
	sections := map[string][]string{}
	var cur string
	for _, line := range strings.Split(string(raw), "\n") {
		if m := sectionHeader.FindStringSubmatch(line); m != nil {
			cur = m[1]
			sections[cur] = []string{}
			continue
		}
		if cur != "" {
			sections[cur] = append(sections[cur], line)
		}
	}
	text := func(key string) string {
		lines := sections[key]
		if len(lines) == 0 {
			return ""
		}
		return strings.Join(lines, "\n") + "\n"
	}
	if _, ok := sections["STDOUT"]; !ok {
		return fixture{}, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(text("EXIT CODE")))
	if err != nil {
		return fixture{}, false
	}
	return fixture{
		Name:     name,
		Command:  strings.TrimSpace(text("COMMAND")),
		ExitCode: code,
		Stdout:   []byte(text("STDOUT")),
		Stderr:   []byte(text("STDERR")),
	}, true
}

// loadFixture reads testdata/<name>.txt.
func loadFixture(tb testing.TB, name string) fixture {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	if err != nil {
		tb.Fatalf("read fixture: %v", err)
	}
	fx, ok := parseFixture(name, raw)
	if !ok {
		tb.Fatalf("fixture %s: no STDOUT or EXIT CODE section", name)
	}
	return fx
}

// loadFixtures reads every fixture in testdata/, sorted by name.
func loadFixtures(tb testing.TB) []fixture {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		tb.Fatalf("glob fixtures: %v", err)
	}
	sort.Strings(paths)
	var out []fixture
	for _, p := range paths {
		out = append(out, loadFixture(tb, strings.TrimSuffix(filepath.Base(p), ".txt")))
	}
	if len(out) == 0 {
		tb.Fatal("no fixtures in testdata")
	}
	return out
}

func TestParseFixture(t *testing.T) {
	is := is.New(t)
	raw := "=== CASE ===\nready-empty\n=== CWD ===\n<REPO>\n=== COMMAND ===\nbd ready --json\n" +
		"=== EXIT CODE ===\n0\n=== ELAPSED SECONDS ===\n0.1\n=== STDOUT ===\n[]\n\n=== STDERR ===\n=== END ===\n"
	fx, ok := parseFixture("ready-empty", []byte(raw))
	is.True(ok)
	is.Equal(string(fx.Stdout), "[]\n\n")
	is.Equal(len(fx.Stderr), 0)
	is.Equal(fx.ExitCode, 0)
	is.Equal(fx.Command, "bd ready --json")

	_, ok = parseFixture("x", []byte("no sections"))
	is.True(!ok) // a file without sections is not a fixture
}

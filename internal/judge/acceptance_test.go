package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestParseAcceptanceChecklist(t *testing.T) {
	is := is.New(t)
	b, err := os.ReadFile(filepath.Join("testdata", "acceptance", "checklist.md"))
	is.NoErr(err)
	got := ParseAcceptance(string(b))
	want := []Check{
		{Criterion: "Unit tests pass", Command: "npm test src/auth.test.ts", ExpectExit: 0, Line: 1},
		{Criterion: "No lint errors", Command: "npm run lint -- src/auth/", ExpectExit: 0, Line: 2},
		// Line 3 expects output, not an exit status: skipped.
		{Criterion: "File exists", Command: "test -f src/auth/index.ts", ExpectExit: 0, Line: 4},
		{Criterion: "Export present", Command: `grep -q "export.*AuthService" src/index.ts`, ExpectExit: 0, Line: 5},
		{Criterion: "No TODOs remain", Command: `grep -r "TODO" src/feature/`, ExpectExit: 1, Line: 6},
		{Criterion: "Line count under 500", Command: `wc -l < src/utils.ts | awk '$1 < 500'`, ExpectExit: 0, Line: 7},
		// Line 8 is MANUAL: skipped.
		{Criterion: "Go tests pass", Command: "go test ./pkg/auth/...", ExpectExit: 0, Line: 9},
	}
	is.Equal(got, want)
}

func TestParseAcceptanceTable(t *testing.T) {
	is := is.New(t)
	b, err := os.ReadFile(filepath.Join("testdata", "acceptance", "table.md"))
	is.NoErr(err)
	got := ParseAcceptance(string(b))
	want := []Check{
		{Criterion: "Builds", Command: "go build ./...", ExpectExit: 0, Line: 5},
		{Criterion: "Parser rejects bad input", Command: "go test ./internal/parse -run TestBad", ExpectExit: 0, Line: 6},
		{Criterion: "Missing file is an error", Command: "./bin/tool --config missing.toml", ExpectExit: 2, Line: 7},
		{Criterion: "Pipes stay inside code", Command: "ls | wc -l", ExpectExit: 0, Line: 8},
	}
	is.Equal(got, want)
}

func TestParseAcceptanceRows(t *testing.T) {
	tests := []struct {
		name     string
		criteria string
		want     []Check // Line is not compared
	}{
		{"empty", "", nil},
		{"prose", "The parser should be fast and handle errors.", nil},
		{"prose with one pipe is not run", "Works with stdin | stdout", nil},
		{"two cells with backticks default to exit 0", "Tests pass | `go test ./...`", []Check{{Criterion: "Tests pass", Command: "go test ./..."}}},
		{"no outer pipes, bare exit", "Vet clean | `go vet ./...` | 0", []Check{{Criterion: "Vet clean", Command: "go vet ./..."}}},
		{"outer pipes, empty expected", "| Lints | `golangci-lint run` | |", []Check{{Criterion: "Lints", Command: "golangci-lint run"}}},
		{"exit spelled out", "| Fails on bad input | `./tool bad` | exits with code 3 |", []Check{{Criterion: "Fails on bad input", Command: "./tool bad", ExpectExit: 3}}},
		{"bold expected", "| x | `true` | **0** |", []Check{{Criterion: "x", Command: "true"}}},
		{"double backticks keep a backtick", "| Quotes | ``echo `date` `` | 0 |", []Check{{Criterion: "Quotes", Command: "echo `date`"}}},
		{"escaped pipe outside code", `| Counts | wc -l a \| sort | 0 |`, []Check{{Criterion: "Counts", Command: "wc -l a | sort"}}},
		{"numbered list item", "1. Builds | `make build` | exit 0", []Check{{Criterion: "Builds", Command: "make build"}}},
		{"header and separator only", "| Criterion | Command | Expected exit |\n|---|---|---|", nil},
		{"header with a runnable-looking row is dropped", "| Build | `make` | 0 |\n| --- | --- | --- |\n| Test | `make test` | 0 |", []Check{{Criterion: "Test", Command: "make test"}}},
		{"exit out of range", "| x | `true` | 256 |", nil},
		{"negative exit", "| x | `true` | -1 |", nil},
		{"expected output is not an exit status", "| x | `curl -s localhost` | contains \"ok\" |", nil},
		{"text around backticks", "| x | run `go test` please | 0 |", nil},
		{"two code spans", "| x | `a` and `b` | 0 |", nil},
		{"four cells", "| a | `b` | 0 | note |", nil},
		{"manual", "| Docs read well | MANUAL | 0 |", nil},
		{"empty criterion", "| | `true` | 0 |", nil},
		{"empty command", "| x | `` | 0 |", nil},
		{"bad-practice table from the method's docs", "| Bad | Good |\n|-----|------|\n| \"Code is clean\" | \"No lint errors from `npm run lint`\" |", nil},
		{"crlf", "Builds | `go build` | 0\r\nTests | `go test` | 1\r\n", []Check{{Criterion: "Builds", Command: "go build"}, {Criterion: "Tests", Command: "go test", ExpectExit: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := ParseAcceptance(tt.criteria)
			for i := range got {
				got[i].Line = 0
			}
			is.Equal(got, tt.want)
		})
	}
}

func FuzzParseAcceptance(f *testing.F) {
	for _, name := range []string{"checklist.md", "table.md"} {
		b, err := os.ReadFile(filepath.Join("testdata", "acceptance", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("| a | `b | c` | 0 |")
	f.Add("a | ``` | 0")
	f.Add("|")
	f.Add("- [ ] | | |")
	f.Fuzz(func(t *testing.T, criteria string) {
		lines := strings.Count(criteria, "\n") + 1
		prev := 0
		for _, c := range ParseAcceptance(criteria) {
			if c.Command == "" || c.Criterion == "" {
				t.Fatalf("empty field in %+v", c)
			}
			if strings.ContainsAny(c.Command, "\n\x00") || strings.ContainsRune(c.Criterion, '\n') {
				t.Fatalf("multi-line field in %+v", c)
			}
			if c.ExpectExit < 0 || c.ExpectExit > 255 {
				t.Fatalf("exit out of range in %+v", c)
			}
			if c.Line <= prev || c.Line > lines {
				t.Fatalf("line %d out of order or range (%d lines)", c.Line, lines)
			}
			prev = c.Line
		}
	})
}

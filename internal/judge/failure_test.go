package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "failures", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return string(b)
}

// TestFirstFailureLineFixtures runs FirstFailureLine over recorded output of
// real tools (go, python3, node, cargo) and hand-written Jest, Vitest,
// pytest and tsc output (see testdata/failures/README.md).
func TestFirstFailureLineFixtures(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"go-assert.txt", "calc_test.go:11: Add(2, 2) = 0, want 4"},
		{"go-assert-v.txt", "calc_test.go:11: Add(2, 2) = 0, want 4"},
		{"go-build.txt", "./calc_test.go:6:5: undefined: Mul"},
		{"go-vet.txt", "vet: ./calc_test.go:6:5: undefined: Mul"},
		{"go-panic.txt", "panic: runtime error: index out of range [5] with length 3 [recovered, repanicked]"},
		{"py-unittest.txt", "ZeroDivisionError: division by zero"},
		{"py-import.txt", "ModuleNotFoundError: No module named 'pkg.helpers'"},
		{"py-keyerror.txt", "KeyError: 'b'"},
		{"py-nameerror.txt", "NameError: name 'undefined_name' is not defined"},
		{"py-filenotfound.txt", "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/judgefx/missing-config.yaml'"},
		{"pytest-assert.txt", "E       assert 2.0 == 3.5"},
		{"pytest-collect.txt", "E   ModuleNotFoundError: No module named 'app.client'"},
		{"node-module.txt", "Error: Cannot find module 'lodash-missing'"},
		{"node-typeerror.txt", "TypeError: Cannot read properties of undefined (reading 'name')"},
		{"node-reference.txt", "ReferenceError: notDefined is not defined"},
		{"node-assert.txt", "AssertionError [ERR_ASSERTION]: Expected values to be strictly deep-equal:"},
		{"node-test.txt", "Expected values to be strictly equal:"},
		{"jest-assert.txt", "● Math › adds numbers: expect(received).toBe(expected) // Object.is equality"},
		{"jest-suite.txt", "● Test suite failed to run: Cannot find module './userService' from 'src/user.test.ts'"},
		{"vitest-assert.txt", "AssertionError: expected 0 to be 4 // Object.is equality"},
		{"tsc-error.txt", "src/user.ts(12,5): error TS2304: Cannot find name 'fetchUser'."},
		{"rust-test.txt", "thread 'tests::it_adds' (11814) panicked at src/lib.rs:7:20: assertion `left == right` failed"},
		{"rust-compile.txt", "error[E0432]: unresolved import `std::collections::HashMapp`"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			is.Equal(FirstFailureLine(readFixture(t, tt.file)), tt.want)
		})
	}
}

func TestFirstFailureLineInline(t *testing.T) {
	tests := []struct {
		name   string
		output string
		want   string
	}{
		{"empty", "", ""},
		{"only passing go", "=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\nok  \texample.com/a\t0.002s\n", ""},
		{"only timing noise", "Ran 3 tests in 0.002s\n\nOK\n", ""},
		{"go -v passing test logs before the failing test",
			"=== RUN   TestA\n    a_test.go:5: setting up\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: got 1, want 2\n--- FAIL: TestB (0.00s)\nFAIL\n",
			"b_test.go:9: got 1, want 2"},
		{"go fail without messages falls back to the FAIL header",
			"--- FAIL: TestC (0.01s)\nFAIL\nFAIL\texample.com/c\t0.010s\n", "--- FAIL: TestC (0.01s)"},
		{"go package summary only", "FAIL\texample.com/c [setup failed]\n", "FAIL\texample.com/c [setup failed]"},
		{"go runtime fatal error", "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n", "fatal error: all goroutines are asleep - deadlock!"},
		{"ansi colours are stripped", "\x1b[31m FAIL \x1b[39m src/a.test.js\n\x1b[1m\x1b[31m  ● a › b\x1b[39m\x1b[22m\n\n    TypeError: x is not a function\n",
			"● a › b: TypeError: x is not a function"},
		{"old rust panic format", "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: Os { code: 2 }', src/main.rs:4:37\n",
			"thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: Os { code: 2 }', src/main.rs:4:37"},
		{"rust test result only", "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
			"test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s"},
		{"generic error beats nothing", "building...\nerror: linker `cc` not found\n", "error: linker `cc` not found"},
		{"compiler warning is not a failure", "src/a.c:3:5: warning: unused variable 'x'\nsrc/a.c:9:1: error: expected ';'\n", "src/a.c:9:1: error: expected ';'"},
		{"make wrapper loses to the real error", "go test ./...\n./a.go:3:2: undefined: x\nmake: *** [Makefile:2: test] Error 1\n", "./a.go:3:2: undefined: x"},
		{"crlf line endings", "Traceback (most recent call last):\r\n  File \"a.py\", line 1, in <module>\r\nValueError: bad\r\n", "ValueError: bad"},
		{"chained python exceptions give the first", "Traceback (most recent call last):\n  File \"a.py\", line 2, in f\nKeyError: 'k'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 4, in <module>\nRuntimeError: wrapped\n", "KeyError: 'k'"},
		{"pytest short summary without tracebacks", "FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed in 0.01s\n", "FAILED tests/test_a.py::test_x - assert 1 == 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(FirstFailureLine(tt.output), tt.want)
		})
	}
}

func TestFirstFailureLineCapsLongLines(t *testing.T) {
	is := is.New(t)
	long := "Error: " + strings.Repeat("é", 400)
	got := FirstFailureLine(long)
	is.True(len(got) <= maxLineBytes)
	is.True(utf8.ValidString(got))
	is.True(strings.HasPrefix(got, "Error: éé"))
}

func TestErrorLine(t *testing.T) {
	tests := []struct {
		name, verify, agent, want string
	}{
		{"verify output wins", "--- FAIL: TestA (0.00s)\n    a_test.go:3: boom\n", "Error: max turns", "a_test.go:3: boom"},
		{"agent error when verify has none", "all good\n", "Error: rate limited until 5pm", "Error: rate limited until 5pm"},
		{"first non-blank agent line as a last resort", "", "\n  max turns reached (12)\nmore", "max turns reached (12)"},
		{"nothing", "", "  \n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(ErrorLine(tt.verify, tt.agent), tt.want)
		})
	}
}

func FuzzFirstFailureLine(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "failures", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("Traceback (most recent call last):\n")
	f.Add("--- FAIL: X\n=== RUN   X\n")
	f.Add("  ● \n")
	f.Add("  error: |-\n")
	f.Fuzz(func(t *testing.T, output string) {
		got := FirstFailureLine(output)
		if strings.ContainsAny(got, "\n\r\x1b") {
			t.Fatalf("result has a line break or escape: %q", got)
		}
		if len(got) > maxLineBytes || !utf8.ValidString(got) {
			t.Fatalf("result too long or invalid UTF-8: %q", got)
		}
		if got != strings.TrimSpace(got) {
			t.Fatalf("result not trimmed: %q", got)
		}
		if got == "" && strings.Contains(output, "panic: x") && !strings.Contains(output, "\x1b") {
			// A panic line at the start of a line is always found.
			for _, l := range strings.Split(output, "\n") {
				if strings.HasPrefix(strings.TrimSuffix(l, "\r"), "panic: x") {
					t.Fatalf("missed panic line in %q", output)
				}
			}
		}
	})
}

package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"uuid", "comment 01a1ff61-8fca-7783-a7b5-7c3d585965e6 not found", "comment <uuid> not found"},
		{"rfc3339", `created_at "2026-11-21T18:31:47.783826838Z" mismatch`, `created_at "<time>" mismatch`},
		{"rfc3339 offset", "at 2026-11-21T18:31:47+02:00: boom", "at <time>: boom"},
		{"go log", "2026/11/21 18:31:47 dial failed", "<time> dial failed"},
		{"common log", `127.0.0.1 - - [21/Nov/2026:18:31:47 +0000] "GET / HTTP/1.1" 500`, `127.0.0.1 - - [<time>] "GET / HTTP/1.1" 500`},
		{"rfc1123", "Date: Sat, 21 Nov 2026 18:31:47 GMT", "Date: <time>"},
		{"syslog", "Nov 21 18:31:47 host app[4242]: crashed", "<time> host app[<pid>]: crashed"},
		{"time of day", "[14:03:22.123] ERROR timeout", "[<time>] ERROR timeout"},
		{"durations", "--- FAIL: TestA (0.12s) took 123ms then 1m30.5s and 0.412 s", "--- FAIL: TestA (<dur>) took <dur> then <dur> and <dur>"},
		{"seconds words", "timed out after 30 seconds", "timed out after <dur>"},
		{"file line col", "./calc_test.go:6:5: undefined: Mul", "./calc_test.go:<n>:<n>: undefined: Mul"},
		{"file line", "calc_test.go:11: Add(2, 2) = 0, want 4", "calc_test.go:<n>: Add(2, 2) = 0, want 4"},
		{"tsc position", "src/user.ts(12,5): error TS2304: Cannot find name 'x'.", "src/user.ts(<n>,<n>): error TS2304: Cannot find name 'x'."},
		{"python line word", `File "app.py", line 12, in main`, `File "app.py", line <n>, in main`},
		{"node internal", "at node:internal/modules/cjs/loader:1145:15", "at node:internal/modules/cjs/loader:<n>:<n>"},
		{"temp file keeps its name", "open /tmp/TestLoad123/001/config.yaml: permission denied", "open <tmp>/config.yaml: permission denied"},
		{"temp dir", "rootdir: /tmp/pytest-of-dev/pytest-12/test_proj0", "rootdir: <tmp>"},
		{"random temp file straight under root", "read /tmp/tmpa8f3k2.json failed", "read <tmp> failed"},
		{"mac temp", "/private/var/folders/x1/abc_123/T/go-build999/b001/x.test: exit 1", "<tmp>/x.test: exit 1"},
		{"go work dir", "$WORK/b001/_testmain.go:12:2: bad", "<tmp>/_testmain.go:<n>:<n>: bad"},
		{"go-build name", "go-build2841739 failed", "go-build<n> failed"},
		{"not a temp path", "build/tmp/x.go and /tmpfoo stay", "build/tmp/x.go and /tmpfoo stay"},
		{"addresses", "testing.tRunner.func1.2({0x574440, 0x16216edbe0a8})", "testing.tRunner.func1.2({<addr>, <addr>})"},
		{"short hex stays", "unexpected byte 0x1f", "unexpected byte 0x1f"},
		{"git sha", "HEAD is now at 3fa2c1d fix", "HEAD is now at <hex> fix"},
		{"long sha", "commit 6a3f515ced18406c189c55fff789a4925bfaa35c broke it", "commit <hex> broke it"},
		{"goroutine", "goroutine 18 [running]:", "goroutine <n> [running]:"},
		{"rust thread id", "thread 'tests::it_adds' (11814) panicked at src/lib.rs:7:20:", "thread 'tests::it_adds' (<pid>) panicked at src/lib.rs:<n>:<n>:"},
		{"pid", "process 31337 exited; pid=42", "process <pid> exited; pid=<pid>"},
		{"ports", "dial tcp 127.0.0.1:54321: connect: connection refused; listen on localhost:8080 and [::1]:9090, port 5432", "dial tcp 127.0.0.1:<port>: connect: connection refused; listen on localhost:<port> and [::1]:<port>, port <port>"},
		{"bd ids with digits", "issue rt-2j9 blocks rt-wjd.1 and ralphd-a1b.3.2", "issue <issue> blocks rt-wjd.1 and <issue>"},
		{"ordinary hyphenated words stay", "non-nil re-run utf-8 sha-256 x86-64", "non-nil re-run utf-8 sha-256 x86-64"},
		{"long numbers", "seed 1700000000123 failed", "seed <n> failed"},
		{"small numbers stay", "got 3, want 4 (index [5] with length 3)", "got 3, want 4 (index [5] with length 3)"},
		{"whitespace and escapes", "  \x1b[31mE       assert\t2 == 3\x1b[0m \r", "E assert 2 == 3"},
		{"empty", "   ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got := Normalize(tt.in)
			is.Equal(got, tt.want)
			is.Equal(Normalize(got), got) // idempotent
		})
	}
}

func TestNormalizerPrefixes(t *testing.T) {
	is := is.New(t)
	n := NewNormalizer("rt", "", "my-proj-")
	is.Equal(n.Normalize("rt-wjd.1 and rt-999 and my-proj-abc blocked"), "<issue> and <issue> and <issue> blocked")
	// Without the prefix an all-letter hash is indistinguishable from a word.
	is.Equal(Normalize("rt-wjd.1 blocked"), "rt-wjd.1 blocked")
	is.Equal(NewNormalizer().Normalize("rt-2j9"), "<issue>")
	is.Equal(n.Fingerprint("close rt-wjd failed"), n.Fingerprint("close rt-hz0 failed"))
}

func TestFingerprintShape(t *testing.T) {
	is := is.New(t)
	fp := Fingerprint("Error: boom")
	is.Equal(len(fp), 12)
	is.Equal(strings.Trim(fp, "0123456789abcdef"), "")
	is.Equal(Fingerprint(""), "")
	is.Equal(Fingerprint(" \x1b[0m "), "")
}

// TestFingerprintSameError: lines that differ only in dynamic values share a
// fingerprint.
func TestFingerprintSameError(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"go compile error moved", "./calc.go:12:3: undefined: Mul", "./calc.go:40:9: undefined: Mul"},
		{"go test message moved", "calc_test.go:11: Add(2, 2) = 0, want 4", "calc_test.go:19: Add(2, 2) = 0, want 4"},
		{"go fail header timing", "--- FAIL: TestAdd (0.00s)", "--- FAIL: TestAdd (1.52s)"},
		{"go package timing", "FAIL\texample.com/calc\t0.003s", "FAIL\texample.com/calc\t0.012s"},
		{"go temp dir", "open /tmp/TestLoad3981/001/cfg.json: no such file or directory", "open /tmp/TestLoad77/002/cfg.json: no such file or directory"},
		{"go panic address", "panic: nil map write at 0xc000123456 [recovered]", "panic: nil map write at 0xc000ffee00 [recovered]"},
		{"python temp file", "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/judgefx/missing-config.yaml'", "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/tmp.jQAKYC9y0F/missing-config.yaml'"},
		{"python frame line", `File "/srv/app/main.py", line 10, in <module>`, `File "/srv/app/main.py", line 97, in <module>`},
		{"pytest summary timing", "FAILED tests/test_calc.py::test_divide - assert 2.0 == 3.5", "FAILED  tests/test_calc.py::test_divide -  assert 2.0 == 3.5"},
		{"node port", "Error: connect ECONNREFUSED 127.0.0.1:54012", "Error: connect ECONNREFUSED 127.0.0.1:39807"},
		{"node request id", "Error: request 9b2c4e1f-3a5d-4c8e-9f1a-2b3c4d5e6f70 failed with 500", "Error: request 0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a failed with 500"},
		{"jest timing", "✕ adds numbers (4 ms)", "✕ adds numbers (17 ms)"},
		{"rust thread id and location", "thread 'tests::it_adds' (11814) panicked at src/lib.rs:7:20: assertion `left == right` failed", "thread 'tests::it_adds' (11896) panicked at src/lib.rs:9:5: assertion `left == right` failed"},
		{"rust compile location", "error[E0425]: cannot find value `c` in this scope --> src/lib.rs:2:41", "error[E0425]: cannot find value `c` in this scope --> src/lib.rs:3:7"},
		{"log timestamp and pid", "2026-11-21T18:31:47Z app[4242]: Error: disk full", "2026-11-22T09:01:02Z app[77]: Error: disk full"},
		{"bd issue ids", "bd: issue rt-2j9 not found", "bd: issue rt-k7q not found"},
		{"git sha", "error: commit 3fa2c1d is not a descendant", "error: commit 9e8d7c6 is not a descendant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(Fingerprint(tt.a), Fingerprint(tt.b))
			is.True(Fingerprint(tt.a) != "")
		})
	}
}

// TestFingerprintDifferentErrors: different errors give different
// fingerprints.
func TestFingerprintDifferentErrors(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"go different undefined name", "./calc.go:12:3: undefined: Mul", "./calc.go:12:3: undefined: Div"},
		{"go different values", "calc_test.go:11: Add(2, 2) = 0, want 4", "calc_test.go:11: Add(2, 2) = 3, want 4"},
		{"go different test", "--- FAIL: TestAdd (0.00s)", "--- FAIL: TestSub (0.00s)"},
		{"go panic kinds", "panic: runtime error: index out of range [5] with length 3", "panic: runtime error: invalid memory address or nil pointer dereference"},
		{"python exception type", "KeyError: 'b'", "KeyError: 'c'"},
		{"python module", "ModuleNotFoundError: No module named 'yaml'", "ModuleNotFoundError: No module named 'toml'"},
		{"pytest assert", "E       assert 2.0 == 3.5", "E       assert 2.0 == 4.0"},
		{"node error kinds", "TypeError: Cannot read properties of undefined (reading 'name')", "TypeError: Cannot read properties of null (reading 'name')"},
		{"jest tests", "● Math › adds numbers: expect(received).toBe(expected)", "● Math › subtracts numbers: expect(received).toBe(expected)"},
		{"rust codes", "error[E0425]: cannot find value `c` in this scope", "error[E0432]: unresolved import `c`"},
		{"rust panics", "thread 'tests::it_adds' (1) panicked at src/lib.rs:7:20: assertion `left == right` failed", "thread 'tests::it_unwraps' (1) panicked at src/lib.rs:11:52: called `Option::unwrap()` on a `None` value"},
		{"different files", "./a.go:1:1: undefined: x", "./b.go:1:1: undefined: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.True(Fingerprint(tt.a) != Fingerprint(tt.b))
		})
	}
}

// TestFixtureFingerprints runs the whole pipeline (FirstFailureLine then
// Fingerprint) over recorded outputs: runs of the same failure share a
// fingerprint and the different failures all differ.
func TestFixtureFingerprints(t *testing.T) {
	is := is.New(t)
	same := [][]string{
		{"go-assert.txt", "go-assert-2.txt", "go-assert-v.txt"},
		{"go-panic.txt", "go-panic-2.txt"},
		{"py-filenotfound.txt", "py-filenotfound-2.txt"},
		{"py-nameerror.txt", "py-nameerror-2.txt"},
		{"node-module.txt", "node-module-2.txt"},
		{"node-typeerror.txt", "node-typeerror-2.txt"},
		{"rust-test.txt", "rust-test-2.txt"},
	}
	grouped := map[string]bool{}
	seen := map[string]string{} // fingerprint -> file
	for _, group := range same {
		fp := Fingerprint(FirstFailureLine(readFixture(t, group[0])))
		is.True(fp != "")
		for _, f := range group {
			is.Equal(Fingerprint(FirstFailureLine(readFixture(t, f))), fp) // same failure, same fingerprint
			grouped[f] = true
		}
		is.Equal(seen[fp], "") // groups differ from each other
		seen[fp] = group[0]
	}
	files, err := filepath.Glob(filepath.Join("testdata", "failures", "*.txt"))
	is.NoErr(err)
	for _, path := range files {
		f := filepath.Base(path)
		if grouped[f] {
			continue
		}
		fp := Fingerprint(FirstFailureLine(readFixture(t, f)))
		is.True(fp != "")
		if prev, dup := seen[fp]; dup {
			t.Errorf("%s and %s share fingerprint %s", prev, f, fp)
		}
		seen[fp] = f
	}
}

func FuzzNormalize(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "failures", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) != "" {
				f.Add(l)
			}
		}
	}
	f.Add("abc1234/tmp/x 12:34:56:78 0x0xc000123456 rt-a1b.2.3")
	f.Add("\x1b\x1b[0m[31m")
	f.Fuzz(func(t *testing.T, line string) {
		n := NewNormalizer("rt")
		for _, norm := range []func(string) string{Normalize, n.Normalize} {
			once := norm(line)
			if twice := norm(once); twice != once {
				t.Fatalf("not idempotent:\n in    %q\n once  %q\n twice %q", line, once, twice)
			}
			if strings.ContainsAny(once, "\n\x1b") || once != strings.TrimSpace(once) {
				t.Fatalf("not one trimmed line: %q", once)
			}
		}
		fp := Fingerprint(line)
		if fp != "" && len(fp) != 12 {
			t.Fatalf("fingerprint %q", fp)
		}
		if fp != Fingerprint(Normalize(line)) {
			t.Fatalf("fingerprint of the normalised line differs")
		}
	})
}

func TestNormalizeCapsLongLines(t *testing.T) {
	is := is.New(t)
	long := strings.Repeat("word ", 400) // 2000 bytes
	got := Normalize(long + "tail-a")
	is.True(len(got) <= maxNormBytes)
	is.True(!strings.HasSuffix(got, " "))
	is.True(strings.HasSuffix(got, "word")) // cut at a space, not inside a word
	is.Equal(Fingerprint(long+"tail-a"), Fingerprint(long+"tail-b"))
	oneToken := strings.Repeat("é", 1000)
	got = Normalize(oneToken)
	is.True(len(got) <= maxNormBytes)
	is.Equal(Normalize(got), got)
}

// TestNormalizeIdempotentCombinations checks idempotence on many
// deterministic mixtures of tokens that feed each other's rules, which
// random fuzzing reaches only slowly.
func TestNormalizeIdempotentCombinations(t *testing.T) {
	tokens := []string{
		"/tmp", "/tmp/", "a1b2c3d", "0x", "c000123456", "rt-", "2j9", ".1", ":", "12", ":3", "s", "ms", " ",
		"-", "abc", "deadbeef1", "2026-11-21", "T", "18:31:47", "Z", "localhost", "port", "pid", "=", "42",
		"goroutine", "(", ")", "'", "\"", "$WORK", "go-build", "123", "x.go", "line", "\t", "µs", "1.5", "e",
		"<n>", "<tmp>", "[", "]", "Nov", "21", "01a1ff61-8fca-7783-a7b5-7c3d585965e6", "1700000000123",
	}
	n := NewNormalizer("rt")
	state := uint64(42)
	next := func() int { // xorshift, fixed seed: the test is deterministic
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		return int(state % uint64(len(tokens)))
	}
	for range 1500 {
		var b strings.Builder
		for range 1 + next()%12 {
			b.WriteString(tokens[next()])
		}
		in := b.String()
		once := n.Normalize(in)
		if twice := n.Normalize(once); twice != once {
			t.Fatalf("not idempotent:\n in    %q\n once  %q\n twice %q", in, once, twice)
		}
	}
}

package judge

import (
	"strings"
	"testing"
)

func BenchmarkNormalizeLine(b *testing.B) {
	line := "thread 'tests::it_adds' (11814) panicked at src/lib.rs:7:20: assertion `left == right` failed at 2026-11-21T18:31:47Z /tmp/x/y.go 0xc000123456"
	for b.Loop() {
		Normalize(line)
	}
}

func BenchmarkNormalizeLongLine(b *testing.B) {
	line := strings.Repeat("abc 123 x.go:1:2 ", 4000)
	for b.Loop() {
		Normalize(line)
	}
}

func BenchmarkFirstFailureLine(b *testing.B) {
	out := readFixture(b, "rust-test.txt")
	for b.Loop() {
		FirstFailureLine(out)
	}
}

func BenchmarkPrepareText(b *testing.B) {
	text := strings.Repeat("0123456789\n", 100000)
	for b.Loop() {
		prepareText(text)
	}
}

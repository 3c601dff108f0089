package logjsonl

import (
	"bytes"
	"os"
	"testing"

	"github.com/ralphd/ralphd/internal/text"
)

func benchLines(b *testing.B) [][]byte {
	b.Helper()
	var lines [][]byte
	total := 0
	for _, path := range fixtureFiles(b) {
		in, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		for l := range bytes.Lines(in) {
			lines = append(lines, bytes.TrimSuffix(l, []byte("\n")))
			total += len(l)
		}
	}
	b.SetBytes(int64(total))
	return lines
}

// BenchmarkValidJSON measures the validator on the fixture lines.
func BenchmarkValidJSON(b *testing.B) {
	lines := benchLines(b)
	for b.Loop() {
		for _, l := range lines {
			if !text.ValidJSON(l) {
				b.Fatal("invalid fixture line")
			}
		}
	}
}

// BenchmarkClaimsMeta measures the check that agent lines do not pose as
// ralphd's events.
func BenchmarkClaimsMeta(b *testing.B) {
	lines := benchLines(b)
	for b.Loop() {
		for _, l := range lines {
			if claimsReserved(l) {
				b.Fatal("fixture line claims to be loop_meta")
			}
		}
	}
}

package judge

import (
	"testing"

	"github.com/matryer/is"
)

func TestCitesEvidence(t *testing.T) {
	tests := []struct {
		reason string
		want   bool
	}{
		// No evidence: empty, or a bare claim.
		{"", false},
		{"   ", false},
		{"done", false},
		{"Done.", false},
		{"fixed it", false},
		{"Implemented the feature as requested", false},
		{"should work now", false},
		{"completed and verified", false},
		{"handled input and output for read/write", false},
		{"make sure to review", false},
		{"added deadbeef handling", false},
		// Evidence.
		{"`go test ./...` passes", true},
		{"ran the test suite, all green", true},
		{"Tests pass", true},
		{"all 12 checks pass", true},
		{"unit tests are passing now", true},
		{"go test ./internal/judge exits 0", true},
		{"cargo test: 14 passed", true},
		{"pytest is clean", true},
		{"exit code 0 from the verify command", true},
		{"exited with status 0", true},
		{"fixed in 3fa2c1d", true},
		{"committed as 1a2b3c4d5e", true},
		{"changed internal/judge/record.go", true},
		{"see calc.go", true},
		{"calc_test.go:11 now passes", true},
		{"make test succeeds", true},
		{"Verified:\n- [x] Unit tests pass (npm test auth.test.ts - exit 0)", true},
		{"ok  \tgithub.com/ralphd/ralphd/internal/judge\t0.3s", true},
		{"build is green in CI", true},
		{"0 failures", true},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			is := is.New(t)
			is.Equal(CitesEvidence(tt.reason), tt.want)
		})
	}
}

package agent

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestClaudeRealStreams classifies streams captured from the real Claude
// Code 2.1.197 against a scripted API (internal/testkit/scriptedapi), with
// the process exit codes it really returned. In 2.1.197 every failure
// exits 1, and 529s and timeouts carry no api_error_status: the
// assistant's error field has to decide.
func TestClaudeRealStreams(t *testing.T) {
	now := time.Date(2026, 11, 21, 19, 0, 0, 0, time.UTC)
	tests := []struct {
		file      string
		status    Status
		transient bool
		reset     bool // a reset time is known
	}{
		{"stream-tool-use", StatusOK, false, false},
		{"stream-api-401", StatusFatal, false, false},
		{"stream-api-401-one-retry", StatusFatal, false, false},
		{"stream-api-429-then-success", StatusOK, false, false},
		{"stream-api-429-retry-after-too-long", StatusRateLimited, false, false},
		{"stream-subscription-usage-limit", StatusRateLimited, false, true},
		{"stream-api-529-repeated", StatusRateLimited, true, true},
		{"stream-api-500", StatusRateLimited, true, true},
		{"stream-api-hang-timeout", StatusRateLimited, true, true},
		{"stream-api-hang-one-retry", StatusRateLimited, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			is := is.New(t)
			dir := filepath.Join("testdata", "claude-2.1.197")
			code, err := os.ReadFile(filepath.Join(dir, tt.file+".exit"))
			is.NoErr(err)
			exit, err := strconv.Atoi(strings.TrimSpace(string(code)))
			is.NoErr(err)
			f, err := os.Open(filepath.Join(dir, tt.file+".jsonl"))
			is.NoErr(err)
			defer f.Close()
			p := Claude{Now: func() time.Time { return now }}.NewParser()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				p.Line(sc.Bytes())
			}
			o := p.Finish(exit, "")
			is.Equal(o.Status, tt.status)       // classified from the stream, not the exit code
			is.Equal(o.Transient, tt.transient) // provider trouble vs a quota
			is.Equal(!o.ResetAt.IsZero(), tt.reset)
			if o.Status != StatusOK {
				is.True(o.Reason != "") // says why
			}
		})
	}
}

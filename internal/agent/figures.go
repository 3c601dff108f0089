package agent

import (
	"fmt"
	"math"
	"strconv"
)

// Bounds on the figures an agent reports for one run. An agent's stream is
// the agent's own word: a negative cost would lower the run's summed cost
// and so defeat --max-cost-usd, and a value past these bounds is no
// measurement either (its sum overflows into +Inf or wraps negative).
const (
	// MaxReportedCostUSD is the largest cost one run may report.
	MaxReportedCostUSD = 1e6
	// MaxReportedTokens is the largest token count one run may report
	// in any one field.
	MaxReportedTokens = int64(1) << 40
)

// ValidCost reports whether c is a cost an agent run can have incurred:
// finite, not negative, and at most MaxReportedCostUSD.
func ValidCost(c float64) bool {
	return !math.IsNaN(c) && c >= 0 && c <= MaxReportedCostUSD
}

// ValidTokens reports whether n is a plausible token count.
func ValidTokens(n int64) bool { return n >= 0 && n <= MaxReportedTokens }

// checkFigures drops the figures in out that no agent run can have
// produced: a cost that is not ValidCost becomes nil (no cost reported),
// and a token count that is not ValidTokens becomes 0. It returns one
// description per rejected figure, for the log; none when all were sound.
func checkFigures(out *Outcome) []string {
	var bad []string
	if out.CostUSD != nil && !ValidCost(*out.CostUSD) {
		bad = append(bad, "cost "+strconv.FormatFloat(*out.CostUSD, 'g', -1, 64))
		out.CostUSD = nil
	}
	for _, f := range []struct {
		name string
		n    *int64
	}{
		{"input tokens", &out.Usage.InputTokens},
		{"output tokens", &out.Usage.OutputTokens},
		{"cache read tokens", &out.Usage.CacheReadTokens},
		{"cache write tokens", &out.Usage.CacheWriteTokens},
	} {
		if !ValidTokens(*f.n) {
			bad = append(bad, fmt.Sprintf("%s %d", f.name, *f.n))
			*f.n = 0
		}
	}
	if out.Turns < 0 {
		bad = append(bad, fmt.Sprintf("turns %d", out.Turns))
		out.Turns = 0
	}
	return bad
}

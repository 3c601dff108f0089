package agent

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCheckFigures(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name     string
		out      Outcome
		wantCost *float64
		wantBad  int
	}{
		{"sound", Outcome{CostUSD: f(0.9), Usage: Usage{InputTokens: 10, OutputTokens: 2}}, f(0.9), 0},
		{"no cost", Outcome{}, nil, 0},
		{"zero cost", Outcome{CostUSD: f(0)}, f(0), 0},
		{"negative cost", Outcome{CostUSD: f(-100)}, nil, 1},
		{"negative zero is zero", Outcome{CostUSD: f(math.Copysign(0, -1))}, f(0), 0},
		{"NaN cost", Outcome{CostUSD: f(math.NaN())}, nil, 1},
		{"+Inf cost", Outcome{CostUSD: f(math.Inf(1))}, nil, 1},
		{"-Inf cost", Outcome{CostUSD: f(math.Inf(-1))}, nil, 1},
		{"huge cost", Outcome{CostUSD: f(1e300)}, nil, 1},
		{"largest cost", Outcome{CostUSD: f(MaxReportedCostUSD)}, f(MaxReportedCostUSD), 0},
		{"negative tokens", Outcome{CostUSD: f(1), Usage: Usage{InputTokens: -5, CacheWriteTokens: -1}}, f(1), 2},
		{"huge tokens", Outcome{Usage: Usage{OutputTokens: math.MaxInt64}}, nil, 1},
		{"negative turns", Outcome{Turns: -3}, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			out := c.out
			bad := checkFigures(&out)
			is.Equal(len(bad), c.wantBad) // rejected figures
			if c.wantCost == nil {
				is.True(out.CostUSD == nil)
			} else {
				is.True(out.CostUSD != nil)
				is.Equal(*out.CostUSD, *c.wantCost)
			}
			is.True(ValidTokens(out.Usage.InputTokens) && ValidTokens(out.Usage.OutputTokens) &&
				ValidTokens(out.Usage.CacheReadTokens) && ValidTokens(out.Usage.CacheWriteTokens))
			is.True(out.Turns >= 0)
		})
	}
}

// Whatever a result line says, the Outcome Run returns carries only sound
// figures, and says which it dropped.
func TestRunRejectsImpossibleFigures(t *testing.T) {
	cases := []struct {
		name, line string
		wantCost   *float64
		wantReason string
	}{
		{"negative cost", `{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":-100,"usage":{"input_tokens":5}}`, nil, "cost -100"},
		{"overflowing cost", `{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":1e999}`, nil, "cost +Inf"},
		{"huge cost", `{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":1e300}`, nil, "cost 1e+300"},
		{"negative tokens", `{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.5,"usage":{"input_tokens":-7,"output_tokens":3}}`, ptr(0.5), "input tokens -7"},
		{"sound", `{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.9}`, ptr(0.9), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			out, err := Run(context.Background(), Command{Line: "cat >/dev/null; printf '%s\\n' '" + c.line + "'"},
				Invocation{Dir: t.TempDir()}, RunOptions{Env: testEnv()})
			is.NoErr(err)
			is.Equal(out.Status, StatusOK)
			if c.wantCost == nil {
				is.True(out.CostUSD == nil) // the impossible cost is dropped
			} else {
				is.True(out.CostUSD != nil)
				is.Equal(*out.CostUSD, *c.wantCost)
			}
			is.True(out.Usage.InputTokens >= 0)
			if c.wantReason == "" {
				is.Equal(len(out.Rejected), 0)
				is.True(!strings.Contains(out.Reason, "cannot be true"))
				return
			}
			is.True(strings.Contains(strings.Join(out.Rejected, "; "), c.wantReason)) // says what it dropped
			is.True(strings.Contains(out.Reason, "ignored figures the agent reported that cannot be true"))
		})
	}
}

// A negative step cost cannot hide the other steps' cost in opencode's sum.
func TestOpencodeNegativeStepCostIsRejected(t *testing.T) {
	is := is.New(t)
	p := Opencode{}.NewParser()
	p.Line([]byte(`{"type":"step_finish","sessionID":"s","part":{"cost":1.4,"tokens":{"input":1,"output":1}}}`))
	p.Line([]byte(`{"type":"step_finish","sessionID":"s","part":{"cost":-0.5,"tokens":{"input":1,"output":1}}}`))
	out := p.Finish(0, "")
	bad := checkFigures(&out)
	is.Equal(len(bad), 1)
	is.True(out.CostUSD == nil)
}

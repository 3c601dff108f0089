// Tokens is ralphd's one count of an agent's tokens: what
// a backend reports for a run (agent.Outcome.Usage), what an iteration's
// history record and the run log's iteration_end and run_end events carry,
// and what status, reports, metrics and the dashboard add up.

package agent

import "encoding/json"

// Tokens counts the tokens of one agent run, or a sum of runs. Backends
// fill what they report.
type Tokens struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum of t and u.
func (t Tokens) Add(u Tokens) Tokens {
	return Tokens{
		InputTokens:      t.InputTokens + u.InputTokens,
		OutputTokens:     t.OutputTokens + u.OutputTokens,
		CacheReadTokens:  t.CacheReadTokens + u.CacheReadTokens,
		CacheWriteTokens: t.CacheWriteTokens + u.CacheWriteTokens,
	}
}

// Total returns all tokens counted, cached ones included.
func (t Tokens) Total() int64 {
	return t.InputTokens + t.OutputTokens + t.CacheReadTokens + t.CacheWriteTokens
}

// IsZero reports whether no tokens were counted.
func (t Tokens) IsZero() bool { return t == Tokens{} }

// UnmarshalJSON reads Tokens in its own spelling, and also in the one
// history.jsonl used before (input, output, cache_read, cache_write), so
// older history records keep their counts.
func (t *Tokens) UnmarshalJSON(b []byte) error {
	var v struct {
		InputTokens      *int64 `json:"input_tokens"`
		OutputTokens     *int64 `json:"output_tokens"`
		CacheReadTokens  *int64 `json:"cache_read_tokens"`
		CacheWriteTokens *int64 `json:"cache_write_tokens"`
		Input            int64  `json:"input"`
		Output           int64  `json:"output"`
		CacheRead        int64  `json:"cache_read"`
		CacheWrite       int64  `json:"cache_write"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	pick := func(now *int64, old int64) int64 {
		if now != nil {
			return *now
		}
		return old
	}
	*t = Tokens{
		InputTokens:      pick(v.InputTokens, v.Input),
		OutputTokens:     pick(v.OutputTokens, v.Output),
		CacheReadTokens:  pick(v.CacheReadTokens, v.CacheRead),
		CacheWriteTokens: pick(v.CacheWriteTokens, v.CacheWrite),
	}
	return nil
}

package agent

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"
)

func TestAddTotalIsZero(t *testing.T) {
	is := is.New(t)
	a := Tokens{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}
	is.Equal(a.Add(a), Tokens{InputTokens: 2, OutputTokens: 4, CacheReadTokens: 6, CacheWriteTokens: 8})
	is.Equal(a.Total(), int64(10))
	is.True(Tokens{}.IsZero())
	is.True(!a.IsZero())
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name, in string
		want     Tokens
	}{
		{"current", `{"input_tokens":10,"output_tokens":20,"cache_read_tokens":30,"cache_write_tokens":40}`, Tokens{10, 20, 30, 40}},
		{"older history", `{"input":10,"output":20,"cache_read":30,"cache_write":40}`, Tokens{10, 20, 30, 40}},
		{"current wins", `{"input":1,"input_tokens":2}`, Tokens{InputTokens: 2}},
		{"empty", `{}`, Tokens{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var got Tokens
			is.NoErr(json.Unmarshal([]byte(tt.in), &got))
			is.Equal(got, tt.want)
			b, err := json.Marshal(got)
			is.NoErr(err)
			var again Tokens
			is.NoErr(json.Unmarshal(b, &again))
			is.Equal(again, got) // round trip
		})
	}
	var bad Tokens
	is.New(t).True(json.Unmarshal([]byte(`{"input_tokens":"x"}`), &bad) != nil)
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"input_tokens":1,"output":2}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tk Tokens
		if json.Unmarshal(b, &tk) != nil {
			return
		}
		out, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		var again Tokens
		if err := json.Unmarshal(out, &again); err != nil || again != tk {
			t.Fatalf("round trip of %s: %v %+v != %+v", out, err, again, tk)
		}
	})
}

package text

import "testing"

func TestClosest(t *testing.T) {
	keys := []string{"max_stuck", "max_cost_usd", "log", "log_retention", "poll"}
	tests := []struct{ word, want string }{
		{"max_stuk", "max_stuck"},
		{"max_stuck", "max_stuck"},
		{"max_st", "max_stuck"}, // a prefix
		{"lgo", "log"},
		{"pol", "poll"},
		{"zz", ""},
		{"nope", ""},      // two edits from "scope": too far for a short word
		{"x", ""},         // one letter is never "close" to a short key
		{"iteration", ""}, // too far from everything
		{"", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.word, keys); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"max_stuk", "max_stuck", 1}, {"hepl", "help", 1}, {"biuld", "build", 1}, {"nope", "scope", 2}} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance is not symmetric for %q, %q", tt.a, tt.b)
		}
	}
}

func FuzzClosest(f *testing.F) {
	f.Add("max_stuk", "max_stuck")
	f.Fuzz(func(t *testing.T, word, cand string) {
		got := Closest(word, []string{cand})
		if got != "" && got != cand {
			t.Fatalf("Closest returned %q, not a candidate", got)
		}
		if Distance(word, cand) < 0 || Distance(word, word) != 0 {
			t.Fatal("bad distance")
		}
	})
}

package text

import "testing"

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "issue", "0 issues"},
		{1, "issue", "1 issue"},
		{2, "attempt", "2 attempts"},
		{-1, "iteration", "-1 iteration"},
		{11, "time", "11 times"},
	} {
		if got := Count(tt.n, tt.noun); got != tt.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}

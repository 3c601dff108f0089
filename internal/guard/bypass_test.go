package guard

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestBypasses(t *testing.T) {
	tests := []struct {
		cmd  string
		want int
	}{
		{`bd update x-1 --priority 0`, 0},                           // through the guard, which refuses it
		{`bd close x-1 --reason "go test passes"`, 0},               // allowed
		{`/usr/local/bin/bd update x-1 --priority 0`, 1},            // around the guard
		{`"$RALPHD_REAL_BD" dep remove x-1 x-2`, 1},                 // around the guard, by variable
		{`cd sub && /opt/bd/bd delete x-1 --force && echo done`, 1}, // hidden in a list
		{`/usr/local/bin/bd show x-1 --json`, 0},                    // around the guard, but allowed
		{`bash -lc '/usr/bin/bd update x-1 --type bug'`, 1},         // through a shell
		{`echo /usr/bin/bd delete x-1`, 0},                          // not a call
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			is := is.New(t)
			got := Bypasses([]string{tt.cmd})
			is.Equal(len(got), tt.want)
			for _, g := range got {
				is.True(strings.Contains(g, "around the guard")) // says what happened
			}
		})
	}
}

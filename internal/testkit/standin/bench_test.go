package standin

import (
	"fmt"
	"testing"
)

// BenchmarkCommands measures a read and a write through the library
// (real bd 1.0.5 took 0.115 s for `ready --json` with 10 issues, 0.345 s
// with 2000, and 0.211 s for `create --json`).
func BenchmarkCommands(b *testing.B) {
	for _, n := range []int{10, 500} {
		s := initRepo(b)
		for i := 0; i < n; i++ {
			s.createID(fmt.Sprintf("Issue %d", i), "-p", fmt.Sprint(i%5))
		}
		for _, args := range [][]string{{"ready", "--json"}, {"list", "--json"}, {"create", "Bench issue", "--json"}} {
			b.Run(fmt.Sprintf("%s-%d", args[0], n), func(b *testing.B) {
				for b.Loop() {
					if r := s.bd(s.repo, args...); r.code != 0 {
						b.Fatalf("%v: %+v", args, r)
					}
				}
			})
		}
	}
}

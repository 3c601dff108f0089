// Package suggest finds what a user probably meant by a mistyped word: a
// command, a flag, a configuration key.
package suggest

import "strings"

// Closest returns the candidate closest to word: one that word is a prefix
// of (at least two characters long), else the one fewest edits away when
// that is at most two edits (and fewer than the word's length), else "".
// Ties go to the earlier candidate.
func Closest(word string, candidates []string) string {
	if len(word) >= 2 {
		for _, c := range candidates {
			if strings.HasPrefix(c, word) {
				return c
			}
		}
	}
	best, bestD := "", 3
	for _, c := range candidates {
		if d := Distance(word, c); d < bestD && d < len(word) {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

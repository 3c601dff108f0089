// Closest finds what a user probably meant by a mistyped word: a
// command, a flag, a configuration key.

package text

import "strings"

// Closest returns the candidate closest to word: one that word is a prefix
// of (at least two characters long), else the one fewest edits away, when
// that is one edit for a word of up to four characters and two for a
// longer one, else "". Ties go to the earlier candidate.
func Closest(word string, candidates []string) string {
	if len(word) >= 2 {
		for _, c := range candidates {
			if strings.HasPrefix(c, word) {
				return c
			}
		}
	}
	limit := 1
	if len(word) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := Distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the edit distance between a and b, in bytes: insertions,
// deletions, substitutions and swaps of two neighbours ("hepl" is one edit
// from "help").
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Counts are written the way a person would: "1 issue",
// "2 issues".

package text

import "strconv"

// Count returns n and the noun, which gets an "s" unless n is 1 (or -1).
// The nouns ralphd counts are regular: issue, iteration, attempt, run,
// time, call.
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun returns the noun for n of them, without the number.
func Noun(n int, noun string) string {
	if n == 1 || n == -1 {
		return noun
	}
	return noun + "s"
}

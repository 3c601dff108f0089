// Package text holds the small helpers for the words ralphd prints and
// reads: counts with their nouns ("1 issue", "2 issues"), words quoted for
// a POSIX shell, the known word closest to a mistyped one, regular
// expressions compiled on first use, and whether a line is JSON.
package text

// Package relazy holds regular expressions that are compiled on first
// use instead of at program start.
//
// Every ralphd process runs every package's initialisation, and the bd
// guard starts one ralphd per bd call an agent makes: compiling the
// judge's and the parsers' hundred-odd patterns there is pure start-up
// cost. A package-level relazy.Regexp costs nothing until it is used.
package relazy

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled on first use. Its methods are
// those of regexp.Regexp that ralphd uses; it is safe for concurrent use.
type Regexp struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

// New returns a Regexp for expr. Like regexp.MustCompile it panics on a
// bad expression, but at first use: tests that exercise each pattern
// catch that, and the patterns are constants.
func New(expr string) *Regexp { return &Regexp{src: expr} }

// Get returns the compiled expression.
func (r *Regexp) Get() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.src) })
	return r.re
}

// String returns the source text.
func (r *Regexp) String() string { return r.src }

// MatchString reports whether s contains any match.
func (r *Regexp) MatchString(s string) bool { return r.Get().MatchString(s) }

// FindString returns the leftmost match in s.
func (r *Regexp) FindString(s string) string { return r.Get().FindString(s) }

// FindStringIndex returns the location of the leftmost match in s.
func (r *Regexp) FindStringIndex(s string) []int { return r.Get().FindStringIndex(s) }

// FindStringSubmatch returns the leftmost match and its submatches.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Get().FindStringSubmatch(s) }

// FindStringSubmatchIndex returns the indexes of the leftmost match and
// its submatches.
func (r *Regexp) FindStringSubmatchIndex(s string) []int { return r.Get().FindStringSubmatchIndex(s) }

// FindAllString returns up to n successive matches (all when n < 0).
func (r *Regexp) FindAllString(s string, n int) []string { return r.Get().FindAllString(s, n) }

// FindAllStringSubmatch returns up to n successive matches with their
// submatches.
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Get().FindAllStringSubmatch(s, n)
}

// FindAllStringIndex returns the locations of up to n successive matches.
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int { return r.Get().FindAllStringIndex(s, n) }

// ReplaceAllString replaces matches with repl, expanding $ references.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Get().ReplaceAllString(src, repl)
}

// ReplaceAllLiteralString replaces matches with repl as is.
func (r *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return r.Get().ReplaceAllLiteralString(src, repl)
}

// ReplaceAllStringFunc replaces matches with what repl returns for each.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Get().ReplaceAllStringFunc(src, repl)
}

// SubexpIndex returns the index of the named group, or -1.
func (r *Regexp) SubexpIndex(name string) int { return r.Get().SubexpIndex(name) }

// LazyRegexp holds regular expressions that are compiled on first
// use instead of at program start.
//
// Every ralphd process runs every package's initialisation, and the bd
// guard starts one ralphd per bd call an agent makes: compiling the
// judge's and the parsers' hundred-odd patterns there is pure start-up
// cost. A package-level Regexp costs nothing until it is used.

package text

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

// LazyRegexp returns a Regexp for expr. Like regexp.MustCompile it panics on a
// bad expression, but at first use: tests that exercise each pattern
// catch that, and the patterns are constants.
func LazyRegexp(expr string) *Regexp { return &Regexp{src: expr} }

// Get returns the compiled expression.
func (r *Regexp) Get() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.src) })
	return r.re
}

// MatchString reports whether s contains any match.
func (r *Regexp) MatchString(s string) bool { return r.Get().MatchString(s) }

// FindStringSubmatch returns the leftmost match and its submatches.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Get().FindStringSubmatch(s) }

// FindAllString returns up to n successive matches (all when n < 0).
func (r *Regexp) FindAllString(s string, n int) []string { return r.Get().FindAllString(s, n) }

// FindAllStringSubmatch returns up to n successive matches with their
// submatches.
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Get().FindAllStringSubmatch(s, n)
}

// ReplaceAllString replaces matches with repl, expanding $ references.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Get().ReplaceAllString(src, repl)
}

// ReplaceAllStringFunc replaces matches with what repl returns for each.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Get().ReplaceAllStringFunc(src, repl)
}

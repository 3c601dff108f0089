package text

import (
	"regexp"
	"sync"
	"testing"

	"github.com/matryer/is"
)

func TestLazyMatchesEager(t *testing.T) {
	is := is.New(t)
	const expr = `(?P<word>[a-z]+)-(\d+)`
	lazy, eager := LazyRegexp(expr), regexp.MustCompile(expr)
	is.Equal(lazy.re, nil) // nothing compiled until used
	for _, s := range []string{"", "abc-12 def-3", "x-1", "NOPE"} {
		is.Equal(lazy.MatchString(s), eager.MatchString(s))
		is.Equal(lazy.FindStringSubmatch(s), eager.FindStringSubmatch(s))
		is.Equal(lazy.FindAllStringSubmatch(s, -1), eager.FindAllStringSubmatch(s, -1))
		is.Equal(lazy.ReplaceAllString(s, "<$1>"), eager.ReplaceAllString(s, "<$1>"))
	}
}

func TestConcurrentFirstUse(t *testing.T) {
	r := LazyRegexp(`a+`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !r.MatchString("caaat") {
				t.Error("no match")
			}
		})
	}
	wg.Wait()
}

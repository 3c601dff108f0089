package gitscrub

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// BenchmarkScrub measures one Scrub of a repository with 1,000 loose refs
// (and their reflogs) and a linked work tree, against one
// `git for-each-ref` over the same repository in the same run, and
// reports their ratio (scrub/for-each-ref).
func BenchmarkScrub(b *testing.B) {
	r := newRepo(b)
	head := git(b, r.dir, "rev-parse", "HEAD")
	var in strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&in, "create refs/heads/ralphd/workers/w%d/work %s\n", i, head)
	}
	cmd := exec.Command("git", "update-ref", "--create-reflog", "--stdin")
	cmd.Dir, cmd.Stdin = r.dir, strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	s := r.scrub()
	var scrub, refs time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		found, err := s.Scrub()
		if err != nil || len(found) != 0 {
			b.Fatal(found, err)
		}
		t1 := time.Now()
		out, err := exec.CommandContext(context.Background(), "git", "-C", r.dir, "for-each-ref").Output()
		if err != nil || strings.Count(string(out), "\n") < 1000 {
			b.Fatal(err)
		}
		scrub, refs = scrub+t1.Sub(t0), refs+time.Since(t1)
	}
	b.ReportMetric(float64(scrub.Nanoseconds())/float64(b.N), "scrub-ns/op")
	b.ReportMetric(float64(refs.Nanoseconds())/float64(b.N), "for-each-ref-ns/op")
	b.ReportMetric(float64(scrub)/float64(refs), "scrub/for-each-ref")
}

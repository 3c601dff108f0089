package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkScrub measures one Scrub of a repository with 1,000 loose refs
// (and their reflogs) and a linked work tree, against one
// `git for-each-ref` over the same repository in the same run, and
// reports their ratio (scrub/for-each-ref).
func BenchmarkScrub(b *testing.B) {
	r := newScrubRepo(b)
	head := scrubGit(b, r.dir, "rev-parse", "HEAD")
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
		found, err := s.Scrub(r.tree)
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

// BenchmarkScrubTree measures one ScrubTree of a work tree of 200
// directories and 2,000 files against one `git status --porcelain` of it
// in the same run, and reports their ratio (scrub/status).
func BenchmarkScrubTree(b *testing.B) {
	r := newScrubRepo(b)
	for d := range 200 {
		dir := filepath.Join(r.tree, fmt.Sprintf("d%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 10 {
			writeScrubFile(b, filepath.Join(dir, fmt.Sprintf("f%d.txt", f)), []byte("x\n"))
		}
	}
	scrubGit(b, r.tree, "add", "-A")
	scrubGit(b, r.tree, "commit", "-q", "-m", "tree")
	var scrub, status time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		found, err := ScrubTree(r.tree)
		if err != nil || len(found) != 0 {
			b.Fatal(found, err)
		}
		t1 := time.Now()
		if _, err := exec.Command("git", "-C", r.tree, "status", "--porcelain").Output(); err != nil {
			b.Fatal(err)
		}
		scrub, status = scrub+t1.Sub(t0), status+time.Since(t1)
	}
	b.ReportMetric(float64(scrub.Nanoseconds())/float64(b.N), "scrub-ns/op")
	b.ReportMetric(float64(status.Nanoseconds())/float64(b.N), "status-ns/op")
	b.ReportMetric(float64(scrub)/float64(status), "scrub/status")
}

// BenchmarkHistory measures what holding the history adds to an
// iteration: one Take and one Check, after the iteration made one commit,
// of a repository with 2,000 packed commits, 500 loose objects and 100
// refs, against one `git status --porcelain` of it (which every
// iteration runs for its progress signals) in the same run, and reports
// their ratio (history/status).
func BenchmarkHistory(b *testing.B) {
	dir := b.TempDir()
	run := func(stdin string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@x")
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run("", "init", "-q", "-b", "main")
	var in strings.Builder
	for i := range 2000 {
		body := fmt.Sprint(i)
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter T <t@x> %d +0000\ndata 1\nc\nM 644 inline f%d\ndata %d\n%s\n\n", 1700000000+i, i%50, len(body), body)
	}
	run(in.String(), "fast-import", "--quiet")
	in.Reset()
	for i := range 100 {
		fmt.Fprintf(&in, "create refs/heads/b%d main~%d\n", i, i)
	}
	run(in.String(), "update-ref", "--stdin")
	run("", "checkout", "-q", "-f", "main")
	for i := range 500 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i%50)), []byte(fmt.Sprint("loose ", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		run("", "hash-object", "-w", fmt.Sprintf("f%d", i%50))
	}
	ctx := context.Background()
	h, err := NewHistory(ctx, dir, filepath.Join(b.TempDir(), "kept"))
	if err != nil {
		b.Fatal(err)
	}
	h.Forward = []string{"refs/heads/main"}
	var hist, status time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if err := h.Take(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		run("", "commit", "-q", "--allow-empty", "-m", fmt.Sprint("iteration ", i))
		b.StartTimer()
		t1 := time.Now()
		lost, err := h.Check(ctx, "bench", time.Now())
		if err != nil || !lost.Empty() {
			b.Fatal(lost, err)
		}
		t2 := time.Now()
		if _, err := Output(ctx, dir, "status", "--porcelain"); err != nil {
			b.Fatal(err)
		}
		hist, status = hist+t1.Sub(t0)+t2.Sub(t1), status+time.Since(t2)
	}
	b.ReportMetric(float64(hist.Nanoseconds())/float64(b.N), "history-ns/op")
	b.ReportMetric(float64(status.Nanoseconds())/float64(b.N), "status-ns/op")
	b.ReportMetric(float64(hist)/float64(status), "history/status")
}

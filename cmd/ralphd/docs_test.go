package main

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines is how long README.md may grow: the pitch, the demo,
// install, use, configuration and exit codes, with a line for each page
// under docs/. Everything longer belongs in docs/.
const maxReadmeLines = 250

// mdLink matches an inline Markdown link or image, [text](target) or
// ![alt](target), and captures its target. A link's text holds no
// brackets in these docs.
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// TestDocsLinks checks that every relative link in README.md,
// CONTRIBUTING.md and docs/*.md points at a file that exists (and, when it
// names a heading with #, that the heading is there), and that README.md
// is at most maxReadmeLines lines.
func TestDocsLinks(t *testing.T) {
	const root = "../.."
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md")}, pages...)
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, target := range links(data) {
			u, err := url.Parse(target)
			if err != nil {
				t.Errorf("%s: link %q does not parse: %v", name, target, err)
				continue
			}
			if u.Scheme != "" || u.Host != "" {
				continue // not relative: http, https, mailto
			}
			dest := page
			if u.Path != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(u.Path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q points at no file: %v", name, target, err)
					continue
				}
			}
			checked++
			if u.Fragment == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			to, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(to)[u.Fragment] {
				t.Errorf("%s: link %q names no heading of %s", name, target, filepath.Base(dest))
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no relative link at all: the link pattern is wrong")
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/ and link it", n, maxReadmeLines)
	}
}

// inlineCode matches a code span, whose text is never a link.
var inlineCode = regexp.MustCompile("`[^`]*`")

// links returns the targets of the inline links in a Markdown page,
// outside fenced code blocks and code spans.
func links(page []byte) []string {
	var out []string
	for line := range prose(page) {
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the fragment each heading of a Markdown page gets, as
// GitHub makes it: lower case, punctuation dropped, spaces made hyphens.
func anchors(page []byte) map[string]bool {
	out := map[string]bool{}
	for line := range prose(page) {
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// prose yields a Markdown page's lines outside fenced code blocks.
func prose(page []byte) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		fenced := false
		for line := range strings.SplitSeq(string(page), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if fenced {
				continue
			}
			if !yield(line) {
				return
			}
		}
	}
}

package git

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// Layout is where a work tree's git data is and what HEAD holds, from one
// git call.
type Layout struct {
	GitDir    string // the work tree's git dir, absolute
	CommonDir string // git's common dir (differs in a linked worktree), absolute
	Head      string // HEAD's commit; "" in a repository without commits
	Tree      string // the object at HEAD:<sub> (see Repo.Layout); "" when there is none
}

// CommonDir returns the absolute path of the common git directory of the
// repository whose work tree (or one of its worktrees) is dir. Unlike
// Layout, it reads no ref: it is safe before a scrub.
func CommonDir(ctx context.Context, dir string) (string, error) {
	l, err := Repo{Dir: dir}.layout(ctx, false, "")
	return l.CommonDir, err
}

// Layout returns the work tree's git dirs, HEAD, and, when sub is not
// "", the object HEAD has at sub (a path from the top of the work tree,
// such as ".ralph"), all from one git call.
func (r Repo) Layout(ctx context.Context, sub string) (Layout, error) {
	return r.layout(ctx, true, sub)
}

// layout is Layout, with HEAD and HEAD:<sub> read only when head is true.
func (r Repo) layout(ctx context.Context, head bool, sub string) (Layout, error) {
	args := []string{"rev-parse", "--absolute-git-dir", "--path-format=absolute", "--git-common-dir"}
	if head {
		// --revs-only leaves out what does not resolve, where --verify
		// takes one name only: HEAD:<sub> cannot resolve without HEAD,
		// so the number of lines says which did.
		args = append(args, "--revs-only", "HEAD")
		if sub != "" {
			args = append(args, "HEAD:"+sub)
		}
	}
	out, err := r.git(ctx, args...)
	if err != nil {
		return Layout{}, err
	}
	l, err := parseLayout(string(out), head && sub != "")
	if err != nil {
		return Layout{}, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return l, nil
}

// parseLayout reads Layout's rev-parse output: the two dirs, then HEAD
// and HEAD:<sub> when they resolve (withSub: HEAD:<sub> was asked for).
func parseLayout(out string, withSub bool) (Layout, error) {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	most := 3
	if withSub {
		most = 4
	}
	if len(lines) < 2 || len(lines) > most {
		return Layout{}, fmt.Errorf("want 2 to %d lines, got %q", most, out)
	}
	for _, d := range lines[:2] {
		if !filepath.IsAbs(d) {
			return Layout{}, fmt.Errorf("git dir %q is not absolute", d)
		}
	}
	for _, id := range lines[2:] {
		if !isObjectID(id) {
			return Layout{}, fmt.Errorf("%q is not an object id", id)
		}
	}
	l := Layout{GitDir: filepath.Clean(lines[0]), CommonDir: filepath.Clean(lines[1])}
	if len(lines) > 2 {
		l.Head = lines[2]
	}
	if len(lines) > 3 {
		l.Tree = lines[3]
	}
	return l, nil
}

// isObjectID reports whether s is a full hex object id (SHA-1 or SHA-256).
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

package git

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A History holds a repository's history across an agent's window: every
// object its refs reached when it was taken stays in the store and
// reachable from a ref. An agent can write refs and objects (its commits
// need them), so it can rewrite a branch (reset, commit), delete one,
// expire the reflogs, and gc or rm the objects; sandboxed or not. Check
// undoes each:
//
//   - object files that went away and held objects the store has nowhere
//     else are put back from the ObjectKeeper's links, first, so that the
//     refs below can be read and put back at all;
//   - a ref whose old object is reachable from no ref any more is put
//     back where it was, by compare-and-swap (RestoreRef); what the agent
//     left it at, when that holds commits the old one lacks, is kept on a
//     MovedPrefix branch;
//   - a Forward ref (the branch work lands on) may only move forward: one
//     its old commit is no longer an ancestor of is put back even when the
//     old commit is reachable elsewhere, and when it is the branch checked
//     out in Repo, the work tree goes back with it, after the agent's
//     commits and uncommitted work are kept on the MovedPrefix branch
//     (FailureBranch).
//
// Refs under Skip are not held: remote-tracking refs follow their remote
// (a fetch may rewind one), and a pool's workers' branches are the pool's
// to check.
type History struct {
	// Repo is a work tree of the repository.
	Repo string
	// Keeper keeps the object store.
	Keeper *ObjectKeeper
	// Forward are the refs (full names) that may only move forward.
	Forward []string
	// Skip are ref prefixes not held.
	Skip []string

	refs map[string]string // ref → object, as last taken
}

// NewHistory returns a History of the repository whose work tree is repo,
// with the links of its object store in keepDir. Nothing is held until
// Take.
func NewHistory(ctx context.Context, repo, keepDir string) (*History, error) {
	common, err := CommonDir(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("hold the history: %w", err)
	}
	out, err := Output(ctx, repo, "rev-parse", "--show-object-format")
	if err != nil {
		return nil, fmt.Errorf("hold the history: %w", err)
	}
	format := strings.TrimSpace(string(out))
	n := 40
	if format == "sha256" {
		n = 64
	}
	return &History{
		Repo:   repo,
		Keeper: &ObjectKeeper{Objects: filepath.Join(common, "objects"), Dir: keepDir, HashLen: n},
		Skip:   []string{"refs/remotes/"},
	}, nil
}

// Take holds the refs and the object store as they are now.
func (h *History) Take(ctx context.Context) error {
	refs, err := h.read(ctx)
	if err != nil {
		return err
	}
	if err := h.Keeper.Keep(); err != nil {
		return err
	}
	h.refs = refs
	return nil
}

// Lost is what a Check found the window had lost, and put back.
type Lost struct {
	// Objects are the object files put back.
	Objects Restored
	// Moves are the refs put back, each with where the agent's value was
	// kept.
	Moves []Move
}

// Empty reports whether nothing was lost.
func (l Lost) Empty() bool { return l.Objects.Empty() && len(l.Moves) == 0 }

// Lines describes each thing lost and put back, one line each.
func (l Lost) Lines() []string {
	var out []string
	if !l.Objects.Empty() {
		out = append(out, l.Objects.String())
	}
	for _, m := range l.Moves {
		out = append(out, "history was rewritten: "+m.String())
	}
	return out
}

// Check puts back what the window lost since Take (see History), and
// returns it. what names the moved branches (MovedPrefix+what+"/<time>").
// An error says what could not be put back; the repository is then not
// whole, and the caller must stop using it.
func (h *History) Check(ctx context.Context, what string, now time.Time) (Lost, error) {
	var lost Lost
	var err error
	if lost.Objects, err = h.Keeper.Restore(); err != nil {
		return lost, err
	}
	if h.refs == nil {
		return lost, nil
	}
	cur, err := h.read(ctx)
	if err != nil {
		return lost, err
	}
	var changed []string
	for ref, old := range h.refs {
		if cur[ref] != old {
			changed = append(changed, ref)
		}
	}
	if len(changed) == 0 {
		return lost, nil
	}
	slices.Sort(changed)
	var olds []string
	for _, ref := range changed {
		olds = append(olds, h.refs[ref])
	}
	unreachable, err := h.unreachable(ctx, olds)
	if err != nil {
		return lost, err
	}
	for _, ref := range changed {
		old, got := h.refs[ref], cur[ref]
		forward := slices.Contains(h.Forward, ref)
		if !unreachable[old] && !(forward && !h.ancestor(ctx, old, got)) {
			continue
		}
		m := Move{Ref: ref, Want: old, Got: got}
		m.Kept, m.Err = h.putBack(ctx, ref, old, got, forward, what, now)
		lost.Moves = append(lost.Moves, m)
	}
	return lost, nil
}

// putBack puts ref back at old, where it was found at got, and returns
// the branch that keeps got's work, if any.
func (h *History) putBack(ctx context.Context, ref, old, got string, forward bool, what string, now time.Time) (string, error) {
	if forward && got != "" {
		if head, _ := Output(ctx, h.Repo, "symbolic-ref", "-q", "HEAD"); strings.TrimSpace(string(head)) == ref {
			r := Repo{Dir: h.Repo}
			name, err := r.FreeBranchName(ctx, MovedPrefix+what+"/"+now.UTC().Format("20060102-150405"))
			if err != nil {
				return "", err
			}
			tip, err := r.FailureBranch(ctx, name, fmt.Sprintf("ralphd: %s rewritten during an iteration\n\nIt was at %s; ralphd put it back there and keeps here what it was found at, with the uncommitted work.\n", ref, old), old)
			if tip == "" {
				name = ""
			}
			return name, err
		}
	}
	return RestoreRef(ctx, h.Repo, ref, old, got, what, now)
}

// ancestor reports whether old is an ancestor of got (both commits).
func (h *History) ancestor(ctx context.Context, old, got string) bool {
	if got == "" {
		return false
	}
	_, err := Output(ctx, h.Repo, "merge-base", "--is-ancestor", old, got)
	return err == nil
}

// unreachable returns which of objs no ref reaches now. The commit-graph
// is not read: it is a file the agent can write, and one that lies about
// parents would make a lost commit look reachable.
func (h *History) unreachable(ctx context.Context, objs []string) (map[string]bool, error) {
	args := append([]string{"-c", "core.commitGraph=false", "rev-list", "--objects", "--no-object-names"}, objs...)
	out, err := Output(ctx, h.Repo, append(args, "--not", "--all")...)
	if err != nil {
		return nil, fmt.Errorf("check the history: %w", err)
	}
	want := map[string]bool{}
	for _, o := range objs {
		want[o] = true
	}
	found := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if want[l] {
			found[l] = true
		}
	}
	return found, nil
}

// read returns every held ref and the object it points at.
func (h *History) read(ctx context.Context) (map[string]string, error) {
	out, err := Output(ctx, h.Repo, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, fmt.Errorf("read the refs: %w", err)
	}
	refs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		obj, ref, ok := strings.Cut(l, " ")
		if !ok || !IsHash(obj) || slices.ContainsFunc(h.Skip, func(p string) bool { return strings.HasPrefix(ref, p) }) {
			continue
		}
		refs[ref] = obj
	}
	return refs, nil
}

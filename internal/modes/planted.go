package modes

import (
	"github.com/ralphd/ralphd/internal/git"
)

// scrubGit removes what the iteration's code planted where git opens a
// file (a FIFO as a loose ref or a .gitignore, a link to /dev/zero as a
// reflog, a directory as HEAD: see gitscrub), before the judgement's git
// calls, which would block or read without end there, and records each
// as a violation of the iteration. It returns one line for each. Workers
// scrub in the pool (pool_planted.go), whose ledger charges every window
// that was open, as it does a move of a ref.
func (l *Loop) scrubGit(res *Result, it *buildIter) []string {
	if l.seat != nil || it.held.gitCommonDir == "" {
		return nil
	}
	r := &git.Scrubber{Common: it.held.gitCommonDir}
	if it.held.headRef != "" {
		r.Heads = map[string]string{l.Dir: it.held.headRef}
	}
	found, err := r.Scrub(l.Dir)
	if err == nil {
		var inTree []git.Planted
		inTree, err = git.ScrubTree(l.Dir)
		found = append(found, inTree...)
	}
	if err != nil {
		l.human().Error("could not look for what was planted in the git directory", "err", err)
	}
	var lines []string
	for _, f := range found {
		d := f.String()
		l.violation(res, it, it.issue.ID, "git_planted", d, "removed: "+d)
		l.human().Warn("something was planted where git opens a file: removed", "detail", d)
		lines = append(lines, d)
	}
	return lines
}

package modes

import (
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/logjsonl"
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
		it.fixed = append(it.fixed, "removed: "+d)
		it.rec.Violations = append(it.rec.Violations, d)
		res.Violations++
		l.event(logjsonl.EventViolation, logjsonl.Violation{Iteration: it.n, IssueID: it.issue.ID, Mode: ModeBuild, Kind: "git_planted", Detail: d})
		l.human().Warn("something was planted where git opens a file: removed", "detail", d)
		lines = append(lines, d)
	}
	return lines
}

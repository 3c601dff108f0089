package modes

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/git"
)

// Across clones, bd's word that a blocker is closed says nothing of its
// work: the other clone's ralphd closes it when its agent is done, and
// pushes the work only after its own merge queue has rebased and
// verified it. A dependent started in between would start from a remote
// target without the blocker's work. So, with a remote, a pool notes on
// each issue it integrates where its work went (noteIntegrated), and a
// worker whose claim depends on a blocker closed by another ralphd's
// worker waits until that note names a commit the remote's target holds
// (awaitRemoteBlocker): bounded, and given back (not an attempt) if the
// blocker is reopened or its work does not arrive in time.

// Defaults for the wait on a blocker another clone closed.
const (
	DefaultRemoteWait = 10 * time.Minute
	remotePoll        = time.Second
)

// integratedNote is the note a pool appends to an issue whose work it
// pushed: "ralphd: integrated into <remote>/<target> at <commit>".
const integratedNote = "ralphd: integrated into %s/%s at %s"

// integratedRE finds the commits integratedNote lines name.
var integratedRE = regexp.MustCompile(`(?m)^ralphd: integrated into \S+ at ([0-9a-f]{40}|[0-9a-f]{64})\s*$`)

// noteIntegrated notes on id that its work reached the remote at commit.
// A failure is logged, not fatal: another clone's dependent then waits
// until its bound.
func (p *Pool) noteIntegrated(ctx context.Context, worker, actor, id, commit string) {
	note := fmt.Sprintf(integratedNote, p.Queue.Remote, p.Target, commit)
	if _, err := p.Client(actor, p.Queue.Repo).AppendNotes(ctx, id, note); err != nil {
		p.log(Event{Worker: worker, Issue: id, Kind: "note-failed", Detail: fmt.Sprintf("could not note where the work went: %v", err)})
	}
}

// noteBranch notes on id that its work was put on branch (on the
// remote, with one) at commit, for the person who merges it.
func (p *Pool) noteBranch(ctx context.Context, worker, actor, id, branch, commit string) {
	where := branch
	if p.Queue.Remote != "" {
		where = p.Queue.Remote + "/" + branch
	}
	note := fmt.Sprintf("ralphd: the work is on %s at %s, rebased onto %s and verified; ralphd merges nothing", where, commit, p.Target)
	if _, err := p.Client(actor, p.Queue.Repo).AppendNotes(ctx, id, note); err != nil {
		p.log(Event{Worker: worker, Issue: id, Kind: "note-failed", Detail: fmt.Sprintf("could not note where the work went: %v", err)})
	}
}

// integratedCommits returns the commits integratedNote lines in notes
// name.
func integratedCommits(notes string) []string {
	var out []string
	for _, m := range integratedRE.FindAllStringSubmatch(notes, -1) {
		out = append(out, m[1])
	}
	return out
}

// ownActor reports whether actor is one of this pool's workers'.
func (p *Pool) ownActor(actor string) bool {
	for i := 1; i <= max(p.Workers, 1); i++ {
		if p.actor(Name(i)) == actor {
			return true
		}
	}
	return false
}

// otherRalphd reports whether a closed blocker b was worked by another
// ralphd's worker (its assignee, which bd keeps on close, is a ralphd
// actor not of this pool): its work then reaches the remote only after
// that ralphd's queue pushes it.
func (p *Pool) otherRalphd(b beads.Issue) bool {
	return b.Status == beads.StatusClosed && strings.HasPrefix(b.Assignee, "ralphd/") && !p.ownActor(b.Assignee)
}

// awaitRemoteBlocker waits, with a remote, until the work of blocker d of
// id, closed by another ralphd's worker, is on the remote's target. It
// returns why the dependent must be given back instead ("" to go on).
func (p *Pool) awaitRemoteBlocker(ctx context.Context, worker, actor, id string, d beads.Dependency) (string, error) {
	wait := p.RemoteWait
	if wait <= 0 {
		wait = DefaultRemoteWait
	}
	deadline := time.Now().Add(wait)
	client := p.Client(actor, p.Queue.Repo)
	logged := false
	for {
		b, err := client.Show(ctx, d.DependsOnID)
		if err != nil {
			return "", fmt.Errorf("worker %s: blocker %s of %s: %w", worker, d.DependsOnID, id, err)
		}
		switch {
		case b.Status != beads.StatusClosed:
			return fmt.Sprintf("%s, which it depends on, is %s again", d.DependsOnID, b.Status), nil
		case !p.otherRalphd(b):
			return "", nil // closed by hand, or here: its work is here, or never coming
		}
		if commits := integratedCommits(b.Notes); len(commits) > 0 {
			tip, err := p.Queue.Base(ctx) // fetches the remote's target
			if err != nil {
				return "", fmt.Errorf("worker %s: blocker %s of %s: %w", worker, d.DependsOnID, id, err)
			}
			for _, c := range commits {
				if _, err := git.Output(ctx, p.Queue.Repo, "merge-base", "--is-ancestor", c, tip); err == nil {
					return "", nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("%s, which it depends on, was closed by %s, but its work is not on %s/%s after %s", d.DependsOnID, b.Assignee, p.Queue.Remote, p.Target, wait), nil
		}
		if !logged {
			p.log(Event{Worker: worker, Issue: id, Kind: "waiting", Detail: fmt.Sprintf("for %s, closed by %s, to reach %s/%s", d.DependsOnID, b.Assignee, p.Queue.Remote, p.Target)})
			logged = true
		}
		t := time.NewTimer(remotePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", ctx.Err()
		case <-t.C:
		}
	}
}

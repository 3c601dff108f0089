package beads

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"
)

// countingShows counts the Shows of a fakeTracker.
type countingShows struct {
	*fakeTracker
	shows int
}

func (c *countingShows) Show(ctx context.Context, id string) (Issue, error) {
	c.shows++
	return c.fakeTracker.Show(ctx, id)
}

// TestReadBackSeam: a Claimer with ReadBack reads the claim back through
// it, and through Show only when the reading does not hold the issue; the
// rule (in_progress, assigned to the actor) is the same either way.
func TestReadBackSeam(t *testing.T) {
	other := Issue{ID: "a-1", Status: StatusInProgress, Assignee: "ralphd/other/w2"}
	for _, c := range []struct {
		name      string
		read      Issue
		found     bool
		readErr   error
		show      Issue
		want      ClaimOutcome
		wantShows int
		wantErr   bool
	}{
		{"reading holds the claim", mine, true, nil, other, Won, 0, false},
		{"reading shows another holder", other, true, nil, mine, Lost, 0, false},
		{"reading shows it open", Issue{ID: "a-1", Status: StatusOpen}, true, nil, mine, Lost, 0, false},
		{"not in the reading: show decides (won)", Issue{}, false, nil, mine, Won, 1, false},
		{"not in the reading: show decides (lost)", Issue{}, false, nil, other, Lost, 1, false},
		{"the reading fails", Issue{}, false, errors.New("bd list: exit 1"), mine, 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			tr := &countingShows{fakeTracker: &fakeTracker{claims: []step{{issue: mine, ok: true}}, shows: map[string]Issue{"a-1": c.show}}}
			var asked []string
			cl := &Claimer{Tracker: tr, Actor: actor, ReadBack: func(ctx context.Context, claimed Issue) (Issue, bool, error) {
				asked = append(asked, claimed.ID)
				return c.read, c.found, c.readErr
			}}
			res, err := cl.Next(context.Background())
			is.Equal(asked, []string{"a-1"})
			is.Equal(tr.shows, c.wantShows)
			is.Equal(err != nil, c.wantErr)
			if c.wantErr {
				return
			}
			is.Equal(res.Outcome, c.want)
		})
	}
}

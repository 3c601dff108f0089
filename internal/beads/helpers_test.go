// Test-only helpers: production code never calls these.

package beads

import (
	"context"
	"fmt"
)

// Release gives up a claim the actor holds: it reads the issue and, only
// if the actor still holds it, sets it open with no assignee. It returns
// false when the actor did not hold it (nothing is changed then: bd lets
// any actor release any claim, so the check is ralphd's).
func (c *Claimer) Release(ctx context.Context, id string) (bool, error) {
	got, err := c.Tracker.Show(ctx, id)
	if err != nil {
		return false, fmt.Errorf("release %s: %w", id, err)
	}
	if !Holds(got, c.Actor) {
		return false, nil
	}
	if _, err := c.Tracker.Release(ctx, id); err != nil {
		return false, fmt.Errorf("release %s: %w", id, err)
	}
	return true, nil
}

package mergeq

import (
	"errors"
	"fmt"

	"github.com/ralphd/ralphd/internal/workertree"
)

// scrub removes what an agent planted where git opens files (q.Scrub),
// and reports each finding to Moved as a move, before the queue's git
// work: a FIFO there would hold the queue for its git's timeout.
func (q *Queue) scrub() error {
	if q.Scrub == nil {
		return nil
	}
	found, err := q.Scrub.Scrub()
	moves := make([]workertree.Move, 0, len(found))
	for _, p := range found {
		moves = append(moves, workertree.Move{Ref: p.Path, Planted: p.String(), Err: p.Err})
	}
	if rerr := q.report(moves); rerr != nil || err != nil {
		return fmt.Errorf("remove what was planted in the git directory: %w", errors.Join(err, rerr))
	}
	return nil
}

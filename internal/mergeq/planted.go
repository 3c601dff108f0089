package mergeq

// scrub calls q.Scrub, when set.
func (q *Queue) scrub() error {
	if q.Scrub == nil {
		return nil
	}
	return q.Scrub()
}

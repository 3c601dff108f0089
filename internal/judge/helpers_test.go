// Test-only helpers: production code never calls these.

package judge

// Replay runs Next over a whole attempt history, oldest first, from the zero
// state, and returns the final state and decision.
func (p Policy) Replay(history []Outcome) (State, Decision) {
	var s State
	d := Decision{Tier: TierNone, MaxShifts: p.withDefaults().MaxStrategyShifts}
	for _, o := range history {
		s, d = p.Next(s, o)
	}
	return s, d
}

// Fingerprint returns the fingerprint of a failure line with a zero
// Normalizer. See Normalizer.Fingerprint.
func Fingerprint(line string) string {
	return Normalizer{}.Fingerprint(line)
}

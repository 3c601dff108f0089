// Test-only helpers: production code never calls these.

package logjsonl

// Func adapts a function to a [Sink].
type Func func(Event)

// Observe calls f(ev).
func (f Func) Observe(ev Event) { f(ev) }

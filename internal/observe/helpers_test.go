// Test-only helpers: production code never calls these.

package observe

// Func adapts a function to a [Sink].
type Func func(Event)

// Observe calls f(ev).
func (f Func) Observe(ev Event) { f(ev) }

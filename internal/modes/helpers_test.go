// Test-only helpers: production code never calls these.

package modes

// Status returns every worker's status, by worker name.
func (p *Pool) Status() []WorkerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.statusLocked()
}

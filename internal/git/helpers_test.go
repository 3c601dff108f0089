// Test-only helpers: production code never calls these.

package git

import (
	"context"
	"fmt"
)

// Remove saves the work in worker's worktree and removes it. The branch
// stays.
func (m *Manager) Remove(ctx context.Context, worker, base string) ([]Saved, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := CheckWorker(worker); err != nil {
		return nil, err
	}
	t := m.tree(worker)
	baseCommit, err := m.commit(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("remove worktree of %s: %w", worker, err)
	}
	registered, err := m.registered(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := registered[t.Dir]; !ok {
		return nil, m.moveAside(t.Dir)
	}
	return m.removeTree(ctx, t, baseCommit)
}

package modes

import (
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/guard"
)

// setBaseline makes s the workers' shared baseline, records its epics
// and their children, and, with a scope, which issues are under it there. The caller holds judging (or
// no worker runs yet).
func (p *Pool) setBaseline(s guard.Snapshot) {
	p.baseline = s
	p.epics.Store(familyOf(s))
	if p.Scope != "" {
		ids := beads.Descendants(s, p.Scope)
		p.scoped.Store(&ids)
	}
}

// inScope reports whether is was under the run's scope when the last
// judgement ended. `bd ready --parent` answers from the tracker as it is
// now, and another worker's agent may have moved an issue into the scope
// around the guard (a parent change is PLANNING's): until a judgement
// reverts it, that issue is not in scope here, and no worker claims it.
func (p *Pool) inScope(is beads.Issue) bool {
	ids := p.scoped.Load()
	return ids != nil && (*ids)[is.ID]
}

package modes

import (
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
)

// Agent is one entry of the configured list of agents: a backend and the
// model to ask it for.
type Agent struct {
	// Name is how the entry is written in the configuration ("claude",
	// "codex:gpt-5"): unique in the list, it names the agent in logs and
	// reports.
	Name    string
	Backend agent.Backend
	Model   string // "" for the backend's default
}

// Rota decides which of the configured agents runs the next iteration: the
// first in the list that is usable and not waiting out a usage limit. An
// agent that hits a usage limit sits out until its limit ends (Limited); one
// that cannot run at all (not logged in, invalid key) sits out for the rest
// of the run (Unusable). It is safe for concurrent use.
type Rota struct {
	mu       sync.Mutex
	agents   []Agent
	until    map[string]time.Time // usage limits, by agent name
	unusable map[string]string    // why, by agent name
}

// NewRota returns a rota over agents, in order of preference.
func NewRota(agents ...Agent) *Rota {
	return &Rota{agents: agents, until: map[string]time.Time{}, unusable: map[string]string{}}
}

// Len returns the number of agents in the list, usable or not.
func (r *Rota) Len() int { return len(r.agents) }

// Next returns the agent to run at now: the first usable one whose usage
// limit, if any, has ended. ok is false when every usable agent is still
// limited (or none is usable); a is then the usable agent whose limit ends
// first, if there is one.
func (r *Rota) Next(now time.Time) (a Agent, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first Agent
	var firstEnd time.Time
	for _, c := range r.agents {
		if _, out := r.unusable[c.Name]; out {
			continue
		}
		end := r.until[c.Name]
		if !now.Before(end) {
			return c, true
		}
		if firstEnd.IsZero() || end.Before(firstEnd) {
			first, firstEnd = c, end
		}
	}
	return first, false
}

// Wake returns when the first usage limit of a usable agent ends: the
// zero time when a usable agent has none, or no agent is usable.
func (r *Rota) Wake() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var wake time.Time
	for _, c := range r.agents {
		if _, out := r.unusable[c.Name]; out {
			continue
		}
		end, limited := r.until[c.Name]
		if !limited {
			return time.Time{}
		}
		if wake.IsZero() || end.Before(wake) {
			wake = end
		}
	}
	return wake
}

// Limited records that the agent called name hit a usage limit that ends
// at until.
func (r *Rota) Limited(name string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until[name] = until
}

// Lift ends every usage limit that ends at or before t: the run has waited
// for them.
func (r *Rota) Lift(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, end := range r.until {
		if !end.After(t) {
			delete(r.until, name)
		}
	}
}

// Unusable takes the agent called name out of the list for the rest of
// the run, for the reason why. It reports whether another agent is still
// usable; when none is, the agent stays in the list, so that a run that
// waits for it (the daemon) tries it again.
func (r *Rota) Unusable(name, why string) (others bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.agents {
		if _, out := r.unusable[c.Name]; !out && c.Name != name {
			r.unusable[name] = why
			return true
		}
	}
	return false
}

// Dropped returns the agents taken out of the list, with why, in list
// order.
func (r *Rota) Dropped() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.agents {
		if why, ok := r.unusable[c.Name]; ok {
			out = append(out, c.Name+": "+why)
		}
	}
	return out
}

package modes

import (
	"fmt"
	"sync"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/logjsonl"
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

// Readmit puts every agent taken out back in the list: the daemon has
// waited for a person to fix the last one, who may have fixed the others.
func (r *Rota) Readmit() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.unusable)
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

// fallback reports whether the loop has agents to fall back on.
func (l *Loop) fallback() bool { return l.Rota != nil && l.Rota.Len() > 1 }

// chooseAgent makes the rota's next agent the one that runs: the first
// usable one whose usage limit has ended or, when every one is limited,
// the one whose limit ends first.
func (l *Loop) chooseAgent() {
	if l.Rota == nil {
		return
	}
	a, _ := l.Rota.Next(l.now())
	if a.Name == "" || a.Name == l.cur.Name {
		return
	}
	if l.cur.Name != "" {
		l.event(logjsonl.EventDecision, logjsonl.Decision{Decision: "switch_agent", Reason: l.cur.Name + " -> " + a.Name})
		l.human().Info("switching agent", "from", l.cur.Name, "to", a.Name)
	}
	l.cur, l.Backend = a, a.Backend
}

// agentName names the agent that runs now, as the configuration does.
func (l *Loop) agentName() string {
	if l.cur.Name != "" {
		return l.cur.Name
	}
	return l.Backend.Name()
}

// agentModel is the model the agent that runs now is asked for.
func (l *Loop) agentModel() string {
	if l.Rota != nil {
		return l.cur.Model
	}
	return l.Config.Model
}

// agentNames lists the agents to fall back on, when there are several.
func (l *Loop) agentNames() []string {
	if !l.fallback() {
		return nil
	}
	var names []string
	for _, a := range l.Rota.agents {
		names = append(names, a.Name)
	}
	return names
}

// agentKV is the agent for an iteration's human log line, when there are
// several to tell apart.
func (l *Loop) agentKV() []any {
	if !l.fallback() {
		return nil
	}
	return []any{"agent", l.agentName()}
}

// limitAgent takes the running agent out of the rota until its usage limit
// ends: the reset it reported, or the quota backoff's next step when it
// reported none (never beyond quota_backoff_max). It reports whether
// another agent can run meanwhile; when none can, the caller waits.
func (l *Loop) limitAgent(it iteration, quota *backoff) bool {
	if !l.fallback() {
		return false
	}
	now := l.now()
	until := now.Add(quotaWait(now, quota, it.resetAt, it.resetRounded))
	name := l.agentName()
	l.Rota.Limited(name, until)
	next, ok := l.Rota.Next(now)
	why := fmt.Sprintf("%s is at a usage limit until %s: %s", name, until.UTC().Format(time.RFC3339), it.reason)
	l.event(logjsonl.EventDecision, logjsonl.Decision{Decision: "agent_limited", Reason: why})
	if ok {
		l.human().Warn("agent rate-limited; another runs until the limit ends", "agent", name, "until", until.Format(time.TimeOnly), "next", next.Name)
	}
	return ok
}

// dropAgent takes the running agent, which cannot run at all (not logged
// in, invalid key), out of the rota for the rest of the run. It reports
// whether another agent is left to run; when none is, the run stops as
// with a single agent.
func (l *Loop) dropAgent(res *Result, why string) bool {
	if !l.fallback() {
		return false
	}
	name := l.agentName()
	if !l.Rota.Unusable(name, why) {
		return false
	}
	res.DroppedAgents = append(res.DroppedAgents, name+": "+why)
	l.event(logjsonl.EventDecision, logjsonl.Decision{Decision: "drop_agent", Reason: name + " cannot run, and is out for the rest of the run: " + why})
	l.human().Error("agent unusable; out for the rest of the run", "agent", name, "why", why)
	return true
}

// rotaWake is when the first usage limit ends, when every agent of
// several is limited; the zero time otherwise.
func (l *Loop) rotaWake() time.Time {
	if !l.fallback() {
		return time.Time{}
	}
	return l.Rota.Wake()
}

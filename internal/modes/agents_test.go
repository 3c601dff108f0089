package modes

import (
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/config"
)

// TestRota walks a rota of three agents through usage limits, their ends
// and auth failures on a fake clock, asking after each step which agent
// runs next.
func TestRota(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	type step struct {
		limit    string // agent that hits a usage limit until limitEnd
		limitEnd int    // minutes after t0
		drop     string // agent whose key is refused
		lift     int    // minutes: lift the limits ending by then (0: none)
		now      int    // minutes after t0 when Next is asked
		want     string // the agent Next returns
		wantOK   bool
		others   bool // drop: another agent was still usable
		wake     int  // minutes: Wake afterwards (-1: zero time)
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the first agent runs while nothing is limited", []step{
			{now: 0, want: "claude", wantOK: true, wake: -1},
		}},
		{"a limit hands over to the next agent until it ends", []step{
			{limit: "claude", limitEnd: 30, now: 1, want: "codex", wantOK: true, wake: -1},
			{now: 29, want: "codex", wantOK: true, wake: -1},
			{now: 30, want: "claude", wantOK: true, wake: -1}, // the reset has passed: back to the first
		}},
		{"limits on two agents leave the third", []step{
			{limit: "claude", limitEnd: 60, now: 0, want: "codex", wantOK: true, wake: -1},
			{limit: "codex", limitEnd: 20, now: 1, want: "gemini", wantOK: true, wake: -1},
			{now: 20, want: "codex", wantOK: true, wake: -1},
		}},
		{"every agent limited: none runs; the earliest reset is the wake", []step{
			{limit: "claude", limitEnd: 60, now: 0, want: "codex", wantOK: true, wake: -1},
			{limit: "codex", limitEnd: 20, now: 0, want: "gemini", wantOK: true, wake: -1},
			{limit: "gemini", limitEnd: 45, now: 1, want: "codex", wantOK: false, wake: 20},
			// The run waited for the first reset (its clock may not have
			// moved, as in tests): that agent is free again.
			{lift: 20, now: 1, want: "codex", wantOK: true, wake: -1},
		}},
		{"an auth failure drops the agent for the run", []step{
			{drop: "claude", others: true, now: 0, want: "codex", wantOK: true, wake: -1},
			{now: 600, want: "codex", wantOK: true, wake: -1},
		}},
		{"the last usable agent is never dropped", []step{
			{drop: "claude", others: true, now: 0, want: "codex", wantOK: true, wake: -1},
			{drop: "gemini", others: true, now: 0, want: "codex", wantOK: true, wake: -1},
			{drop: "codex", others: false, now: 0, want: "codex", wantOK: true, wake: -1},
		}},
		{"a dropped agent's wake does not count", []step{
			{limit: "claude", limitEnd: 5, now: 0, want: "codex", wantOK: true, wake: -1},
			{drop: "claude", others: true, limit: "codex", limitEnd: 10, now: 0, want: "gemini", wantOK: true, wake: -1},
			{limit: "gemini", limitEnd: 15, now: 0, want: "codex", wantOK: false, wake: 10},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := NewRota(Agent{Name: "claude"}, Agent{Name: "codex"}, Agent{Name: "gemini"})
			for _, s := range tc.steps {
				if s.drop != "" {
					is.Equal(r.Unusable(s.drop, "invalid key"), s.others) // whether another agent was left
				}
				if s.limit != "" {
					r.Limited(s.limit, at(s.limitEnd))
				}
				if s.lift > 0 {
					r.Lift(at(s.lift))
				}
				a, ok := r.Next(at(s.now))
				is.Equal(a.Name, s.want) // the agent to run
				is.Equal(ok, s.wantOK)   // whether it may run now
				wake := r.Wake()
				if s.wake < 0 {
					is.True(wake.IsZero()) // some usable agent is not limited
				} else {
					is.Equal(wake, at(s.wake)) // the first limit to end
				}
			}
		})
	}
}

// TestRotaDropped lists the agents taken out, with why, in list order.
func TestRotaDropped(t *testing.T) {
	is := is.New(t)
	r := NewRota(Agent{Name: "claude"}, Agent{Name: "codex:gpt-5"}, Agent{Name: "gemini"})
	r.Unusable("gemini", "not logged in")
	r.Unusable("claude", "invalid API key")
	is.Equal(r.Dropped(), []string{"claude: invalid API key", "gemini: not logged in"})
	is.Equal(r.Len(), 3)
	r.Readmit()
	is.Equal(len(r.Dropped()), 0) // all back after the daemon's wait
	a, ok := r.Next(time.Now())
	is.True(ok)
	is.Equal(a.Name, "claude")
}

// TestRotaSandboxFollowsTheAgent: the iteration's backend is the rota's
// choice, so its sandbox lets through that backend's model API hosts and
// asks for its model, and both follow a switch and the switch back.
func TestRotaSandboxFollowsTheAgent(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	l := &Loop{Deps: Deps{
		Config: &config.Config{Model: "ignored with a list"},
		Rota:   NewRota(Agent{Name: "claude", Backend: agent.Claude{}}, Agent{Name: "codex:gpt-5", Backend: agent.Codex{}, Model: "gpt-5"}),
		Env:    []string{"PATH=/usr/bin"},
		Now:    func() time.Time { return now },
	}}
	l.chooseAgent()
	is.Equal(l.Backend.Name(), "claude")
	is.True(slices.Contains(l.allowEntries(), "api.anthropic.com")) // Claude's API
	is.Equal(l.agentModel(), "")                                    // the entry's model, not the model key

	l.Rota.Limited("claude", now.Add(time.Hour))
	l.chooseAgent()
	is.Equal(l.Backend.Name(), "codex")
	is.True(slices.Contains(l.allowEntries(), "api.openai.com"))     // now Codex's
	is.True(!slices.Contains(l.allowEntries(), "api.anthropic.com")) // and no longer Claude's
	is.Equal(l.agentModel(), "gpt-5")

	now = now.Add(time.Hour)
	l.chooseAgent()
	is.Equal(l.Backend.Name(), "claude") // the limit is over: back to the first
}

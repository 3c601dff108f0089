package modes

import (
	"fmt"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/prompts"
)

// Resuming an interrupted BUILD session (docs/agents.md, "Resuming"):
//
//   - While the agent runs, the first session id its stream announces is
//     recorded in the running record (runAgent), before any tool of the
//     agent's has run: a line the agent's code writes into the CLI's
//     output later cannot change it.
//   - When the run ends interrupted after the agent had started working
//     (timeout, a signal, a usage limit, a crash of the CLI), or at the
//     next start's sweep when ralphd died, the backend (an agent.Resumer)
//     reads the session's files back from its CLI's dirs, and ralphd keeps
//     them in its state dir (state.Resume), with what interrupted the run
//     and what ralphd found afterwards.
//   - The next attempt on the issue by the same agent and model puts the
//     files back and resumes the session with a short prompt
//     (prompts.Resume); it counts no second attempt for a timed-out one.
//     A resumed session is not resumed again, and a resume that fails
//     before the agent does anything falls back to a fresh session in the
//     same iteration.

// firstSession keeps the first session id a run's stream announces. The
// CLI announces it before the agent runs any tool; a line the agent's
// code writes into the CLI's output later (through /proc/<pid>/fd/1)
// comes after it, and cannot choose the session ralphd resumes.
type firstSession struct{ id string }

// see takes ev's session id when it is the first valid one announced,
// and reports whether it did.
func (f *firstSession) see(ev agent.Event) bool {
	if ev.Kind != agent.EventInit || f.id != "" || !agent.ValidSessionID(ev.SessionID) {
		return false
	}
	f.id = ev.SessionID
	return true
}

// resumableStatus reports whether a run that ended with s was cut short
// (rather than finished, or never started), so its session is worth
// resuming.
func resumableStatus(s agent.Status) bool {
	switch s {
	case agent.StatusTimeout, agent.StatusInterrupted, agent.StatusRateLimited, agent.StatusCrashed:
		return true
	}
	return false
}

// resumeFailed reports whether a resumed run came to nothing: the CLI
// failed before the agent ran a single tool (the session is gone, or the
// CLI cannot read it). The iteration then starts a fresh session.
func resumeFailed(out agent.Outcome) bool {
	switch out.Status {
	case agent.StatusAgentError, agent.StatusCrashed, agent.StatusFatal:
		return out.ToolCalls == 0
	}
	return false
}

// interruptedWhy says, for the resume prompt and the log, what cut a run
// short.
func (l *Loop) interruptedWhy(out agent.Outcome) string {
	switch out.Status {
	case agent.StatusTimeout:
		return fmt.Sprintf("the iteration timeout (%s) ended it", l.Config.IterationTimeout)
	case agent.StatusInterrupted:
		return "ralphd was asked to stop (a signal) and ended it"
	case agent.StatusRateLimited:
		return "the agent hit a usage or rate limit: " + out.Reason
	case agent.StatusCrashed:
		return "the agent's process died without a result: " + out.Reason
	}
	return out.Reason
}

// agentHome is the home dir and environment the agent runs with.
func (l *Loop) agentHome() agent.Home {
	return agent.Home{Dir: l.getenv("HOME"), Getenv: l.getenv}
}

// saveSession reads back, through the backend, the session of a run of
// inv that ended cut short. It returns nil when there is nothing to keep:
// a backend that cannot resume, no session id, or files that cannot be
// read (said on the log).
func (l *Loop) saveSession(b agent.Backend, inv agent.Invocation, id string) *agent.Session {
	r, ok := b.(agent.Resumer)
	if !ok || id == "" {
		return nil
	}
	s, err := r.SaveSession(inv, id)
	if err != nil {
		l.human().Warn("could not keep the interrupted session; the next attempt starts afresh", "session", id, "err", err)
		return nil
	}
	return &s
}

// keepResume records s, the session of an interrupted iteration on it's
// issue, for its next attempt. counted says the iteration's attempt stays
// counted (a timeout), so the resume counts none.
func (l *Loop) keepResume(it *buildIter, s *agent.Session, counted bool, why string, found []string) {
	if s == nil {
		return
	}
	err := l.State.SaveResume(state.Resume{
		IssueID: it.issue.ID, Agent: l.Backend.Name(), Model: l.agentModel(), Attempt: it.attempt, Counted: counted,
		Why: why, Found: found, Session: *s, SavedAt: l.now(),
	})
	if err != nil {
		l.human().Warn("could not keep the interrupted session; the next attempt starts afresh", "issue", it.issue.ID, "err", err)
		return
	}
	l.human().Info("kept the interrupted session for the next attempt", "issue", it.issue.ID, "session", s.ID)
}

// foundAfter lists what ralphd found after an interrupted iteration, for
// the resume prompt: what it reverted and the checks it ran.
func foundAfter(it *buildIter) []string {
	var out []string
	for _, f := range it.fixed {
		out = append(out, "tracker or state changes reverted: "+f)
	}
	if len(it.fixed) == 0 {
		out = append(out, "no forbidden change to the tracker or ralphd's state")
	}
	for _, c := range it.checks {
		res := "passed"
		if !c.passed() {
			res = fmt.Sprintf("FAILED (exit %d, want %d)", c.ExitCode, c.Expect)
		}
		out = append(out, fmt.Sprintf("check `%s` %s", c.Command, res))
	}
	return out
}

// pendingResume returns the session to resume on issue by the agent about
// to run, or nil. A kept session of another agent or model stays for
// later; one this agent cannot resume is dropped.
func (l *Loop) pendingResume(issue string) *state.Resume {
	r, err := l.State.ResumeFor(issue)
	for _, w := range l.State.Warnings() {
		l.human().Warn(w, "issue", issue)
	}
	if err != nil {
		l.human().Warn("could not read the session to resume; starting afresh", "issue", issue, "err", err)
		return nil
	}
	if r == nil || r.Agent != l.Backend.Name() || r.Model != l.agentModel() {
		return nil
	}
	if !agent.CanResume(l.Backend) {
		_ = l.State.ClearResume(issue)
		return nil
	}
	return r
}

// resumePrompt renders the prompt of it's resumed session.
func (l *Loop) resumePrompt(it *buildIter) string {
	return prompts.Resume(prompts.ResumeData{
		IssueID: it.issue.ID, Title: it.issue.Title, Attempt: it.attempt, MaxAttempts: l.Config.MaxStuck,
		Why: it.resume.Why, Found: it.resume.Found,
	})
}

// resumeFellBack logs a resume that failed, before the fresh session the
// iteration starts instead.
func (l *Loop) resumeFellBack(it *buildIter, out agent.Outcome) {
	l.event(logjsonl.EventDecision, logjsonl.Decision{Iteration: it.n, IssueID: it.issue.ID, Decision: "resume_failed",
		Reason: fmt.Sprintf("session %s: %s (%s); a fresh session takes the iteration", it.resume.Session.ID, out.Status, out.Reason)})
	l.human().Warn("could not resume the session; starting a fresh one", "issue", it.issue.ID, "session", it.resume.Session.ID,
		"outcome", out.Status, "reason", out.Reason)
}

// sweptResume keeps, at the next start, the session of an iteration whose
// ralphd died: r is its running record, found what the sweep did. The
// session id is the one the running record holds, which ralphd wrote as
// the agent started.
func (l *Loop) sweptResume(r state.Running, gaveBack bool, found []string) {
	if r.Mode != ModeBuild || r.IssueID == "" || r.SessionID == "" || r.Resumed {
		return
	}
	b := l.backendNamed(r.Agent)
	if b == nil {
		return
	}
	s := l.saveSession(b, agent.Invocation{Mode: r.Mode, IssueID: r.IssueID, Dir: l.Dir, Home: l.agentHome()}, r.SessionID)
	if s == nil {
		return
	}
	err := l.State.SaveResume(state.Resume{
		IssueID: r.IssueID, Agent: r.Agent, Model: r.Model, Attempt: r.Attempt, Counted: !gaveBack && r.Attempt > 0,
		Why: "ralphd itself stopped during the iteration (killed, crashed or the machine went down)", Found: found,
		Session: *s, SavedAt: time.Now(),
	})
	if err != nil {
		l.human().Warn("could not keep the interrupted session; the next attempt starts afresh", "issue", r.IssueID, "err", err)
	}
}

// sessionFilesAge is how long the files agent CLIs' BUILD runs leave per
// issue in the CLI's own dirs (opencode's database of the issue) stay
// once they stopped changing, for an issue that neither closes nor goes
// stuck. ralphd needs them only until it has saved the session they hold
// (state.Resume keeps its own copy), so this bounds what piles up for
// issues left open; twice the iteration timeout, when longer, keeps a
// run under way elsewhere (another daemon sharing the home) safe.
const sessionFilesAge = 7 * 24 * time.Hour

// forgetSession removes what BUILD runs on issue left in the agent CLIs'
// dirs, once ralphd has no more use for it (the issue closed for good,
// or stuck), then prunes the other issues' old ones.
func (l *Loop) forgetSession(issue string) {
	if err := agent.DropSessionFiles(l.agentHome(), issue); err != nil {
		l.human().Warn("could not remove the agent's session files of the issue", "issue", issue, "err", err)
	}
	l.pruneSessions()
}

// pruneSessions removes the files BUILD runs left in the agent CLIs' dirs
// that have not changed for sessionFilesAge, except those of the issues
// a running record names: a run under way, or one a dead ralphd left,
// whose session the next start's sweep reads back. Nothing is pruned
// when the running records cannot be read. It returns how many issues'
// files it removed.
func (l *Loop) pruneSessions() int {
	busy, err := l.State.RunningIssues()
	if err != nil {
		l.human().Warn("could not read the running records; the agent's old session files stay", "err", err)
		return 0
	}
	// File times are the wall clock's, whatever clock the loop runs on.
	cutoff := time.Now().Add(-max(sessionFilesAge, 2*l.Config.IterationTimeout))
	n, err := agent.PruneSessionFiles(l.agentHome(), cutoff, busy)
	if err != nil {
		l.human().Warn("could not remove the agent's old session files", "err", err)
	}
	return n
}

// backendNamed returns the configured backend called name, or nil.
func (l *Loop) backendNamed(name string) agent.Backend {
	if l.Rota != nil {
		for _, a := range l.Rota.agents {
			if a.Backend.Name() == name {
				return a.Backend
			}
		}
	}
	if l.Backend != nil && l.Backend.Name() == name {
		return l.Backend
	}
	return nil
}

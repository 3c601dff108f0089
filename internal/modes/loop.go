package modes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/charmbracelet/log"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/beads"
	"github.com/ralphd/ralphd/internal/config"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/proc"
	"github.com/ralphd/ralphd/internal/sandbox"
	"github.com/ralphd/ralphd/internal/state"
	"github.com/ralphd/ralphd/prompts"
)

// Mode names, as written in logs, history and the guard's environment.
const (
	ModeBuild = "build"
	ModePlan  = "plan"
)

// StuckLabel marks an issue BUILD gave up on. PLANNING (or `ralphd reset`)
// clears it. It is the guard's: BUILD may not add it.
const StuckLabel = guard.StuckLabel

// PlanPromise is the completion promise that ends PLANNING early when it
// ends the agent's final result.
const PlanPromise = "<promise>PLAN_COMPLETE</promise>"

// StopReason says why a run stopped.
type StopReason string

// Stop reasons, as recorded in history and reports.
const (
	StopSuccess       StopReason = "success"        // no ready work left (or planning complete)
	StopAllSkipped    StopReason = "all_skipped"    // ready work exists but every issue is stuck
	StopMaxIterations StopReason = "max_iterations" // the cap was reached with ready work left
	StopBudget        StopReason = "budget"         // the cost cap was reached
	StopTimeout       StopReason = "timeout"        // the run's wall-clock limit was reached
	StopInterrupted   StopReason = "interrupted"    // a signal stopped the run
	StopAgentUnusable StopReason = "agent_unusable" // the agent cannot run at all
	StopError         StopReason = "error"          // a runtime error (bd failed, state unwritable)
)

// Errors a run ends with. The command line maps them to exit codes.
var (
	// ErrCapReached: the iteration cap or the cost budget stopped the run
	// with ready work left (exit 3).
	ErrCapReached = errors.New("iteration cap reached with ready work left")
	// ErrAgentUnusable: the agent is not installed, not logged in, or its
	// key is invalid (exit 5).
	ErrAgentUnusable = errors.New("agent unusable")
	// ErrAgentRecoverable marks an ErrAgentUnusable that a person can clear
	// without touching ralphd's setup (the agent is logged out, or out of
	// credit): the daemon waits it out. Every other ErrAgentUnusable (a
	// missing or mistyped agent command) ends the daemon too.
	ErrAgentRecoverable = errors.New("the agent may become usable again without a restart")
	// ErrInterrupted: a signal or the run timeout stopped the run.
	ErrInterrupted = errors.New("interrupted")
)

// agentUnusableError is the ErrAgentUnusable of an agent run whose outcome
// was StatusFatal.
type agentUnusableError struct {
	reason      string
	recoverable bool
}

func (e *agentUnusableError) Error() string { return ErrAgentUnusable.Error() + ": " + e.reason }

// Is matches ErrAgentUnusable, and ErrAgentRecoverable when a person can
// clear it.
func (e *agentUnusableError) Is(target error) bool {
	return target == ErrAgentUnusable || (e.recoverable && target == ErrAgentRecoverable)
}

// agentUnusable is the error of a StatusFatal outcome.
func agentUnusable(out agent.Outcome) error {
	return &agentUnusableError{reason: out.Reason, recoverable: out.Recoverable}
}

// Result summarises a run.
type Result struct {
	Mode       string
	RunID      string
	Stop       StopReason
	Reason     string // one human sentence about the stop
	Iterations int
	Closed     []string // issues closed (and verified) in this run
	Tried      []string // issues worked on in this run, in first-tried order
	Stuck      []string // issues marked stuck in this run
	Skipped    []string // stuck issues skipped in this run
	// waiting is, for each epic the run passed over, the children it
	// waited on last (epics.go); passed the epics the last pick passed
	// over.
	waiting map[string]string
	passed  []string
	// elsewhere are the ready issues the run passed over as assigned to
	// someone else, "<id> (<assignee>)" (claimsleft.go): its success
	// names them.
	elsewhere []string
	// FailureBranches are "<issue> <branch>" pairs: work kept on a
	// wip/ralph-fail-* branch when an issue was given up on.
	FailureBranches []string
	// PullRequests are the workers' pull requests (integrate = pr), each
	// in its last state.
	PullRequests []ReviewStatus
	Violations   int
	CostUSD      *float64
	Usage        agent.Usage
	Started      time.Time
	Ended        time.Time
	// Created are the issues BUILD created in this run (powers.go), and
	// Held those ready at its start that BUILD's changes held back.
	Created []string
	Held    []string
	// DroppedAgents are the agents taken out of the list for the run, each
	// with why ("codex: invalid API key").
	DroppedAgents []string

	ledgerOnce sync.Once
	built      *buildLedger
}

func (r *Result) tried(id string) {
	for _, x := range r.Tried {
		if x == id {
			return
		}
	}
	r.Tried = append(r.Tried, id)
}

func (r *Result) addCost(o agent.Outcome) {
	r.Usage = r.Usage.Add(o.Usage)
	if o.CostUSD != nil {
		c := *o.CostUSD
		if r.CostUSD != nil {
			c += *r.CostUSD
		}
		r.CostUSD = &c
	}
}

// Loop runs BUILD and PLANNING iterations. It is made of what it runs
// with (Deps), set when it is made and not changed after, and what its
// run learns as it goes (runState); what one iteration holds is that
// iteration's own (buildIter). cmd/ralphd makes one Loop per process; a
// pool makes one for each worker, each reading and each check from its
// own with derive, which says what they share.
type Loop struct {
	Deps
	runState
}

// Deps is what a Loop runs with. All but Backend are fixed once the Loop
// is made; with a Rota, Backend is the agent that runs now (chooseAgent
// sets it).
type Deps struct {
	Dir     string // the project's top-level directory
	Config  *config.Config
	BD      *beads.Client
	State   *state.Store
	Backend agent.Backend
	// Rota, when set, chooses each iteration's agent from the configured
	// list (agents.go), and Backend is the one running. Nil: Backend, with
	// Config.Model, runs every iteration.
	Rota    *Rota
	Prompts *prompts.Set
	Log     *logjsonl.Writer // nil when logging is off
	Human   *log.Logger      // one line per iteration start and end
	Out     io.Writer        // the end-of-run summary (stdout)
	RunID   string
	Version string

	// Self is ralphd's own executable: the guard on the agent's PATH and
	// the Claude hook run it.
	Self string
	// BDClient is the small bd client binary (ralphd-bd) installed beside
	// ralphd, when there is one; agents then get it as their bd instead of
	// a script that runs Self.
	BDClient string
	// RealBD is the absolute path of the user's bd, resolved once at start.
	RealBD string
	// Env is the environment agents start from.
	Env []string
	// Contain, when set, runs each agent in a cgroup of its own (see
	// agent.RunOptions.Contain); nil means process groups only.
	Contain *proc.Containment
	// ConfigDirs are ralphd's configuration dirs outside the project (the
	// global <XDG config home>/ralph): held across a BUILD iteration like
	// .ralph/, since the next run reads them.
	ConfigDirs []string
	// Sandbox says whether BUILD agents run under bwrap, and why not when
	// the setting allowed it.
	Sandbox sandbox.Decision

	// Now and Sleep are the clock; tests replace them.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	// OnStatus, when set, receives a short live status line (the daemon
	// forwards it to systemd).
	OnStatus func(string)

	// Observer, when set, receives every loop_meta event as it is emitted,
	// whether or not a run log is written (metrics, notifications, the
	// dashboard). It must not block.
	Observer logjsonl.Sink
}

// runState is what a Loop's run learns as it goes.
type runState struct {
	snap snapshotCache
	// dirtyAtStart: the tree had changes ralphd did not make when the run
	// started (allow_dirty), so it must not make failure branches.
	dirtyAtStart bool
	// guardedAbsent is what of the agent CLIs' configuration did not
	// exist when the BUILD iteration in flight began (guardedHold.absent),
	// for its running record.
	guardedAbsent []string
	// lastWorked is the issue the previous BUILD iteration worked on.
	lastWorked string
	// saidWaits are the epics the human log said the loop passes over,
	// with the children they waited on then (epics.go: passOver).
	saidWaits map[string]string
	// goOn is the work an interrupted iteration left in the tree, which
	// the run goes on from (treework.go); nil when there is none.
	goOn *state.TreeWork
	// treeChecked: the working tree was checked clean (or allowed dirty)
	// when this Loop's first BUILD run started.
	treeChecked bool
	// lastReady is the single loop's last `bd ready` answer (readycache.go).
	lastReady readyAnswer
	// seat is a worker's place in its pool; nil outside workers.
	seat *seat
	// cur is the entry of Rota that runs now.
	cur Agent
	// pin is which tracker the run's snapshots read, fixed at its start
	// (trackerpin.go); workers share it.
	pin *trackerPin
	// fleet is the daemon's place among the daemons sharing its tracker
	// (fleet.go); nil outside a daemon in bd's server mode.
	fleet *fleet
	// tracker is how the run reads the tracker (trackread.go); every Loop
	// of the run shares it.
	tracker *trackerReads
	// daemonReads: the Loop is a daemon's, whose runs may start from the
	// reading the run before ended with (trackread.go, carry).
	daemonReads bool
}

// derive makes a Loop for one part of this Loop's run (a worker, a
// reading, a check of the merge queue, a sweep) with deps d, at seat s
// (nil outside a pool). It shares the run's tracker pin and what the run
// found of the working tree at its start, and the daemon's fleet; its snapshot cache, its last
// issue, its last ready answer and its agent are its own.
func (l *Loop) derive(d Deps, s *seat) *Loop {
	return &Loop{Deps: d, runState: runState{
		pin:          l.pin,
		dirtyAtStart: l.dirtyAtStart,
		treeChecked:  l.treeChecked,
		seat:         s,
		fleet:        l.fleet,
		tracker:      l.reads(),
	}}
}

// repo is the project's git working tree.
func (l *Loop) repo() git.Repo { return git.Repo{Dir: l.Dir} }

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// sleep waits d through l.Sleep (a test's clock), or proc.Sleep.
func (l *Loop) sleep(ctx context.Context, d time.Duration) error {
	if l.Sleep != nil {
		return l.Sleep(ctx, d)
	}
	return proc.Sleep(ctx, d)
}

func (l *Loop) human() *log.Logger {
	if l.Human != nil {
		return l.Human
	}
	return log.New(io.Discard)
}

func (l *Loop) out() io.Writer {
	if l.Out != nil {
		return l.Out
	}
	return io.Discard
}

func (l *Loop) status(format string, args ...any) {
	if l.OnStatus != nil {
		l.OnStatus(fmt.Sprintf(format, args...))
	}
}

// event writes a loop_meta event to the run log when logging is on, and
// hands it to the Observer. A log that cannot be written is reported once on
// the human log and otherwise ignored: losing the log must not stop the work.
func (l *Loop) event(name string, data any) {
	if l.Observer != nil {
		l.Observer.Observe(logjsonl.Event{Name: name, Time: l.now(), Data: data})
	}
	if l.Log == nil {
		return
	}
	if l.State != nil && l.State.Worker() != "" {
		data = tagWorker(data, l.State.Worker())
	}
	if err := l.Log.Meta(name, data); err != nil {
		l.human().Warn("run log write failed; continuing without it", "err", err)
		l.Log = nil
	}
}

// tokensOf is u for a log event, which leaves out a run with no counts.
func tokensOf(u agent.Tokens) *agent.Tokens {
	if u.IsZero() {
		return nil
	}
	return &u
}

// environ returns the environment agents start from.
func (l *Loop) environ() []string {
	if l.Env != nil {
		return l.Env
	}
	return os.Environ()
}

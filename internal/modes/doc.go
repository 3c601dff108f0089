// Package modes is where ralphd's loop decisions are made: which issue a
// BUILD iteration works, when an issue is stuck, what an iteration's outcome
// means, when a run stops, and (in the daemon) when to plan, build or idle.
//
// Where to look:
//
//	outcome.go    where a BUILD iteration decides closed / reopened /
//	              still open (decide, decideClose), the outcome history
//	              records (Outcome, decideOutcome), and stuck, the one place
//	              both STUCK triggers meet; and acts on it (settle)
//	iteration.go  one BUILD iteration (buildIteration): start, run the
//	              agent, judge (judgeBuild), or give back a run that is not
//	              an attempt (isAttempt, giveBack)
//	judge.go      judging a failed attempt (judgeFailed), the escalation's
//	              prompt section, the STUCK note
//	build.go      the BUILD run: pick the next issue, mark stuck ones,
//	              revert violations, reopen failed closes
//	epics.go      an epic waits for its children: what the pick and the
//	              workers' claims (claimNext) pass over
//	claimsleft.go claims this clone's workers left on reopened issues,
//	              freed; what a run passes over for its assignee (and so
//	              what the daemon counts as work)
//	treework.go   the work an interrupted iteration left in the tree: the
//	              next run goes on from it, that issue first, or keeps it
//	              on a branch
//	gate.go       the verify and acceptance checks
//	planning_files.go, projectconfig.go, guarded.go
//	              what BUILD may not change outside the tracker, held
//	              across an iteration and put back: .ralph/ and ralphd's
//	              configuration, the agent CLIs' configuration in the
//	              project, and in your home
//	plan.go       PLANNING iterations; daemon.go the daemon cycle
//	run.go        a run's life: start, stop reasons, quota waits, the end;
//	              runOpts, what the daemon varies in the runs it makes
//	pool.go       K workers over one tracker: claims, worktrees, and the
//	              Iteration's Ended, which the pool switches on
//	workers.go    a BUILD run with workers (BuildWorkers): the pool's setup
//	              and one worker's iteration (workerIteration)
//	seat.go       what a worker's iteration shares with its pool: the
//	              baseline, the judging window, the pool's readings
//
// The per-issue attempt record (counter, escalation, verbatim attempts) is
// package state's: modes reads it with Store.Issue and changes it only
// through Store methods.
//
// Imports flow one way: modes uses beads, state, logjsonl, agent, guard,
// judge and tamper; none of those import modes or each other's internals.
// The command line (cmd/ralphd) only wires these together.
package modes

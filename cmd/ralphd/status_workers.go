package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/modes"
	"github.com/ralphd/ralphd/internal/state"
)

// workerJSON is one worker of a running `--workers` BUILD, as `ralphd
// status --json` prints it under "workers". The names are stable: fields
// may be added, never renamed or removed.
type workerJSON struct {
	Worker   string `json:"worker"`   // w1, w2, …
	Actor    string `json:"actor"`    // its bd actor, ralphd/<host>/<clone>/<worker>
	Worktree string `json:"worktree"` // its git worktree ("" before its first issue)
	Issue    string `json:"issue"`    // the issue it works on; "" when idle
	Attempt  int    `json:"attempt"`  // the attempt on that issue, from 1; 0 when idle
	// Since is when it took the issue (or became idle); ElapsedSeconds is
	// the whole seconds from then to the moment status ran.
	Since          time.Time `json:"since"`
	ElapsedSeconds int64     `json:"elapsed_seconds"`
	// Queued is the issue whose finished work the worker handed to the
	// merge queue, not yet on the target; "" when none.
	Queued string `json:"queued"`
}

// pullRequestJSON is a pull request the running `--workers` BUILD waits
// on or settled (integrate = pr), as `ralphd status --json` prints it
// under "pull_requests". Stable names, as workerJSON's.
type pullRequestJSON struct {
	Issue  string `json:"issue"`
	Number int    `json:"number"` // 0 until the forge opened it
	URL    string `json:"url"`
	Branch string `json:"branch"` // ralph/<issue>
	Commit string `json:"commit"` // the pushed work
	// State is "opening", "waiting for review", "checks failing",
	// "changes requested", "merged" or "closed".
	State          string    `json:"state"`
	Since          time.Time `json:"since"` // when the work was pushed
	ElapsedSeconds int64     `json:"elapsed_seconds"`
}

// statusJSON is the object of `ralphd status --json`: the state's Status,
// the workers and their pull requests.
type statusJSON struct {
	state.Status
	// Workers are the workers of the ralphd holding the project's lock,
	// when it runs with --workers; [] otherwise.
	Workers []workerJSON `json:"workers"`
	// PullRequests are its pull requests (integrate = pr); [] otherwise.
	PullRequests []pullRequestJSON `json:"pull_requests"`
}

// liveStatus reads the pool's status file at path and returns the
// workers and pull requests of the ralphd holding the project lock (lock; nil when none
// does). A file another ralphd wrote, one that died without removing it
// (SIGKILL), is not shown as live workers: the file names the PID of the
// ralphd whose pool wrote it, and it counts only when that is the lock's
// holder, and was written after it took the lock (a recycled PID). note
// says why a file that exists is not shown; it is "" when there is none
// or it is shown.
func liveStatus(path string, lock *state.LockInfo, now time.Time) (live []workerJSON, prs []pullRequestJSON, note string) {
	live, prs = []workerJSON{}, []pullRequestJSON{}
	// The status file is only ever replaced by a rename: a FIFO (that would
	// make status wait forever), a symlink, a device or a huge file in its
	// place was put there by someone else.
	data, err := atomicfile.Read(path, maxStatusSize)
	if errors.Is(err, fs.ErrNotExist) {
		return live, prs, ""
	}
	if err != nil {
		return live, prs, fmt.Sprintf("%s could not be read (%v); the workers are not shown", path, err)
	}
	f, err := modes.ParseStatusFile(data)
	if err != nil {
		return live, prs, fmt.Sprintf("%s is not a worker status ralphd wrote (%v); the workers are not shown", path, err)
	}
	if lock == nil || lock.PID != f.PID || before(f.Workers, lock.Since) {
		return live, prs, fmt.Sprintf("%s was left by a ralphd (PID %d) that is no longer running; its workers are not running (the next `--workers` run replaces the file)", path, f.PID)
	}
	for _, w := range f.Workers {
		live = append(live, workerJSON{
			Worker: w.Worker, Actor: w.Actor, Worktree: w.Worktree, Issue: w.Issue, Attempt: w.Attempt,
			Since: w.Since, ElapsedSeconds: max(int64(now.Sub(w.Since)/time.Second), 0), Queued: w.Queued,
		})
	}
	for _, r := range f.Reviews {
		prs = append(prs, pullRequestJSON{Issue: r.Issue, Number: r.PR, URL: r.URL, Branch: r.Branch, Commit: r.Commit, State: r.State,
			Since: r.Since, ElapsedSeconds: max(int64(now.Sub(r.Since)/time.Second), 0)})
	}
	return live, prs, ""
}

// maxStatusSize bounds the status file status reads: MaxStatusWorkers
// workers with long paths fit many times over.
const maxStatusSize = 4 << 20

// before reports whether any worker's time is before t, which a live
// worker's cannot be: the pool starts after its ralphd takes the lock.
func before(ws []modes.WorkerStatus, t time.Time) bool {
	for _, w := range ws {
		if w.Since.Before(t) {
			return true
		}
	}
	return false
}

// writeWorkers prints what each worker of the running `--workers` BUILD
// is doing; nothing when there is none.
func writeWorkers(w io.Writer, live []workerJSON) {
	if len(live) == 0 {
		return
	}
	fmt.Fprintf(w, "Workers: %d\n", len(live))
	for _, s := range live {
		elapsed := time.Duration(s.ElapsedSeconds) * time.Second
		queued := ""
		if s.Queued != "" {
			queued = "  (" + s.Queued + " in the merge queue)"
		}
		if s.Issue == "" {
			fmt.Fprintf(w, "  %-4s idle for %s  %s%s\n", s.Worker, elapsed, s.Worktree, queued)
			continue
		}
		fmt.Fprintf(w, "  %-4s %s attempt %d, %s  %s%s\n", s.Worker, s.Issue, s.Attempt, elapsed, s.Worktree, queued)
	}
}

// writePullRequests prints the pull requests of the running `--workers`
// BUILD (integrate = pr) and their state; nothing when there is none.
func writePullRequests(w io.Writer, prs []pullRequestJSON) {
	if len(prs) == 0 {
		return
	}
	fmt.Fprintf(w, "Pull requests: %d\n", len(prs))
	for _, p := range prs {
		number := "(not opened yet)"
		if p.Number != 0 {
			number = fmt.Sprintf("#%d", p.Number)
		}
		elapsed := time.Duration(p.ElapsedSeconds) * time.Second
		fmt.Fprintf(w, "  %s %s %s, pushed %s ago  %s %s\n", p.Issue, number, p.State, elapsed, p.Branch, p.URL)
	}
}

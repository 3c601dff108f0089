// Package state keeps ralphd's per-project operational state outside the
// project, so that `git status` stays clean.
//
// The layout is the one the bash loop (how-to-ralph-w-beads loop.sh with
// ralph-state.sh) already uses, extended with ralphd's own files:
//
//	<root>/projects/<id>/
//	    metadata.json        project_id, project_path, remote_url, created_at (+ ralphd fields)
//	    attempts.txt         one "issue-id:count" line per issue (shared with the bash loop)
//	    history.jsonl        one JSON record per finished iteration, append-only
//	    running.json         the agent that is running right now, if any
//	    tracker-pin.json     which tracker bd opened when ralphd first pinned it
//	    read-windows.json    the BUILD windows since the last full reading of the tracker (tracker_reads)
//	    ralphd.lock          flock'd by the running ralphd; holds its PID, mode and start
//	    logs/                JSONL logs (written by the logging package)
//	    reports/             end-of-run reports
//	    attempts/            per issue: <id>.json, the escalation's judgement, and
//	                         <id>.md, the verbatim record of the last attempts
//
// The root is a plain directory chosen by the caller ($RALPH_STATE_DIR, or
// <XDG state home>/ralph); this package never reads the environment for it.
//
// Every whole-file write goes through internal/atomicfile (temp file in the same
// directory, fsync, rename, fsync of the directory), and history.jsonl is
// appended with one write call per record, so a process killed at any
// instant leaves every file readable. Readers are tolerant: corrupt
// attempts lines are moved aside into attempts.txt.corrupt-<timestamp>, bad
// history lines are skipped, and in both cases a warning says so and the
// rest is used.
//
// # The attempt record
//
// An issue's counter, judgement and verbatim record are one IssueRecord,
// owned here: Issue loads it, IncrementAttempt and GiveBackAttempt count,
// RecordFailure stores a judged failure, and Reset (or ResetAll) clears the
// whole record at once, for `ralphd reset`, for PLANNING clearing a stuck
// label, and for a verified close. The counter anchors the record: the
// files beside it are read only while the counter is above 0, so clearing
// the counter (one atomic rewrite of attempts.txt) clears the record.
//
// # Durable counters
//
// Everything a run counts survives a SIGKILL because nothing is kept only in
// memory:
//   - attempts per issue live in attempts.txt, written before the agent starts;
//   - the iteration count, cost, tokens and fingerprints of a run are derived
//     from history.jsonl (SummarizeRun, SummarizeIssues, SummarizeAll), which
//     gets one line per finished iteration;
//   - the iteration in flight is described by running.json, written before the
//     agent starts and cleared after its history line is appended.
//
// The protocol for one iteration is therefore: IncrementAttempt, WriteRunning,
// run the agent, AppendHistory, ClearRunning. After a crash, the next start
// calls ReadRunning and, once the recorded process group is dealt with,
// SettleInterrupted, which is idempotent at every step: it gives the attempt
// back only if the counter still holds the attempt the record took, records
// the iteration as interrupted only if history does not already have it, and
// then clears the record.
package state

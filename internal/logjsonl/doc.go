// Package logjsonl writes and reads ralphd's run logs.
//
// A run log is one file per run, one JSON object per line. It interleaves
// two kinds of records:
//
//   - ralphd's own events, written by [Writer.Meta] (or by another process
//     with [AppendMeta]) as compact objects whose keys are always in this
//     order:
//
//     {"type":"loop_meta","event":"iteration_start","timestamp":"2026-01-28T15:30:00Z","data":{...}}
//
//   - the agent's output. A stdout line that is a JSON object is copied
//     verbatim, byte for byte; any other stdout line and every stderr line
//     is wrapped as
//
//     {"type":"agent_output","stream":"stderr","line":"..."}
//
// so that every line of the file is JSON and `jq` works on it. Two kinds of
// JSON stdout lines are wrapped too: a line longer than the bound below, and
// a line whose top-level "type" is "loop_meta", which could otherwise pass
// for one of ralphd's events. The format is
// the one the bash Ralph loop wrote, extended with more events (see the
// Event constants and the data types such as [IterationEnd]).
//
// Lines of any length are handled in bounded memory: a line longer than the
// writer's bound ([DefaultMaxLine] unless set) is split into wrapped chunks
// of at most [ChunkSize] bytes carrying "chunk" (1, 2, ...) and "final"
// fields, so nothing is dropped:
//
//	{"type":"agent_output","stream":"stdout","chunk":1,"final":false,"line":"..."}
//
// Joining the "line" of a line's chunks gives the line back.
//
// When several BUILD workers share the run's log, each record of a
// worker's agent gets the worker as its first key, {"ralph_worker":"w2",
// ...} ([WorkerKey], [Writer.WorkerStreamWriter]; [SplitWorker] takes it
// out again, giving back the exact bytes), and ralphd's events of a worker
// carry it as data.worker.
// Every record reaches the file in a single write call under one mutex, and
// the file is opened with O_APPEND, so records from concurrent goroutines and
// from other processes never interleave inside a line.
//
// The reading side serves `ralphd logs`: [ListRuns] summarises the runs in
// a log directory, [Render] turns one run into text for a person (the
// agent's lines as the backend that ran reads them, see
// agent.NewLogParser; raw text when none does), and
// [Follow] tails a run that is still being written.
package logjsonl

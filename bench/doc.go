// Package bench holds the pieces of ralphd's benchmark suite (scripts/bench)
// that are worth testing on their own: reading a process's CPU time, memory
// and wake-ups from /proc, the record of one recorded subprocess call,
// parsing `go test -bench` output, synthetic `bd ready --json` input for the
// scale benchmarks, and the report (a terminal table and docs/benchmarks.md).
//
// The programs that use them live under cmd/: ralphbench runs every
// measurement, bdrec records the calls ralphd makes to bd and git, and
// jsonlgen writes a synthetic agent stream of a given size.
package bench

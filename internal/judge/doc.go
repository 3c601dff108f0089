// Package judge holds the pure parts of judging one loop iteration: the
// error fingerprint of a failed verification, the acceptance commands of an
// issue, the progress signals between two attempts, the per-issue escalation
// state machine (strategy shift, context expansion, hard stop), the
// system-written attempt record that feeds the next prompt's "Previous
// attempts" section, and the check that a close reason cites evidence.
//
// Nothing here runs a subprocess or reads a clock. The only I/O is the
// attempt record file (WriteRecord, ReadRecord, PromptSection), which is
// written atomically. Every function is deterministic and safe on any input.
package judge

// Package judge holds the pure parts of judging one loop iteration: the
// error fingerprint of a failed verification, the acceptance commands of an
// issue, the progress signals between two attempts, the per-issue escalation
// state machine (strategy shift, context expansion, hard stop), the one
// decision that an issue is stuck (Stuck), the system-written attempt
// record that feeds the next prompt's "Previous attempts" section, and the
// check that a close reason cites evidence.
//
// Nothing here runs a subprocess, reads a clock or touches a file: every
// function decides from its inputs. Where the per-issue state is kept is
// package state's business. Every function is deterministic and safe on
// any input.
package judge

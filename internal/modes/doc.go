// Package modes is where ralphd's loop decisions are made: which issue a
// BUILD iteration works, when an issue is stuck, what an iteration's outcome
// means, when a run stops, and (in the daemon) when to plan, build or idle.
//
// Imports flow one way: modes uses beads, state, logjsonl, agent, guard,
// judge and tamper; none of those import modes or each other's internals.
// The command line (cmd/ralphd) only wires these together.
package modes

// Package guard enforces ralphd's separation of powers on the beads tracker.
//
// In BUILD mode an agent may read the tracker, create issues, add
// dependencies, set status (but not to closed), write notes, comments,
// description and design, claim or assign, add labels, close with a reason
// and reopen. Everything else (deleting, removing dependencies, changing
// priority, type, title or acceptance criteria, raw and bulk changes, and any
// command or flag ralphd does not know) belongs to PLANNING, which may run
// any bd command.
//
// The policy is data (policy.go) over bd's command-line grammar
// (grammar.go). It is enforced in two layers here:
//
//   - Layer 1, the guard: ralphd installs itself as `bd` first on the
//     agent's PATH. RunGuard parses the argv exactly as bd would (ParseArgs),
//     applies the policy (Decide), audits the call, and either runs the real
//     bd or refuses with a message the agent can act on.
//   - Layer 2, the agent's own permission system: DisallowedTools compiles
//     the policy into Claude Code deny rules, and Hook is a PreToolUse hook
//     that finds every bd call in a Bash command with a real shell parser
//     (ExtractBDCalls) and blocks the tool call if any is refused.
//
// Layer 3 (snapshots, diffs and reverts) lives elsewhere; it catches what
// these layers cannot see, such as the real bd called by absolute path from
// a script.
package guard

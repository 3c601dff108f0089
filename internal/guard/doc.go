// Package guard enforces ralphd's separation of powers on the beads tracker,
// and refuses every agent the forge CLIs' verbs that merge, approve or
// hand out the login's token (RuleForgeMerge, forge.go: one table).
//
// In BUILD mode an agent may read the tracker, create issues, add
// dependencies, set status (but not to closed), write notes, comments,
// description and design, claim or assign, add labels (but not ralphd's
// own, StuckLabel), close with a reason and reopen, on the work tree's
// tracker only. Everything else (deleting, removing dependencies, changing
// priority, type, title or acceptance criteria, raw and bulk changes, and any
// command or flag ralphd does not know) belongs to PLANNING, which may run
// any bd command.
//
// The policy is data (policy.go) over bd's command-line grammar
// (grammar.go). The tracker fields BUILD may not change are one table
// (fields.go), with one row per field: the guard's refusals, the tamper
// diff and its reverts all follow from it. The policy is enforced in
// three layers here:
//
//   - Layer 1, the guard: Install puts a `bd` wrapper first on the agent's
//     PATH that runs ralphd's Main. It parses the argv exactly as bd would
//     (ParseArgs), applies the policy (Decide), audits the call (a
//     state.BDCall, into the session's audit file and the run log), and
//     either runs the real bd or refuses with a message the agent can act
//     on. Under Serve the real bd runs in ralphd, outside the sandbox, so
//     for BUILD it runs only from the work tree and with no hooks or other
//     code of the agent's (serve.go). Session.Calls reads the audit back.
//     This protocol (wrapper.go, audit.go, run.go) is the one way an
//     agent's bd calls reach ralphd.
//   - Layer 2, the agent's own permission system: DenyPrefixes compiles the
//     policy table into the refused command prefixes that each agent
//     backend turns into its own deny rules, and Hook is a PreToolUse hook
//     that finds every bd call in a Bash command with a real shell parser
//     (ExtractBDCalls) and blocks the tool call if any is refused.
//   - Layer 3, tamper detection (tamper.go): Diff compares snapshots of
//     the tracker taken before and after a BUILD window and Revert undoes
//     the forbidden changes with PLAN powers. It catches what the first
//     two layers cannot see, such as the real bd called by absolute path
//     from a script, or an edit of bd's data.
package guard

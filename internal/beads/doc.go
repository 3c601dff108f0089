// Package beads is ralphd's client for the beads issue tracker CLI, bd.
//
// It has two layers. The parsers (ParseIssues, ParseIssue, ParseStats and
// ParseErrorObject) are pure functions that turn the JSON bd prints into the
// typed values of issue.go; they accept every shape bd 1.0.5 prints, both
// bare and wrapped in the BD_JSON_ENVELOPE=1 envelope, and never panic.
// Client runs the user's real bd binary, one process per call, with a
// context, a per-call timeout and its own process group, and returns typed
// errors (NotInstalledError, NotInitializedError, BadJSONError,
// TimeoutError, ExitError) that say what to do.
//
// The exit code is the only signal of failure: with --json, bd prints its
// errors on stdout, on stderr or as plain text depending on the command.
package beads

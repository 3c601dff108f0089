// Package git is ralphd's one way to git. Every call goes through one
// runner (Command, Output, Runner) that keeps the repository's own code
// from running. On top of it sit the project's working tree as the loop
// sees it (Repo, Layout, Status), each worker's own worktree and branch
// (Manager, Tree), the refs ralphd keeps and puts back (Refs, RestoreRef,
// KeepIfNew), the scrub that removes what an agent planted where git opens
// a file (Scrubber), and the snapshots of the files ralphd holds
// (Snapshot, DirSnapshot).
package git

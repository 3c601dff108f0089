// Package git is ralphd's one way to git. Every call goes through one
// runner (Runner.OutputEnv; Output and OutputEnv for a single call) that
// keeps the repository's own code from running and bounds the call in
// time and memory. On top of it sit:
//
//   - run.go: the runner, and Env for a program that runs git itself;
//   - tree.go: the project's working tree as the loop sees it (Repo:
//     HEAD, the changed files, failure branches; Layout and CommonDir
//     for where its git data is);
//   - status.go: Repo.Status, an iteration's progress signals;
//   - workers.go: each worker's own worktree and branch (Manager, Tree);
//   - refs.go: the refs ralphd reads, keeps and puts back (RefAt, Refs,
//     Head, RestoreRef, KeepIfNew, SetHead);
//   - scrub.go: the scrub that removes what an agent planted where git
//     opens a file (Scrubber, ScrubTree);
//   - snapshot.go: the snapshots of the files ralphd holds (Snapshot of
//     the git directory, DirSnapshot of .ralph/).
package git

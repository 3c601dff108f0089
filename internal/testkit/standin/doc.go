// Package standin is a faithful stand-in for the beads issue tracker's
// `bd` command (version 1.0.5), covering the subset ralphd and coding
// agents use. Tests and `ralphd demo` run it where real bd cannot be
// installed; ./internal/testkit/fakebd wraps it as a standalone `bd` binary.
//
// The behaviour follows the contract recorded from real bd in
// testdata/contract (see its README.md): the same JSON keys, key order,
// types and nesting, the same ready rules and ordering, the same exit
// codes, and the same error texts on the same streams. Anything real bd
// has but the stand-in does not implement fails loudly with exit 1, as do
// unknown commands and flags (with cobra's exact messages), so drift
// between the stand-in and real bd shows up in tests.
//
// Implemented commands: init, create (new), update, close (done), reopen,
// defer, undefer, note, show (view), list, ready, blocked, status (stats),
// dep (--blocks), dep add, dep remove (rm), dep list, dep tree, label add,
// label remove, label list, label list-all, comments, comments add,
// comment, delete, version, where, statuses, types, info, context, export
// and help. Global flags: --json, --actor, -C/--directory, --db,
// -q/--quiet, --readonly, --sandbox, --dolt-auto-commit, -v/--verbose,
// --profile, --ignore-schema-skew, -V/--version. A "db" key in bd's
// configuration files (the project's .beads/config.yaml and
// config.local.yaml, the user's ~/.config/bd/config.yaml and
// ~/.beads/config.yaml) selects the database as --db does (config.go).
//
// Like real bd, every linked git worktree shares the main repository's
// tracker: discovery follows the worktree's .git file to git's common
// directory, so `bd where` in a worktree names the main repo's .beads.
// Server mode (`bd init --server --external`, see server.go) keeps the
// data in a directory standing for a shared Dolt sql-server, so clones
// share one tracker; its claims can lose races with Dolt's recorded
// "Error 1213" serialization failure, and BD_STANDIN_CONFLICTS=1 gives
// embedded mode the same losing side.
//
// Data lives under .beads/ in the repository, in a tree shaped like real
// bd's embedded Dolt store (embeddeddolt/<db>/.dolt/noms/{manifest,
// journal.idx,vvvv…}), with the issues themselves in a JSON file beside
// noms/. Every command holds an flock on .beads/embeddeddolt/.lock, so
// concurrent calls serialise. Read-only commands rewrite the manifest,
// journal index and journal tail with identical bytes (their mtimes change,
// their content does not) and `show` rewrites .beads/last-touched, as real
// bd does; only writes change the manifest's root hash and grow the
// journal.
package standin

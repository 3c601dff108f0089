package standin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// compareMode says how much of a recorded case the replay checks.
type compareMode int

const (
	// exact compares exit code, stdout and stderr; JSON structurally with
	// values (timestamps and UUIDs by form only), text literally after
	// mapping sandbox paths back to the recording's placeholders.
	exact compareMode = iota
	// shape compares exit code and, for JSON, keys, key order, types and
	// nesting; text with digits masked. Used where the recording's state
	// depended on steps no fixture records.
	shape
	// exitOnly compares the exit code.
	exitOnly
)

// step is one entry of the replay: a recorded case or an unrecorded
// setup command the recording session also ran.
type step struct {
	fixture string // fixture name; "" for a setup step
	cwd     string // setup steps only
	command string // setup steps only
	exit    int    // setup steps only
	at      string // clock ("15:04:05.000" on 2026-11-21) when the output does not pin it
	mode    compareMode
	why     string
	do      func(s *scratch) // a setup step done in Go (git worktrees, say)
}

func fx(name string) step       { return step{fixture: name} }
func fxAt(name, at string) step { return step{fixture: name, at: at} }
func fxMode(name string, m compareMode, why string) step {
	return step{fixture: name, mode: m, why: why}
}
func setupGo(why string, do func(s *scratch)) step { return step{why: why, do: do} }
func setup(cwd, at, command string, exit int) step {
	return step{cwd: cwd, at: at, command: command, exit: exit}
}

// replay lists the recorded cases in the order the recording ran them (see
// the contract README), with the unrecorded steps in between, so that
// each case sees the same issues, statuses and dependencies it saw.
var replay = []step{
	// Before init.
	fx("err-not-initialized-ready"),
	fx("err-not-initialized-list-plain"),
	fx("err-not-git-ready"),
	fxMode("init-default", exitOnly, "the stand-in's init writes no AGENTS.md/CLAUDE.md/hooks, configures no Dolt remote and makes no commit, so it prints only the final summary"),
	fx("init-quiet"),
	fx("ready-claim-none-json"),
	fx("ready-claim-none-plain"),
	// Empty reads and static commands.
	fx("ready-empty"),
	fx("ready-empty-plain"),
	fx("list-empty"),
	fx("blocked-empty"),
	fx("version"),
	fx("version-json"),
	fx("where"),
	fx("where-json"),
	fx("statuses"),
	fx("statuses-json"),
	fx("types"),
	fx("types-json"),
	fx("context-json"),
	// Creates and dependencies.
	fx("create-default-json"),
	fx("create-full-json"),
	fx("create-bug-p0-json"),
	fxAt("create-plain", "18:31:42.500"),
	fxAt("create-silent", "18:31:42.900"),
	fx("create-priority-P-form"),
	fx("create-epic-json"),
	fx("create-child-json"),
	fxAt("dep-add", "18:31:48.000"),
	fx("create-with-deps-json"),
	fx("create-deferred-json"),
	fxAt("dep-add-json", "18:31:49.000"),
	fxAt("dep-blocks-shorthand", "18:31:49.300"),
	fxAt("dep-remove", "18:31:49.600"),
	fxAt("update-status-in-progress", "18:31:50.000"),
	fxAt("defer", "18:31:51.000"),
	fx("defer-json"),
	// The mixed ready queue.
	fx("ready-mixed"),
	fx("ready-mixed-plain"),
	fx("ready-mixed-sort-oldest"),
	fx("ready-mixed-sort-hybrid"),
	fx("ready-limit-2"),
	fx("ready-include-deferred"),
	fx("ready-explain-json"),
	fx("list-ready-json"),
	// Show, list, blocked, stats.
	fx("show-json"),
	fx("show-plain"),
	fx("show-multi-json"),
	fx("show-blocked-json"),
	fx("show-epic-json"),
	fx("list-json"),
	fx("list-plain"),
	fx("list-all-json"),
	fx("list-status-in-progress-json"),
	fx("blocked-json"),
	fx("blocked-plain"),
	fx("stats-json"),
	fx("status-json-no-activity"),
	// Updates and claims.
	fx("update-notes-1"),
	fx("update-notes-2"),
	fx("update-append-notes"),
	fxAt("note-cmd", "18:32:09.500"),
	fx("show-after-notes-json"),
	fxAt("update-priority", "18:32:10.000"),
	fx("update-priority-json"),
	fx("update-acceptance-json"),
	fx("update-type-json"),
	fx("update-description-title-json"),
	fx("update-labels-json"),
	fx("update-claim-json"),
	fx("update-claim-again-same-actor-json"),
	fx("update-claim-other-actor-json"),
	fx("update-claim-plain-other-actor"),
	fx("update-assignee-json"),
	fxAt("update-multi-ids", "18:32:12.000"),
	fx("ready-claim-json"),
	fx("list-status-in-progress-json-2"),
	fx("update-no-change-json"),
	// Dependency views, close and reopen.
	fx("dep-tree"),
	fx("dep-tree-json"),
	fx("dep-tree-epic"),
	fx("dep-list-json"),
	fx("dep-list-dependents-json"),
	fx("close-json"),
	fx("ready-after-close-json"),
	fx("show-closed-json"),
	fx("close-already-closed-json"),
	fx("reopen-json"),
	fx("show-reopened-json"),
	fx("close-suggest-next-json"),
	fxAt("close-plain", "18:32:21.600"),
	fxAt("reopen-plain", "18:32:21.800"),
	fx("close-multi-json"),
	fx("reopen-not-closed"),
	fx("blocked-after-close-json"),
	fx("close-blocked-issue-json"),
	// Comments, labels, delete.
	fxAt("comments-add", "18:32:26.200"),
	fx("comments-add-json"),
	fx("comment-cmd-json"),
	fx("comments-list-json"),
	fx("comments-list-plain"),
	fx("show-with-comments-json"),
	fxAt("label-add-json", "18:32:28.000"),
	fxAt("label-add", "18:32:28.500"),
	fxAt("label-remove-json", "18:32:29.000"),
	fx("label-list-json"),
	fx("label-list-all-json"),
	fx("ready-label-filter-json"),
	fxAt("delete-preview", "18:32:30.000"),
	fx("delete-preview-json"),
	fxAt("delete-force", "18:32:30.500"),
	fx("show-deleted-json"),
	fx("delete-has-dependents"),
	fxAt("delete-force-json", "18:32:31.000"),
	// Errors.
	fx("err-bad-flag"),
	fx("err-bad-flag-json"),
	fx("err-bad-sort"),
	fx("err-bad-priority-create"),
	fx("err-bad-type-create"),
	fx("err-create-no-title-json"),
	fx("err-unknown-command"),
	fx("err-unknown-id-show-json"),
	fx("err-unknown-id-show-plain"),
	fx("err-unknown-id-update-json"),
	fx("err-unknown-id-close-json"),
	fx("err-unknown-id-reopen"),
	fx("err-unknown-id-dep-add"),
	fx("err-unknown-id-comments-add"),
	fx("err-dep-cycle"),
	fx("err-bad-priority-update"),
	fx("err-bad-status-update"),
	fx("err-bad-type-update"),
	fx("err-readonly-write"),
	fx("envelope-show-unknown-json"),
	fx("create-type-story"),
	fx("update-status-blocked-json"),
	fx("update-status-open-json"),
	fx("update-status-closed-json"),
	// Global flags, discovery.
	fx("ready-plain-limit-0"),
	fx("from-subdir"),
	fx("global-sandbox-flag"),
	fx("dash-C-from-elsewhere"),
	fx("db-flag-from-elsewhere"),
	fx("beads-dir-env-from-elsewhere"),
	fx("global-no-daemon-flag"),
	fx("info-json"),
	fx("global-actor-flag-create"),
	fx("env-beads-actor-create"),
	// The concurrency experiments (concurrency-claim-race.txt), unrecorded.
	setup("<REPO>", "18:33:01.100", `bd create "Concurrent 1" --json`, 0),
	setup("<REPO>", "18:33:01.300", `bd create "Concurrent 2" --json`, 0),
	setup("<REPO>", "18:33:01.500", `bd create "Concurrent 3" --json`, 0),
	setup("<REPO>", "18:33:02.100", `bd create "Concurrent 4" --json`, 0),
	setup("<REPO>", "18:33:02.300", `bd create "Concurrent 5" --json`, 0),
	setup("<REPO>", "18:33:02.500", `bd create "Concurrent 6" --json`, 0),
	setup("<REPO>", "18:33:02.600", `bd ready --json`, 0),
	setup("<REPO>", "18:33:07.100", `bd create "Claim race target" -p 0 --json`, 0),
	setup("<REPO>", "18:33:07.300", `bd --actor agent-3 update rt-f6l --claim --json`, 0),
	setup("<REPO>", "18:33:07.400", `bd --actor agent-1 update rt-f6l --claim --json`, 1),
	setup("<REPO>", "18:33:10.100", `bd --actor ragent-1 ready --claim --json`, 0),
	setup("<REPO>", "18:33:10.200", `bd --actor ragent-2 ready --claim --json`, 0),
	setup("<REPO>", "18:33:10.300", `bd --actor ragent-3 ready --claim --json`, 0),
	setup("<REPO>", "18:33:10.400", `bd --actor ragent-4 ready --claim --json`, 0),
	// The later session.
	fx("create-all-fields-json"),
	fx("show-all-fields-json"),
	fx("show-all-fields-long-json"),
	fx("create-with-id-and-dep-file-json"),
	fxAt("dep-add-related-json", "18:36:47.000"),
	fxAt("dep-add-discovered-from-json", "18:36:48.000"),
	fx("envelope-ready-json"),
	fxMode("export-jsonl", shape, "the recording's rt-chn has dependent_count 2 from a dependency added by a step no fixture records"),
}

// notReplayed lists every fixture the replay does not run, with why.
var notReplayed = map[string]string{
	"concurrency-claim-race": "hand-written summary of parallel runs, not one command; TestConcurrentCommands and TestClaimRace check it",
}

// setupIDs gives unrecorded setup issues the ids the recording mentions.
var setupIDs = map[string]string{
	"Claim race target": "rt-f6l",
	"Concurrent 4":      "rt-38t",
	"Concurrent 5":      "rt-5nd",
	"Concurrent 6":      "rt-1fa",
	"Concurrent 1":      "rt-c01",
	"Concurrent 2":      "rt-c02",
	"Concurrent 3":      "rt-c03",
}

var titleArg = regexp.MustCompile(`^bd (?:--actor \S+ )?create "([^"]*)"`)

// recordedIDs maps each created title to the id the recording gave it, by
// reading the create fixtures' commands and outputs.
func recordedIDs(t *testing.T, fixtures map[string]fixture) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for k, v := range setupIDs {
		ids[k] = v
	}
	for _, name := range sortedKeys(fixtures) {
		f := fixtures[name]
		cmd := strings.TrimPrefix(f.Command, "BEADS_ACTOR=env-agent ")
		m := titleArg.FindStringSubmatch(cmd)
		if m == nil || f.Exit != 0 {
			continue
		}
		var id string
		var created struct{ ID string }
		switch {
		case json.Unmarshal([]byte(f.Stdout), &created) == nil && created.ID != "":
			id = created.ID
		case strings.HasPrefix(f.Stdout, "✓ Created issue: "):
			id = strings.Fields(strings.TrimPrefix(f.Stdout, "✓ Created issue: "))[0]
		default:
			id = strings.TrimSpace(f.Stdout)
		}
		ids[m[1]] = id
	}
	return ids
}

// TestContract replays the recording in one sandbox. Run it whole: each
// case depends on the state the cases before it left.
func TestContract(t *testing.T) {
	fixtures := loadFixtures(t)
	s := newScratch(t)
	ids := recordedIDs(t, fixtures)
	s.runner.NewID = func(title string) string { return ids[title] }
	s.clock = time.Date(2026, 11, 21, 18, 31, 30, 0, time.UTC)
	day := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

	// Help fixtures first: they need no state.
	for _, name := range sortedKeys(fixtures) {
		if !strings.HasPrefix(name, "help/") {
			continue
		}
		f := fixtures[name]
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			got := s.run("<REPO>", f.Command)
			is.Equal(got.code, 0) // --help exits 0
			is.NoErr(compareOutput("stdout", f.Stdout, got.stdout, true))
			is.NoErr(compareOutput("stderr", f.Stderr, got.stderr, true))
		})
	}

	replaySteps(t, s, fixtures, day, replay)
}

// replaySteps runs steps in order in the sandbox s.
func replaySteps(t *testing.T, s *scratch, fixtures map[string]fixture, day time.Time, steps []step) {
	t.Helper()
	for _, st := range steps {
		name := st.fixture
		if st.do != nil {
			st.do(s)
			continue
		}
		if name == "" {
			name = "setup: " + st.command
		}
		if st.at != "" {
			d, err := time.Parse("15:04:05.000", st.at)
			if err != nil {
				t.Fatalf("step %s: bad time %q", name, st.at)
			}
			s.clock = day.Add(time.Duration(d.Hour())*time.Hour + time.Duration(d.Minute())*time.Minute +
				time.Duration(d.Second())*time.Second + time.Duration(d.Nanosecond()))
		}
		if st.fixture == "" {
			got := s.run(st.cwd, st.command)
			if got.code != st.exit {
				t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", name, got.code, st.exit, got.stdout, got.stderr)
			}
			continue
		}
		f, ok := fixtures[st.fixture]
		if !ok {
			t.Fatalf("replay names fixture %q, which testdata/contract lacks", st.fixture)
		}
		if ts, ok := latestTimestamp(f.Stdout); ok && st.at == "" && ts.After(s.clock) {
			s.clock = ts
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			got := s.run(f.CWD, f.Command)
			is.Equal(got.code, f.Exit) // exit code as recorded
			if st.mode == exitOnly {
				return
			}
			values := st.mode == exact
			is.NoErr(compareOutput("stdout", f.Stdout, got.stdout, values))
			is.NoErr(compareOutput("stderr", f.Stderr, got.stderr, values))
		})
	}
}

// TestFixtureCoverage makes sure every fixture is either replayed or
// listed with a reason, and that the reasons are for real fixtures.
func TestFixtureCoverage(t *testing.T) {
	is := is.New(t)
	fixtures := loadFixtures(t)
	covered := map[string]bool{}
	for _, st := range append(append(append([]step{}, replay...), replayWorktrees...), replayServer...) {
		if st.fixture != "" {
			is.True(!covered[st.fixture]) // each fixture replays once
			covered[st.fixture] = true
		}
		if st.mode != exact || st.do != nil {
			is.True(st.why != "") // every weaker comparison and Go step says why
		}
	}
	for name := range notReplayedWorktrees {
		is.True(notReplayed[name] == "") // listed once
	}
	for name := range notReplayedServer {
		is.True(notReplayed[name] == "" && notReplayedWorktrees[name] == "") // listed once
	}
	all := map[string]string{}
	for k, v := range notReplayed {
		all[k] = v
	}
	for k, v := range notReplayedWorktrees {
		all[k] = v
	}
	for k, v := range notReplayedServer {
		all[k] = v
	}
	for name := range all {
		_, ok := fixtures[name]
		is.True(ok) // notReplayed names a real fixture
		is.True(!covered[name])
	}
	var missing []string
	for _, name := range sortedKeys(fixtures) {
		if strings.HasPrefix(name, "help/") {
			continue // TestContract replays every help fixture
		}
		if !covered[name] && all[name] == "" {
			missing = append(missing, name)
		}
	}
	is.Equal(fmt.Sprint(missing), "[]") // fixtures neither replayed nor listed in notReplayed
}
